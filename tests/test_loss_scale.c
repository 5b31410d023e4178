/* test_loss_scale.c — the dynamic loss scaler's rules (core/train/
 * loss_scale.c): halve on overflow, double after growth_interval finite
 * steps in a row, a static scale never moves, every overflow skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "train/loss_scale.h"

static dt_loss_scale_t dynamic(double scale, uint64_t interval)
{
    dt_loss_scale_t ls = {.enabled = true, .dynamic = true, .scale = scale,
                          .interval = interval};
    return ls;
}

static void test_growth_and_backoff(void **state)
{
    (void)state;
    dt_loss_scale_t ls = dynamic(65536.0, 3);
    assert_true(dt_loss_scale_update(&ls, true));
    assert_true(dt_loss_scale_update(&ls, true));
    assert_true(ls.scale == 65536.0);
    assert_true(dt_loss_scale_update(&ls, true)); /* third: grows */
    assert_true(ls.scale == 131072.0);
    assert_true(dt_loss_scale_update(&ls, true));
    assert_true(dt_loss_scale_update(&ls, true));
    assert_false(dt_loss_scale_update(&ls, false)); /* skipped, halved */
    assert_true(ls.scale == 65536.0);
    assert_int_equal(ls.skipped, 1);
    /* the run of good steps starts again after an overflow */
    assert_true(dt_loss_scale_update(&ls, true));
    assert_true(dt_loss_scale_update(&ls, true));
    assert_true(ls.scale == 65536.0);
    assert_true(dt_loss_scale_update(&ls, true));
    assert_true(ls.scale == 131072.0);
}

static void test_floor(void **state)
{
    (void)state;
    dt_loss_scale_t ls = dynamic(0x1p-23, 1000);
    assert_false(dt_loss_scale_update(&ls, false));
    assert_true(ls.scale == DT_LOSS_SCALE_MIN);
    assert_false(dt_loss_scale_update(&ls, false)); /* stays at the floor */
    assert_true(ls.scale == DT_LOSS_SCALE_MIN);
    assert_int_equal(ls.skipped, 2);
    assert_int_equal(ls.skipped_epoch, 2);
}

static void test_static_scale(void **state)
{
    (void)state;
    dt_loss_scale_t ls = {.enabled = true, .scale = 1024.0};
    for (int i = 0; i < 5000; i++)
        assert_true(dt_loss_scale_update(&ls, true));
    assert_false(dt_loss_scale_update(&ls, false));
    assert_true(ls.scale == 1024.0);
    assert_int_equal(ls.skipped, 1);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(dt_precision_name(0), "fp32");
    assert_string_equal(dt_precision_name(1), "bf16");
    assert_string_equal(dt_precision_name(2), "fp16");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_growth_and_backoff),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_static_scale),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
