/* test_lr_schedule.c — learning rate scaling, warmup and the constant,
 * step and cosine schedules, from configuration as users write it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "train/lr_schedule.h"
#include "stderr_capture.h"

static dt_config_t *cfg_with(const char *const *kv)
{
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    for (; *kv; kv += 2)
        assert_int_equal(dt_config_set(cfg, "train", kv[0], kv[1], DT_SRC_CLI,
                                       "--set"), DT_OK);
    return cfg;
}

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-12)

static void test_constant_and_scaling(void **state)
{
    (void)state;
    const char *kv[] = {"lr", "0.1", "lr_scaling", "linear", "epochs", "5",
                        NULL};
    dt_config_t *cfg = cfg_with(kv);
    dt_lr_schedule_t s;
    assert_int_equal(dt_lr_schedule_from_config(cfg, 4, &s), DT_OK);
    NEAR(dt_lr_at(&s, 0.0), 0.4);
    NEAR(dt_lr_at(&s, 4.9), 0.4);
    dt_config_free(cfg);
    const char *none[] = {"lr", "0.1", NULL};
    cfg = cfg_with(none);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 4, &s), DT_OK);
    NEAR(dt_lr_at(&s, 2.0), 0.1);
    dt_config_free(cfg);
}

static void test_warmup_then_step(void **state)
{
    (void)state;
    const char *kv[] = {"lr", "0.1", "lr_scaling", "linear",
                        "warmup_epochs", "2", "schedule", "step",
                        "lr_step_epochs", "3", "lr_gamma", "0.5",
                        "epochs", "10", NULL};
    dt_config_t *cfg = cfg_with(kv);
    dt_lr_schedule_t s;
    assert_int_equal(dt_lr_schedule_from_config(cfg, 2, &s), DT_OK);
    /* warmup from 0.2/2 to 0.2, linear in the epoch position */
    NEAR(dt_lr_at(&s, 0.0), 0.1);
    NEAR(dt_lr_at(&s, 1.0), 0.15);
    NEAR(dt_lr_at(&s, 2.0), 0.2);
    NEAR(dt_lr_at(&s, 2.9), 0.2);
    NEAR(dt_lr_at(&s, 3.0), 0.1);
    NEAR(dt_lr_at(&s, 6.5), 0.05);
    dt_config_free(cfg);
}

static void test_cosine(void **state)
{
    (void)state;
    const char *kv[] = {"lr", "1", "schedule", "cosine", "lr_min", "0.1",
                        "warmup_epochs", "1", "epochs", "11", NULL};
    dt_config_t *cfg = cfg_with(kv);
    dt_lr_schedule_t s;
    assert_int_equal(dt_lr_schedule_from_config(cfg, 1, &s), DT_OK);
    NEAR(dt_lr_at(&s, 1.0), 1.0);
    NEAR(dt_lr_at(&s, 6.0), 0.55); /* halfway: the mean of 1 and 0.1 */
    NEAR(dt_lr_at(&s, 11.0), 0.1);
    NEAR(dt_lr_at(&s, 12.0), 0.1);
    assert_true(dt_lr_at(&s, 3.0) > dt_lr_at(&s, 4.0));
    dt_config_free(cfg);
}

static void test_bad_values(void **state)
{
    (void)state;
    const char *bad[][3] = {{"lr", "fast", "is not a number"},
                            {"lr", "0", "must be greater than 0"},
                            {"lr_scaling", "sqrt", "lr_scaling 'sqrt' is not "
                                                   "known"},
                            {"schedule", "linear", "schedule 'linear' is not "
                                                   "known"},
                            {"lr_gamma", "-1", "must be greater than 0"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *kv[] = {bad[i][0], bad[i][1], NULL};
        dt_config_t *cfg = cfg_with(kv);
        dt_lr_schedule_t s;
        capture_t c;
        capture_begin(&c);
        assert_int_equal(dt_lr_schedule_from_config(cfg, 1, &s),
                         DT_ERR_CONFIG);
        char *log = capture_end(&c);
        assert_non_null(strstr(log, bad[i][2]));
        assert_non_null(strstr(log, "--set")); /* names the origin */
        free(log);
        dt_config_free(cfg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant_and_scaling),
        cmocka_unit_test(test_warmup_then_step),
        cmocka_unit_test(test_cosine),
        cmocka_unit_test(test_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
