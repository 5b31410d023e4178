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
#include <sys/stat.h>
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

/* Write text to root/rel, making its folders. */
static void put(const char *root, const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700); /* may exist */
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* CPUs 0..n-1: a host's online CPUs, or a cgroup's. */
static cpu_set_t first_n(int n)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c = 0; c < n; c++)
        CPU_SET(c, &s);
    return s;
}

/* The plan for one rank must be exactly the CPUs in want (n of them), or
 * no change when n == 0. */
static void expect_plan(const cpu_set_t *given, const cpu_set_t *allowed,
                        const char *mode, int lr, int ls, const int *want,
                        int n)
{
    cpu_set_t out;
    int changed = -1;
    assert_int_equal(dt_cpu_bind_plan(given, allowed, NULL, mode, lr, ls,
                                      &out, &changed),
                     DT_OK);
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
    cpu_set_t g = first_n(8);
    expect_plan(&g, &g, "auto", 0, 2, (int[]){0, 1, 2, 3}, 4);
    expect_plan(&g, &g, "auto", 1, 2, (int[]){4, 5, 6, 7}, 4);
    expect_plan(&g, &g, "auto", 2, 4, (int[]){4, 5}, 2);
    /* 8 CPUs, 3 ranks: 2, 3 and 3; the remainder is not left idle. */
    expect_plan(&g, &g, "auto", 0, 3, (int[]){0, 1}, 2);
    expect_plan(&g, &g, "auto", 1, 3, (int[]){2, 3, 4}, 3);
    expect_plan(&g, &g, "auto", 2, 3, (int[]){5, 6, 7}, 3);
    expect_plan(&g, &g, "auto", 7, 8, (int[]){7}, 1);
}

/* Every rank's share of a whole mask, together: each CPU exactly once,
 * shares differing by at most one CPU. */
static void test_uneven_split_uses_every_cpu(void **state)
{
    (void)state;
    const int cases[][2] = {{16, 6}, {3, 2}, {8, 3}, {7, 7}, {5, 4}, {64, 7}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int ncpu = cases[k][0], ls = cases[k][1], least = ncpu, most = 0;
        cpu_set_t g = first_n(ncpu), all;
        CPU_ZERO(&all);
        for (int lr = 0; lr < ls; lr++) {
            cpu_set_t out, both;
            int changed = 0;
            assert_int_equal(dt_cpu_bind_plan(&g, &g, NULL, "auto", lr, ls,
                                              &out, &changed),
                             DT_OK);
            assert_int_equal(changed, 1);
            CPU_AND(&both, &all, &out);
            assert_int_equal(CPU_COUNT(&both), 0); /* no CPU twice */
            CPU_OR(&all, &all, &out);
            least = CPU_COUNT(&out) < least ? CPU_COUNT(&out) : least;
            most = CPU_COUNT(&out) > most ? CPU_COUNT(&out) : most;
        }
        assert_true(CPU_EQUAL(&all, &g));
        assert_true(most - least <= 1);
    }
}

/* SMT siblings (Intel numbering: CPU i and i + 4 share a core) stay in
 * one rank's share, read from sysfs topology. */
static void test_smt_siblings_together(void **state)
{
    (void)state;
    char root[] = "/tmp/dt-test-smt-XXXXXX", rel[96], cmd[128];
    assert_non_null(mkdtemp(root));
    for (int c = 0; c < 8; c++) {
        char list[16];
        snprintf(rel, sizeof rel,
                 "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
                 c);
        snprintf(list, sizeof list, "%d,%d\n", c % 4, c % 4 + 4);
        put(root, rel, list);
    }
    cpu_set_t g = first_n(8), out;
    int core[CPU_SETSIZE], changed = 0;
    dt_cpu_cores(root, &g, core);
    assert_int_equal(core[5], 1);
    assert_int_equal(core[1], 1);
    assert_int_equal(
        dt_cpu_bind_plan(&g, &g, core, "auto", 1, 2, &out, &changed), DT_OK);
    cpu_set_t want = cpus((int[]){2, 3, 6, 7}, 4);
    assert_true(CPU_EQUAL(&out, &want));
    /* 3 ranks: cores 0 | 1, 2 (half) | 2 (half), 3: still every CPU. */
    assert_int_equal(
        dt_cpu_bind_plan(&g, &g, core, "auto", 0, 3, &out, &changed), DT_OK);
    want = cpus((int[]){0, 4}, 2);
    assert_true(CPU_EQUAL(&out, &want));
    /* No topology files: plain CPU order. */
    cpu_set_t far = cpus((int[]){20, 21}, 2);
    dt_cpu_cores(root, &far, core);
    assert_int_equal(core[21], 21);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    assert_int_equal(system(cmd), 0);
}

