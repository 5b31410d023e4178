/* test_lr_schedule.c — learning rate scaling (linear, sqrt, none, with
 * caps on the lr and on the global batch), warmup (in epochs, in steps,
 * auto) and the constant, step and cosine schedules, from configuration
 * as users write it: exact values at chosen points; a warmup that does
 * nothing or outlasts the training named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
                        "warmup_epochs", "0", NULL};
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
                            {"lr_scaling", "cubic", "lr_scaling 'cubic' is "
                                                    "not known: use linear, "
                                                    "sqrt or none"},
                            {"lr_scaling_max_lr", "-1", "must be 0 or more"},
                            {"lr_scaling_max_lr", "0.001", "is below lr 0.01"},
                            {"lr_scaling_max_batch", "-64",
                             "lr_scaling_max_batch must be 0 or more"},
                            {"warmup_epochs", "soon", "warmup_epochs = 'soon'"},
                            {"warmup_epochs", "-1", "warmup_epochs = '-1'"},
                            {"warmup_steps", "-5", "warmup_steps must be 0 or "
                                                   "more"},
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

/* lr 0.05, batch 64, 15 epochs, cosine: the MLP example's numbers. */
static dt_config_t *example(const char *const *extra)
{
    const char *base[] = {"lr", "0.05", "batch_size", "64", "epochs", "15",
                          "schedule", "cosine", NULL};
    dt_config_t *cfg = cfg_with(base);
    for (; extra && *extra; extra += 2)
        assert_int_equal(dt_config_set(cfg, "train", extra[0], extra[1],
                                       DT_SRC_CLI, "--set"), DT_OK);
    return cfg;
}

static void test_linear_auto_warmup(void **state)
{
    (void)state;
    const char *kv[] = {"lr_scaling", "linear", NULL};
    dt_config_t *cfg = example(kv);
    dt_lr_schedule_t s;
    assert_int_equal(dt_lr_schedule_from_config(cfg, 8, &s), DT_OK);
    dt_lr_schedule_set_steps(&s, 118);
    NEAR(s.factor, 8.0);
    NEAR(s.target, 0.4);
    NEAR(s.warmup_epochs, 3.0); /* log2(8) */
    NEAR(dt_lr_at(&s, 0.0), 0.05);         /* target / 8 */
    NEAR(dt_lr_at(&s, 1.5), 0.225);        /* halfway */
    NEAR(dt_lr_at(&s, 3.0), 0.4);
    NEAR(dt_lr_at(&s, 9.0), 0.2);          /* cosine halfway: 3 + 12 / 2 */
    char d[512];
    dt_lr_schedule_describe(&s, d, sizeof d);
    assert_non_null(strstr(d, "global batch 512 (8 x 64)"));
    assert_non_null(strstr(d, "lr 0.05 x 8 workers (linear) = 0.4"));
    assert_non_null(strstr(d, "warmup 3 epochs (354 steps; auto: log2 of "
                              "x8) from 0.05"));
    assert_non_null(strstr(d, "then cosine to 0 at epoch 15"));
    dt_config_free(cfg);

    /* One worker, or none: nothing to warm up. */
    cfg = example(kv);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 1, &s), DT_OK);
    NEAR(s.warmup_epochs, 0.0);
    NEAR(dt_lr_at(&s, 0.0), 0.05);
    dt_config_free(cfg);
    const char *none[] = {"lr_scaling", "none", NULL};
    cfg = example(none);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 8, &s), DT_OK);
    NEAR(s.warmup_epochs, 0.0);
    NEAR(dt_lr_at(&s, 0.0), 0.05);
    dt_config_free(cfg);

    /* auto is at most a quarter of the epochs: 16 workers, 4 epochs. */
    const char *short_run[] = {"lr_scaling", "linear", "epochs", "4", NULL};
    cfg = example(short_run);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 16, &s), DT_OK);
    NEAR(s.warmup_epochs, 1.0);
    NEAR(dt_lr_at(&s, 0.5), 0.05 + (0.8 - 0.05) * 0.5);
    dt_lr_schedule_describe(&s, d, sizeof d);
    assert_non_null(strstr(d, "auto: log2 of x16, at most epochs / 4"));
    dt_config_free(cfg);
}

