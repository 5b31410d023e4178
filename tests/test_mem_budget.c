/* test_mem_budget.c — the memory a worker may take (train/mem_budget.h):
 * /proc/meminfo's MemAvailable + SwapFree, a cgroup's path and stat
 * fields read from texts of the tests' own, and which limit binds: the
 * host's memory shared by its workers, the address space limit this
 * process's alone, a cgroup's limit shared by the workers in it (running
 * this program), not by every worker on the host; the tightest limit over
 * a cgroup and its ancestors, with the swap each allows, read from a tree
 * of cgroup files the tests write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    assert_true(dt_mem_meminfo_swap_free(text) == 1048576ull * KB);
    assert_true(dt_mem_meminfo_swap_free("MemAvailable: 100 kB\n") == 0);
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

/* A level's room: its limit less its anonymous memory, plus the swap it
 * still allows as far as the host has swap free. */
static void test_level_room(void **state)
{
    (void)state;
    dt_mem_cgroup_level_t l = {.limit = 8 * GIB, .anon = 3 * GIB,
                               .swap_limit = 4 * GIB, .swap_used = GIB};
    /* 5 GiB of memory and the 3 GiB of swap left: the host has more */
    assert_true(dt_mem_cgroup_level_room(&l, 10 * GIB) == 8 * GIB);
    /* the host's 2 GiB of free swap is all there is */
    assert_true(dt_mem_cgroup_level_room(&l, 2 * GIB) == 7 * GIB);
    /* no swap on the host: the memory alone */
    assert_true(dt_mem_cgroup_level_room(&l, 0) == 5 * GIB);
    /* no swap limit of its own (ULLONG_MAX): the host's swap */
    l.swap_limit = ULLONG_MAX;
    assert_true(dt_mem_cgroup_level_room(&l, 2 * GIB) == 7 * GIB);
    /* over its limit already, no swap: at least 1 (a limit, no room) */
    dt_mem_cgroup_level_t full = {.limit = GIB, .anon = 2 * GIB};
    assert_true(dt_mem_cgroup_level_room(&full, 0) == 1);
    /* no limit: no room to speak of */
    dt_mem_cgroup_level_t none = {.limit = 0};
    assert_true(dt_mem_cgroup_level_room(&none, GIB) == 0);
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    assert_true((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) <
                sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void sub(char *out, size_t len, const char *dir, const char *name)
{
    assert_true((size_t)snprintf(out, len, "%s/%s", dir, name) < len);
    assert_int_equal(mkdir(out, 0755), 0);
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* cgroup v2: a worker in /job/task, task without a limit, job with 8 GiB
 * (1 GiB held) and 2 GiB of swap, the host 1 GiB of swap free: the
 * parent's limit binds, swap counted as far as the host has it; a second
 * worker (a forked child) in a sibling cgroup shares the parent, not the
 * task's own limit. */
static void test_parent_limit_v2(void **state)
{
    (void)state;
    char root[] = "/tmp/dt-mem-budget-test.XXXXXX", job[256], task[256],
         other[256], what[320], procs[64];
    assert_non_null(mkdtemp(root));
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    sub(job, sizeof job, root, "job");
    put(job, "memory.max", "8589934592\n");
    put(job, "memory.stat", "anon 1073741824\nfile 5\n");
    put(job, "memory.swap.max", "2147483648\n");
    put(job, "memory.swap.current", "0\n");
    sub(task, sizeof task, job, "task");
    put(task, "memory.max", "max\n");
    put(task, "memory.stat", "anon 1073741824\n");
    snprintf(procs, sizeof procs, "%ld\n", (long)getpid());
    put(task, "cgroup.procs", procs);
    int sharers = 0;
    unsigned long long room = dt_mem_cgroup_room(root, "/job/task", 1, GIB,
                                                 4, &sharers, what,
                                                 sizeof what);
    assert_true(room == 8 * GIB); /* 7 of memory, 1 of swap */
    assert_int_equal(sharers, 1);
    assert_non_null(strstr(what, "/job/memory.max"));
    assert_non_null(strstr(what, "with 1.00 GiB of swap"));
    /* a neighbour worker in a sibling cgroup shares the job's limit; the
     * task's own limit of 6 GiB leaves it more than its half of 8 */
    sub(other, sizeof other, job, "other");
    snprintf(procs, sizeof procs, "%ld\n", (long)child);
    put(other, "cgroup.procs", procs);
    put(task, "memory.max", "6442450944\n");
    room = dt_mem_cgroup_room(root, "/job/task/", 1, 0, 4, &sharers, what,
                              sizeof what);
    assert_true(room == 7 * GIB);
    assert_int_equal(sharers, 2);
    assert_non_null(strstr(what, "/job/memory.max"));
    /* the task's own limit tighter than its share of the job's: it */
    put(task, "memory.max", "2147483648\n");
    room = dt_mem_cgroup_room(root, "/job/task", 1, 0, 4, &sharers, what,
                              sizeof what);
    assert_true(room == GIB);
    assert_int_equal(sharers, 1);
    assert_non_null(strstr(what, "/job/task/memory.max"));
    /* nothing limited, nothing readable: no limit */
    assert_true(dt_mem_cgroup_room(root, "/nowhere", 1, 0, 4, &sharers,
                                   what, sizeof what) == 0);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    remove_tree(root);
}

/* cgroup v1: memsw counts memory and swap together; a parent's limit binds
 * only while its use_hierarchy is 1. */
static void test_parent_limit_v1(void **state)
{
    (void)state;
    char root[] = "/tmp/dt-mem-budget-test.XXXXXX", job[256], task[256],
         what[320];
    assert_non_null(mkdtemp(root));
    sub(job, sizeof job, root, "job");
    put(job, "memory.limit_in_bytes", "4294967296\n");
    put(job, "memory.stat", "rss 0\ntotal_rss 1073741824\n");
    /* 2 GiB of swap allowed (memsw 6 GiB), 1 GiB of it used */
    put(job, "memory.memsw.limit_in_bytes", "6442450944\n");
    put(job, "memory.usage_in_bytes", "1073741824\n");
    put(job, "memory.memsw.usage_in_bytes", "2147483648\n");
    put(job, "memory.use_hierarchy", "1\n");
    sub(task, sizeof task, job, "task");
    put(task, "memory.limit_in_bytes", "9223372036854771712\n");
    int sharers = 0;
    unsigned long long room = dt_mem_cgroup_room(root, "/job/task", 0,
                                                 8 * GIB, 2, &sharers, what,
                                                 sizeof what);
    assert_true(room == 4 * GIB); /* 3 of memory, 1 of swap */
    assert_non_null(strstr(what, "/job/memory.limit_in_bytes"));
    put(job, "memory.use_hierarchy", "0\n");
    assert_true(dt_mem_cgroup_room(root, "/job/task", 0, 8 * GIB, 2,
                                   &sharers, what, sizeof what) == 0);
    remove_tree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meminfo),
        cmocka_unit_test(test_cgroup_path),
        cmocka_unit_test(test_stat_field),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_sharers),
        cmocka_unit_test(test_level_room),
        cmocka_unit_test(test_parent_limit_v2),
        cmocka_unit_test(test_parent_limit_v1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