static void test_inherited_mask_is_respected(void **state)
{
    (void)state;
    /* A cgroup gave the job CPUs 2, 5, 9, 12: shares are taken in that
     * order, never outside it. */
    cpu_set_t g = cpus((int[]){2, 5, 9, 12}, 4), host = first_n(16);
    expect_plan(&g, &g, "auto", 0, 2, (int[]){2, 5}, 2);
    expect_plan(&g, &g, "auto", 1, 2, (int[]){9, 12}, 2);
    expect_plan(&g, &g, "cores", 3, 4, (int[]){12}, 1);
    /* The same CPUs as the affinity of a process that may use all 16: a
     * scheduler bound this rank; auto keeps it, cores splits it. */
    expect_plan(&g, &host, "auto", 0, 2, NULL, 0);
    expect_plan(&g, &host, "cores", 1, 2, (int[]){9, 12}, 2);
}

static void test_scheduler_bound_rank_kept(void **state)
{
    (void)state;
    /* srun --ntasks-per-node=4 --cpus-per-task=8 --cpu-bind=cores: each
     * rank inherits its own 8 of the node's 32 and keeps all of them. */
    cpu_set_t node = first_n(32), r1 = first_n(16), r0 = first_n(8);
    for (int c = 0; c < 8; c++)
        CPU_CLR(c, &r1);
    expect_plan(&r0, &node, "auto", 0, 4, NULL, 0);
    expect_plan(&r1, &node, "auto", 1, 4, NULL, 0);
    /* Open MPI bind-to-socket, 4 ranks: the socket's 8 CPUs are kept. */
    cpu_set_t socket = first_n(8), host = first_n(16);
    expect_plan(&socket, &host, "auto", 2, 4, NULL, 0);
    /* cores splits what it inherited anyway (docs/CONFIG.md). */
    expect_plan(&r1, &node, "cores", 1, 4, (int[]){10, 11}, 2);
}

static void test_oversubscribed(void **state)
{
    (void)state;
    cpu_set_t g = cpus((int[]){0, 1}, 2), host = first_n(16);
    /* 4 ranks on a 2-CPU host nobody bound: round robin. */
    expect_plan(&g, &g, "auto", 2, 4, (int[]){0}, 1);
    expect_plan(&g, &g, "auto", 3, 4, (int[]){1}, 1);
    /* The same mask on a 16-CPU host: a launcher narrowed it; auto keeps
     * that binding, cores splits it anyway. */
    expect_plan(&g, &host, "auto", 3, 4, NULL, 0);
    expect_plan(&g, &host, "cores", 3, 4, (int[]){1}, 1);
    /* A rank mpirun bound to one core stays there. */
    cpu_set_t one = cpus((int[]){1}, 1);
    expect_plan(&one, &g, "auto", 0, 2, NULL, 0);
    expect_plan(&one, &g, "cores", 0, 2, NULL, 0);
}

static void test_nothing_to_do(void **state)
{
    (void)state;
    cpu_set_t g = first_n(4);
    expect_plan(&g, &g, "none", 1, 2, NULL, 0);
    expect_plan(&g, &g, "auto", 0, 1, NULL, 0); /* alone on its host */
    expect_plan(&g, &g, "auto", 2, 2, NULL, 0); /* not a local rank */
}

static void test_cpu_list_parse(void **state)
{
    (void)state;
    cpu_set_t s, want = cpus((int[]){0, 1, 2, 3, 8}, 5);
    assert_int_equal(dt_cpu_list_parse("0-3,8\n", &s), 0);
    assert_true(CPU_EQUAL(&s, &want));
    assert_int_equal(dt_cpu_list_parse("\n", &s), 0);
    assert_int_equal(CPU_COUNT(&s), 0);
    assert_int_equal(dt_cpu_list_parse("3-1", &s), -1);
    assert_int_equal(dt_cpu_list_parse("0-3 8", &s), -1);
    assert_int_equal(dt_cpu_list_parse("x", &s), -1);
    assert_int_equal(dt_cpu_list_parse("99999", &s), -1);
}