static void test_sqrt(void **state)
{
    (void)state;
    const char *kv[] = {"lr_scaling", "sqrt", NULL};
    dt_config_t *cfg = example(kv);
    dt_lr_schedule_t s;
    assert_int_equal(dt_lr_schedule_from_config(cfg, 16, &s), DT_OK);
    NEAR(s.factor, 4.0);
    NEAR(s.target, 0.2);
    NEAR(s.warmup_epochs, 2.0);            /* log2(4) */
    NEAR(dt_lr_at(&s, 0.0), 0.2 / 16);     /* target / workers */
    NEAR(dt_lr_at(&s, 1.0), (0.2 / 16 + 0.2) / 2);
    NEAR(dt_lr_at(&s, 2.0), 0.2);
    char d[512];
    dt_lr_schedule_describe(&s, d, sizeof d);
    assert_non_null(strstr(d, "lr 0.05 x sqrt(16 workers) (sqrt) = 0.2"));
    dt_config_free(cfg);
    cfg = example(kv);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 2, &s), DT_OK);
    NEAR(s.target, 0.05 * sqrt(2.0));
    NEAR(s.warmup_epochs, 0.5);
    dt_config_free(cfg);
}

static void test_caps(void **state)
{
    (void)state;
    dt_lr_schedule_t s;
    char d[512];
    /* Global batch cap: 16 x 64 = 1024, the rule counts 256 / 64 = 4. */
    const char *batch[] = {"lr_scaling", "linear", "lr_scaling_max_batch",
                           "256", NULL};
    dt_config_t *cfg = example(batch);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 16, &s), DT_OK);
    assert_int_equal(s.capped, DT_LR_CAP_BATCH);
    NEAR(s.workers, 4.0);
    NEAR(s.target, 0.2);
    NEAR(s.warmup_epochs, 2.0);
    NEAR(dt_lr_at(&s, 0.0), 0.2 / 16);
    NEAR(dt_lr_at(&s, 2.0), 0.2);
    dt_lr_schedule_describe(&s, d, sizeof d);
    assert_non_null(strstr(d, "lr 0.05 x 4 (linear) = 0.2 (16 workers "
                              "counted as 4: lr_scaling_max_batch 256 / "
                              "batch_size 64)"));
    dt_config_free(cfg);
    /* Below the cap nothing changes: 2 x 64 = 128 <= 256. */
    cfg = example(batch);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 2, &s), DT_OK);
    assert_int_equal(s.capped, DT_LR_CAP_NONE);
    NEAR(s.target, 0.1);
    NEAR(s.warmup_epochs, 1.0);
    dt_config_free(cfg);
    /* A cap that is not a multiple of the batch: 320 / 64 = 5 workers,
     * sqrt. */
    const char *sq[] = {"lr_scaling", "sqrt", "lr_scaling_max_batch", "320",
                        NULL};
    cfg = example(sq);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 8, &s), DT_OK);
    NEAR(s.workers, 5.0);
    NEAR(s.target, 0.05 * sqrt(5.0));
    dt_config_free(cfg);
    /* lr cap: 0.05 x 16 = 0.8, capped at 0.3 (factor 6). */
    const char *lr[] = {"lr_scaling", "linear", "lr_scaling_max_lr", "0.3",
                        NULL};
    cfg = example(lr);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 16, &s), DT_OK);
    assert_int_equal(s.capped, DT_LR_CAP_LR);
    NEAR(s.target, 0.3);
    NEAR(s.factor, 6.0);
    NEAR(s.warmup_epochs, log2(6.0));
    NEAR(dt_lr_at(&s, 0.0), 0.3 / 16);
    NEAR(dt_lr_at(&s, 20.0), 0.0);
    dt_lr_schedule_describe(&s, d, sizeof d);
    assert_non_null(strstr(d, "(linear) = 0.8, capped at lr_scaling_max_lr "
                              "= 0.3"));
    dt_config_free(cfg);
    /* Both caps: the lower one wins. */
    const char *both[] = {"lr_scaling", "linear", "lr_scaling_max_lr", "0.3",
                          "lr_scaling_max_batch", "256", NULL};
    cfg = example(both);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 16, &s), DT_OK);
    NEAR(s.target, 0.2);
    dt_config_free(cfg);
}

