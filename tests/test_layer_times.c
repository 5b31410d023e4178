/* test_layer_times.c — [train] layer_times (core/train/layer_times.c) on
 * the CPU: the timed window (steps 3-7 of this process, from wherever it
 * started; a rollback does not time again), the file's events in order
 * with their bytes and the tail, the fastest of the steps kept, a step
 * without the optimizer (skipped) leaving no optimizer line, a step with
 * another event count stopping the timing, an unwritable path refused at
 * creation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <dt/nn.h>
#include "train/layer_times.h"

static int calls; /* the real callback's */
static dt_status_t real_ready(void *arg, size_t offset, size_t len)
{
    (void)arg;
    (void)offset;
    (void)len;
    calls++;
    return DT_OK;
}

static void spin(double s) /* busy: the clock must see it */
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec) < s);
}

/* One step: forward, events of `lens` floats (last layer first, each
 * after `bwd` seconds), the optimizer unless skipped. */
static void step(dt_layer_timer_t *lt, const size_t *lens, int n, double bwd,
                 int optimizer)
{
    assert_int_equal(dt_layer_timer_begin(lt, real_ready, NULL), DT_OK);
    spin(0.002);
    assert_int_equal(dt_layer_timer_mark(lt, DT_LT_FORWARD_DONE), DT_OK);
    for (int i = 0; i < n; i++) {
        spin(bwd);
        assert_int_equal(dt_layer_timer_ready(lt, 0, lens[i]), DT_OK);
    }
    assert_int_equal(dt_layer_timer_mark(lt, DT_LT_BACKWARD_DONE), DT_OK);
    if (optimizer) {
        assert_int_equal(dt_layer_timer_mark(lt, DT_LT_OPT_BEGIN), DT_OK);
        spin(0.001);
        assert_int_equal(dt_layer_timer_mark(lt, DT_LT_OPT_DONE), DT_OK);
    }
    assert_int_equal(dt_layer_timer_step_done(lt), DT_OK);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A timer on the cpu writing to a fresh temporary path (an existing
 * file there: layer_times removes it). */
static dt_layer_timer_t *open_timer(char *path, dt_device_t **dev)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(dt_device_open("cpu", 0, 1, dev), DT_OK);
    dt_layer_timer_t *lt = NULL;
    assert_int_equal(dt_layer_timer_new(path, *dev, 64, &lt), DT_OK);
    assert_non_null(lt);
    return lt;
}

static void window_and_file(void **state)
{
    (void)state;
    char path[] = "/tmp/dt-lt-XXXXXX";
    dt_device_t *dev = NULL;
    dt_layer_timer_t *lt = open_timer(path, &dev);
    assert_null(slurp(path)); /* an earlier run's file is gone */
    const size_t lens[] = {10, 200, 3000};
    /* a resumed run: its first step is 500; 500, 501 untimed */
    uint64_t s = 500;
    for (; s < 502; s++)
        assert_false(dt_layer_timer_on(lt, s));
    calls = 0;
    for (; s < 507; s++) { /* 502-506 timed; the first without optimizer */
        assert_true(dt_layer_timer_on(lt, s));
        step(lt, lens, 3, 0.001, s != 502);
    }
    assert_int_equal(calls, 15); /* the real callback every time */
    assert_false(dt_layer_timer_on(lt, 507));
    assert_false(dt_layer_timer_on(lt, 503)); /* rolled back: not again */
    char *txt = slurp(path);
    assert_non_null(txt);
    double fwd = 0, opt = 0, t[4];
    unsigned long long b[4];
    assert_non_null(strstr(txt, "\nbatch 64\nforward "));
    char *at = strstr(txt, "forward ");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "forward %lf\noptimizer %lf\n%lf %llu\n%lf "
                                "%llu\n%lf %llu\n%lf %llu", &fwd, &opt, &t[0],
                            &b[0], &t[1], &b[1], &t[2], &b[2], &t[3], &b[3]),
                     10);
    assert_true(fwd >= 0.002 && fwd < 0.5);
    assert_true(opt >= 0.001 && opt < 0.5);
    assert_true(b[0] == 40 && b[1] == 800 && b[2] == 12000 && b[3] == 0);
    for (int i = 0; i < 3; i++)
        assert_true(t[i] >= 0.001 && t[i] < 0.5);
    assert_true(t[3] >= 0 && t[3] < 0.001); /* the tail: nothing ran */
    assert_non_null(strstr(txt, "fastest of 5 timed steps"));
    dt_layer_timer_free(lt);
    unlink(path);
    dt_device_close(dev);
}

static void skipped_and_broken(void **state)
{
    (void)state;
    char path[] = "/tmp/dt-lt-XXXXXX";
    dt_device_t *dev = NULL;
    dt_layer_timer_t *lt = open_timer(path, &dev);
    const size_t lens[] = {10, 200};
    for (uint64_t s = 0; s < 2; s++)
        assert_false(dt_layer_timer_on(lt, s));
    assert_true(dt_layer_timer_on(lt, 2));
    step(lt, lens, 2, 0.0005, 0); /* skipped: no optimizer line */
    char *txt = slurp(path);
    assert_non_null(txt);
    assert_null(strstr(txt, "\noptimizer "));
    assert_non_null(strstr(txt, "# optimizer not timed"));
    assert_true(dt_layer_timer_on(lt, 3));
    step(lt, lens, 1, 0.0005, 1); /* another event count: timing stops */
    assert_false(dt_layer_timer_on(lt, 4));
    dt_layer_timer_free(lt);
    unlink(path);
    /* an unwritable path: refused when the trainer starts */
    lt = NULL;
    assert_int_equal(dt_layer_timer_new("/nonexistent-dir/x.layers", dev, 64, &lt),
                     DT_ERR_IO);
    assert_null(lt);
    assert_int_equal(dt_layer_timer_new("", dev, 64, &lt), DT_OK);
    assert_null(lt); /* unset: no timer */
    assert_false(dt_layer_timer_on(NULL, 3));
    dt_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(window_and_file),
        cmocka_unit_test(skipped_and_broken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