/* dt_cpu_allowed on a fake /proc and /sys; its CPU list as text. */
static void expect_allowed(const char *root, const char *want)
{
    cpu_set_t got, w;
    dt_cpu_allowed(root, &got);
    assert_int_equal(dt_cpu_list_parse(want, &w), 0);
    assert_true(CPU_EQUAL(&got, &w));
}

static void test_allowed_cpus(void **state)
{
    (void)state;
    char root[] = "/tmp/dt-test-cpuset-XXXXXX", cmd[128];
    assert_non_null(mkdtemp(root));
    put(root, "sys/devices/system/cpu/online", "0-7\n");
    /* No cgroup cpuset: the online CPUs. */
    put(root, "proc/self/cgroup", "0::/job/step\n");
    expect_allowed(root, "0-7");
    /* cgroup v2: the nearest cpuset.cpus.effective up from our cgroup. */
    put(root, "sys/fs/cgroup/job/cpuset.cpus.effective", "2-5\n");
    expect_allowed(root, "2-5");
    put(root, "sys/fs/cgroup/job/step/cpuset.cpus.effective", "4-5\n");
    expect_allowed(root, "4-5");
    /* cgroup v1 (the hybrid layout: cpuset on v1, "0::" too). */
    put(root, "proc/self/cgroup", "5:cpu,cpuset:/slurm/uid_1\n0::/job\n");
    put(root, "sys/fs/cgroup/cpuset/slurm/uid_1/cpuset.cpus", "1,3,6\n");
    expect_allowed(root, "1,3,6");
    put(root, "sys/fs/cgroup/cpuset/slurm/uid_1/cpuset.effective_cpus", "3\n");
    expect_allowed(root, "3");
    /* isolcpus= CPUs are in nobody's default mask. */
    put(root, "proc/self/cgroup", "0::/\n");
    put(root, "sys/devices/system/cpu/isolated", "6-7\n");
    expect_allowed(root, "0-5");
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    assert_int_equal(system(cmd), 0);
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
    cpu_set_t mine, allowed;
    assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
    int have[2], n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &mine))
            have[n++] = c;
    if (n < 2)
        skip(); /* one CPU: nothing to split */
    /* The children's mask {have[0], have[1]} is whole only when the
     * process may use no other CPU; else auto takes it for a launcher's. */
    dt_cpu_allowed("", &allowed);
    cpu_set_t two = cpus(have, 2);
    int whole = CPU_EQUAL(&two, &allowed);
    assert_int_equal(bound_cpu_in_child("auto", 0, 2, have[0], have[1]),
                     whole ? have[0] : 100 + 2);
    assert_int_equal(bound_cpu_in_child("auto", 1, 2, have[0], have[1]),
                     whole ? have[1] : 100 + 2);
    assert_int_equal(bound_cpu_in_child("cores", 1, 2, have[0], have[1]),
                     have[1]);
    assert_int_equal(bound_cpu_in_child("none", 1, 2, have[0], have[1]),
                     100 + 2);
    /* 4 ranks on these 2 CPUs: round robin when they are all the process
     * may use, else (a narrowed mask) left alone. */
    assert_int_equal(bound_cpu_in_child("auto", 3, 4, have[0], have[1]),
                     whole ? have[1] : 100 + 2);
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
        cmocka_unit_test(test_uneven_split_uses_every_cpu),
        cmocka_unit_test(test_smt_siblings_together),
        cmocka_unit_test(test_inherited_mask_is_respected),
        cmocka_unit_test(test_scheduler_bound_rank_kept),
        cmocka_unit_test(test_oversubscribed),
        cmocka_unit_test(test_nothing_to_do),
        cmocka_unit_test(test_cpu_list_parse),
        cmocka_unit_test(test_allowed_cpus),
        cmocka_unit_test(test_real_binding),
        cmocka_unit_test(test_bad_mode_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