static void test_warmup_steps_and_fractions(void **state)
{
    (void)state;
    dt_lr_schedule_t s;
    /* 100 warmup steps with 50 steps per epoch: 2 epochs. */
    const char *steps[] = {"lr_scaling", "linear", "warmup_steps", "100",
                           "schedule", "constant", NULL};
    dt_config_t *cfg = example(steps);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 4, &s), DT_OK);
    dt_lr_schedule_set_steps(&s, 50);
    NEAR(s.warmup_epochs, 2.0);
    NEAR(dt_lr_at(&s, 0.0 / 50), 0.05);
    NEAR(dt_lr_at(&s, 25.0 / 50), 0.05 + 0.15 * 0.25);
    NEAR(dt_lr_at(&s, 75.0 / 50), 0.05 + 0.15 * 0.75);
    NEAR(dt_lr_at(&s, 100.0 / 50), 0.2);
    char d[512];
    dt_lr_schedule_describe(&s, d, sizeof d);
    assert_non_null(strstr(d, "warmup 100 steps (2 epochs) from 0.05"));
    dt_config_free(cfg);
    /* A fractional warmup_epochs. */
    const char *half[] = {"lr_scaling", "linear", "warmup_epochs", "0.5",
                          "schedule", "constant", NULL};
    cfg = example(half);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 2, &s), DT_OK);
    NEAR(dt_lr_at(&s, 0.25), 0.075);
    NEAR(dt_lr_at(&s, 0.5), 0.1);
    /* on_divergence = halve_lr scales everything. */
    s.scale = 0.5;
    NEAR(dt_lr_at(&s, 0.25), 0.0375);
    NEAR(dt_lr_at(&s, 3.0), 0.05);
    dt_config_free(cfg);
}

/* A warmup asked for that does nothing (one worker) or outlasts the
 * epochs is named; auto, 0 and a warmup that ends in time are not. */
static void test_warmup_notes(void **state)
{
    (void)state;
    dt_lr_schedule_t s;
    char n[512];
    const char *one[] = {"warmup_steps", "50", NULL};
    dt_config_t *cfg = example(one);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 1, &s), DT_OK);
    assert_string_equal(dt_lr_schedule_warmup_note(&s, n, sizeof n),
                        "warmup_steps");
    assert_non_null(strstr(n, "[train] warmup_steps = 50 does nothing here"));
    assert_non_null(strstr(n, "1 worker at lr 0.05 starts where it ends"));
    dt_config_free(cfg);
    const char *quiet[][3] = {{"warmup_epochs", "auto", NULL},
                              {"warmup_epochs", "0", NULL},
                              {"warmup_epochs", "15", NULL}};
    for (size_t i = 0; i < 3; i++) {
        cfg = example(quiet[i]);
        assert_int_equal(dt_lr_schedule_from_config(cfg, i < 2 ? 1 : 2, &s),
                         DT_OK);
        assert_null(dt_lr_schedule_warmup_note(&s, n, sizeof n));
        dt_config_free(cfg);
    }
    /* 2 workers, linear: 0.05 -> 0.1 over 20 epochs of 15: at 0.0875 */
    const char *lng[] = {"lr_scaling", "linear", "warmup_epochs", "20", NULL};
    cfg = example(lng);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 2, &s), DT_OK);
    assert_string_equal(dt_lr_schedule_warmup_note(&s, n, sizeof n),
                        "warmup_epochs");
    assert_non_null(strstr(n, "warmup_epochs = 20 is longer than the "
                              "training (15 epochs): the lr climbs from "
                              "0.05 to 0.0875 and never reaches 0.1, and the "
                              "cosine schedule never starts"));
    dt_config_free(cfg);
    /* in steps: judged once the steps per epoch are known */
    const char *st[] = {"lr_scaling", "linear", "warmup_steps", "800", NULL};
    cfg = example(st);
    assert_int_equal(dt_lr_schedule_from_config(cfg, 2, &s), DT_OK);
    assert_null(dt_lr_schedule_warmup_note(&s, n, sizeof n));
    dt_lr_schedule_set_steps(&s, 50); /* 16 epochs */
    assert_string_equal(dt_lr_schedule_warmup_note(&s, n, sizeof n),
                        "warmup_steps");
    assert_non_null(strstr(n, "warmup_steps = 800 (16 epochs) is longer"));
    dt_lr_schedule_set_steps(&s, 60); /* 13.3 epochs: in time */
    assert_null(dt_lr_schedule_warmup_note(&s, n, sizeof n));
    dt_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant_and_scaling),
        cmocka_unit_test(test_warmup_then_step),
        cmocka_unit_test(test_cosine),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_linear_auto_warmup),
        cmocka_unit_test(test_sqrt),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_warmup_steps_and_fractions),
        cmocka_unit_test(test_warmup_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
