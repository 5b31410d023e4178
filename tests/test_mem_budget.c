/* test_mem_budget.c — the memory a worker may take (train/mem_budget.h):
 * /proc/meminfo's MemAvailable + SwapFree, a cgroup's path and stat
 * fields read from texts of the tests' own, and which limit binds: the
 * host's memory shared by its workers, the address space limit this
 * process's alone, a cgroup's limit shared by the workers in it (running
 * this program), not by every worker on the host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "train/mem_budget.h"

#define KB 1024ull
#define GIB (1ull << 30)

static void test_meminfo(void **state)
{
    (void)state;
    unsigned long long b = 0;
    const char *text = "MemTotal:       24684092 kB\n"
                       "MemFree:         1000000 kB\n"
                       "MemAvailable:   23919772 kB\n"
                       "SwapTotal:       2097148 kB\n"
                       "SwapFree:        1048576 kB\n";
    assert_int_equal(dt_mem_meminfo_available(text, &b), 0);
    assert_true(b == (23919772ull + 1048576ull) * KB);
    /* no swap line: MemAvailable alone */
    assert_int_equal(dt_mem_meminfo_available("MemAvailable: 100 kB\n", &b),
                     0);
    assert_true(b == 100 * KB);
    /* a kernel without MemAvailable (MemAvailableX is not it) */
    assert_int_equal(dt_mem_meminfo_available("MemFree: 5 kB\n"
                                              "MemAvailableX: 9 kB\n", &b),
                     -1);
}

static void test_cgroup_path(void **state)
{
    (void)state;
    char p[64];
    int v2 = -1;
    assert_int_equal(dt_mem_cgroup_path("0::/user.slice/job-7\n", p,
                                        sizeof p, &v2), 0);
    assert_string_equal(p, "/user.slice/job-7");
    assert_int_equal(v2, 1);
    /* v1: the memory controller's line, whatever else is listed */
    assert_int_equal(dt_mem_cgroup_path("9:name=systemd:/\n"
                                        "4:memory:/slurm/uid_0/job_12\n"
                                        "2:cpu,cpuacct:/\n0::/\n", p,
                                        sizeof p, &v2), 0);
    assert_string_equal(p, "/slurm/uid_0/job_12");
    assert_int_equal(v2, 0);
    assert_int_equal(dt_mem_cgroup_path("3:cpu,memory:/a\n", p, sizeof p,
                                        &v2), 0);
    assert_string_equal(p, "/a");
    /* another controller whose name starts so is not it */
    assert_int_equal(dt_mem_cgroup_path("5:memoryx:/b\n", p, sizeof p, &v2),
                     -1);
    assert_int_equal(dt_mem_cgroup_path("", p, sizeof p, &v2), -1);
}

static void test_stat_field(void **state)
{
    (void)state;
    unsigned long long v = 0;
    const char *stat = "anon_thp 0\nanon 4096\nfile 8192\n";
    assert_int_equal(dt_mem_stat_field(stat, "anon", &v), 0);
    assert_true(v == 4096);
    assert_int_equal(dt_mem_stat_field(stat, "file", &v), 0);
    assert_true(v == 8192);
    assert_int_equal(dt_mem_stat_field(stat, "shmem", &v), -1);
}

static void test_pick(void **state)
{
    (void)state;
    dt_mem_budget_t b;
    /* nothing known: no limit */
    dt_mem_budget_pick(0, "host", 0, "as", 0, "cg", 4, 4, &b);
    assert_true(b.bytes == 0);
    /* the host's 20 GiB shared by 4 workers (5 each) binds before an
     * address space limit of 8 GiB for this process */
    dt_mem_budget_pick(20 * GIB, "host", 8 * GIB, "as", 0, "cg", 4, 4, &b);
    assert_true(b.bytes == 20 * GIB);
    assert_int_equal(b.workers, 4);
    assert_int_equal(b.kind, DT_MEM_HOST_AVAILABLE);
    assert_string_equal(b.what, "host");
    /* alone on the host, the 8 GiB limit binds */
    dt_mem_budget_pick(20 * GIB, "host", 8 * GIB, "as", 0, "cg", 1, 1, &b);
    assert_true(b.bytes == 8 * GIB);
    assert_int_equal(b.workers, 1);
    assert_int_equal(b.kind, DT_MEM_ADDRESS_SPACE);
    /* a cgroup of 12 GiB for the host's 4 workers: 3 each */
    dt_mem_budget_pick(20 * GIB, "host", 8 * GIB, "as", 12 * GIB, "cg", 4,
                       4, &b);
    assert_true(b.bytes == 12 * GIB);
    assert_int_equal(b.workers, 4);
    assert_int_equal(b.kind, DT_MEM_CGROUP);
    assert_string_equal(b.what, "cg");
    /* 4 workers on the host, each in a cgroup of 6 GiB of its own (YARN's
     * containers): 6 each, not 1.5; the host's 40 GiB (10 each) binds
     * nothing */
    dt_mem_budget_pick(40 * GIB, "host", 0, "as", 6 * GIB, "cg", 1, 4, &b);
    assert_true(b.bytes == 6 * GIB);
    assert_int_equal(b.workers, 1);
    assert_int_equal(b.kind, DT_MEM_CGROUP);
    /* never more sharers than workers on the host */
    dt_mem_budget_pick(0, "host", 0, "as", 6 * GIB, "cg", 9, 2, &b);
    assert_int_equal(b.workers, 2);
}

/* The workers sharing a cgroup: the processes listed that run this
 * program (a forked child does), not others (pid 1's init, a pid that
 * does not exist), not a partial last line, at most the host's
 * workers. */
static void test_sharers(void **state)
{
    (void)state;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    char procs[256];
    snprintf(procs, sizeof procs, "1\n%ld\n%ld\n999999999\nx\n",
             (long)getpid(), (long)child);
    int two = dt_mem_cgroup_sharers(procs, 4);
    int capped = dt_mem_cgroup_sharers(procs, 1);
    snprintf(procs, sizeof procs, "1\n%ld", (long)child); /* cut short */
    int cut = dt_mem_cgroup_sharers(procs, 4);
    int alone = dt_mem_cgroup_sharers("", 4);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(two, 2);
    assert_int_equal(capped, 1);
    assert_int_equal(cut, 1);
    assert_int_equal(alone, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meminfo),
        cmocka_unit_test(test_cgroup_path),
        cmocka_unit_test(test_stat_field),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_sharers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
