/* test_cpu_bind.c — [cluster] bind: which CPUs each local rank gets (for
 * masks this machine may not have), and a real sched_setaffinity on this
 * machine in forked children. */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dt/config.h>
#include "net/cpu_bind.h"
#include "stderr_capture.h"

static cpu_set_t cpus(const int *list, int n)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int i = 0; i < n; i++)
        CPU_SET(list[i], &s);
    return s;
}

/* The plan for one rank must be exactly the CPUs in want (n of them), or
 * no change when n == 0. */
static void expect_plan(const cpu_set_t *given, int online, const char *mode,
                        int lr, int ls, const int *want, int n)
{
    cpu_set_t out;
    int changed = -1;
    assert_int_equal(
        dt_cpu_bind_plan(given, online, mode, lr, ls, &out, &changed), DT_OK);
    if (n == 0) {
        assert_int_equal(changed, 0);
        return;
    }
    cpu_set_t w = cpus(want, n);
    assert_int_equal(CPU_COUNT(&out), n);
    assert_true(CPU_EQUAL(&out, &w));
}

static void test_equal_shares(void **state)
{
    (void)state;
    const int eight[] = {0, 1, 2, 3, 4, 5, 6, 7};
    cpu_set_t g = cpus(eight, 8);
    expect_plan(&g, 8, "auto", 0, 2, (int[]){0, 1, 2, 3}, 4);
    expect_plan(&g, 8, "auto", 1, 2, (int[]){4, 5, 6, 7}, 4);
    expect_plan(&g, 8, "auto", 2, 4, (int[]){4, 5}, 2);
    /* 8 CPUs, 3 ranks: 2 each, the remainder stays unused. */
    expect_plan(&g, 8, "auto", 2, 3, (int[]){4, 5}, 2);
    expect_plan(&g, 8, "auto", 7, 8, (int[]){7}, 1);
}

static void test_inherited_mask_is_respected(void **state)
{
    (void)state;
    /* A cgroup or scheduler gave us CPUs 2, 5, 9, 12: shares are taken in
     * that order, never outside it. */
    cpu_set_t g = cpus((int[]){2, 5, 9, 12}, 4);
    expect_plan(&g, 16, "auto", 0, 2, (int[]){2, 5}, 2);
    expect_plan(&g, 16, "auto", 1, 2, (int[]){9, 12}, 2);
    expect_plan(&g, 16, "cores", 3, 4, (int[]){12}, 1);
}

static void test_oversubscribed(void **state)
{
    (void)state;
    cpu_set_t g = cpus((int[]){0, 1}, 2);
    /* 4 ranks on a 2-CPU host nobody bound: round robin. */
    expect_plan(&g, 2, "auto", 2, 4, (int[]){0}, 1);
    expect_plan(&g, 2, "auto", 3, 4, (int[]){1}, 1);
    /* The same mask on a 16-CPU host: a launcher narrowed it; auto keeps
     * that binding, cores splits it anyway. */
    expect_plan(&g, 16, "auto", 3, 4, NULL, 0);
    expect_plan(&g, 16, "cores", 3, 4, (int[]){1}, 1);
    /* A rank mpirun bound to one core stays there. */
    cpu_set_t one = cpus((int[]){1}, 1);
    expect_plan(&one, 2, "auto", 0, 2, NULL, 0);
    expect_plan(&one, 2, "cores", 0, 2, NULL, 0);
}

static void test_nothing_to_do(void **state)
{
    (void)state;
    cpu_set_t g = cpus((int[]){0, 1, 2, 3}, 4);
    expect_plan(&g, 4, "none", 1, 2, NULL, 0);
    expect_plan(&g, 4, "auto", 0, 1, NULL, 0); /* alone on its host */
}

/* In a child: bind as local rank lr of ls on {cpu0, cpu1} and report the
 * CPU it ended up on (or 100 + count when not exactly one). */
static int bound_cpu_in_child(const char *mode, int lr, int ls, int cpu0,
                              int cpu1)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cpu_set_t g = cpus((int[]){cpu0, cpu1}, 2), now;
        dt_config_t *cfg = NULL;
        if (sched_setaffinity(0, sizeof g, &g) != 0 ||
            dt_config_new(&cfg) != DT_OK ||
            dt_config_set(cfg, "cluster", "bind", mode, DT_SRC_CLI,
                          "test") != DT_OK ||
            dt_cpu_bind(cfg, lr, ls) != DT_OK ||
            sched_getaffinity(0, sizeof now, &now) != 0)
            _exit(99);
        if (CPU_COUNT(&now) != 1)
            _exit(100 + CPU_COUNT(&now));
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &now))
                _exit(c);
        _exit(98);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_real_binding(void **state)
{
    (void)state;
    cpu_set_t mine;
    assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
    int have[2], n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &mine))
            have[n++] = c;
    if (n < 2)
        skip(); /* one CPU: nothing to split */
    assert_int_equal(bound_cpu_in_child("auto", 0, 2, have[0], have[1]),
                     have[0]);
    assert_int_equal(bound_cpu_in_child("auto", 1, 2, have[0], have[1]),
                     have[1]);
    assert_int_equal(bound_cpu_in_child("none", 1, 2, have[0], have[1]),
                     100 + 2);
    /* 4 ranks on these 2 CPUs: round robin when they are all the host
     * has, else (a narrowed mask) left alone. */
    assert_int_equal(bound_cpu_in_child("auto", 3, 4, have[0], have[1]),
                     sysconf(_SC_NPROCESSORS_ONLN) == 2 ? have[1] : 100 + 2);
    assert_int_equal(bound_cpu_in_child("cores", 3, 4, have[0], have[1]),
                     have[1]);
}

static void test_bad_mode_named(void **state)
{
    (void)state;
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_int_equal(dt_config_set(cfg, "cluster", "bind", "sockets",
                                   DT_SRC_CLI, "--set cluster.bind"),
                     DT_OK);
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_cpu_bind(cfg, 0, 2);
    char *err = capture_end(&cap);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "bind = 'sockets'"));
    assert_non_null(strstr(err, "auto, cores or none"));
    free(err);
    dt_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_shares),
        cmocka_unit_test(test_inherited_mask_is_respected),
        cmocka_unit_test(test_oversubscribed),
        cmocka_unit_test(test_nothing_to_do),
        cmocka_unit_test(test_real_binding),
        cmocka_unit_test(test_bad_mode_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
