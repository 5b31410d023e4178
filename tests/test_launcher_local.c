/* test_launcher_local.c — the local launcher plugin, loaded the way dtctl
 * loads it and driven through its ops table with real processes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <dt/plugin.h>
#include "plugin/plugin_loader.h"

/* Upper bound for one wait(): only a guard against a hang, never a
 * timing assertion. */
#define GUARD_MS 20000
#define MAX_RANKS 4
/* Processes that were signalled must be dead within this many seconds;
 * left alone they would live 100 s (sleep 100). A bound, not a timing
 * assertion: they die in milliseconds. */
#define DEAD_WITHIN_S 10

/* The launcher's waits for a whole process group, counted while
 * counting_group_waits is set: each one scans every child of this process
 * (workers and their guards), so their number per job must grow with the
 * workers, not with their square. This executable's waitpid is the one
 * the plugin calls (exported: Makefile.am). */
static pid_t (*real_waitpid)(pid_t, int *, int);
static int counting_group_waits;
static long group_waits;

pid_t waitpid(pid_t pid, int *status, int options)
{
    if (counting_group_waits && pid < -1)
        __atomic_add_fetch(&group_waits, 1, __ATOMIC_RELAXED);
    return real_waitpid(pid, status, options);
}

typedef struct captured {
    char text[MAX_RANKS][2][4096];
    size_t len[MAX_RANKS][2];
    int bad_calls;
} captured_t;

static void capture(void *arg, int rank, int fd, const char *data, size_t len)
{
    captured_t *c = arg;
    if (rank < 0 || rank >= MAX_RANKS || (fd != 1 && fd != 2)) {
        c->bad_calls++;
        return;
    }
    size_t *l = &c->len[rank][fd - 1];
    size_t room = sizeof c->text[0][0] - 1 - *l;
    if (len > room)
        len = room;
    memcpy(c->text[rank][fd - 1] + *l, data, len);
    *l += len;
    c->text[rank][fd - 1][*l] = '\0';
}

typedef struct fixture {
    const dt_launcher_ops_t *ops;
    void *ctx;
    dt_host_t host;
    dt_hostlist_t hosts;
    dt_placement_t placement[MAX_RANKS];
    captured_t out;
    dt_launch_spec_t spec;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    const dt_plugin_t *p;
    if (!f || dt_plugin_load(DT_KIND_LAUNCHER, "local", &p, NULL) != DT_OK)
        return -1;
    f->ops = p->ops;
    if (f->ops->init(NULL, &f->ctx) != DT_OK)
        return -1;
    f->host = (dt_host_t){"localhost", MAX_RANKS, 0, 0};
    f->hosts = (dt_hostlist_t){&f->host, 1};
    for (int r = 0; r < MAX_RANKS; r++)
        f->placement[r] = (dt_placement_t){r, 0, r, MAX_RANKS, 0, 1};
    f->spec.hosts = &f->hosts;
    f->spec.placement = f->placement;
    f->spec.output = capture;
    f->spec.output_arg = &f->out;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    f->ops->fini(f->ctx);
    free(f);
    return 0;
}

/* Collect every exit until the launcher says none is left. */
static int wait_all(fixture_t *f, dt_worker_exit_t *evs, int max)
{
    int n = 0;
    for (;;) {
        dt_worker_exit_t ev;
        dt_status_t st = f->ops->wait(f->ctx, GUARD_MS, &ev);
        if (st == DT_ERR_NOT_FOUND)
            return n;
        assert_int_equal(st, DT_OK);
        assert_true(n < max);
        evs[n++] = ev;
    }
}

static void test_env_and_output_per_rank(void **state)
{
    fixture_t *f = *state;
    setenv("DT_TEST_FROM_PARENT", "parent", 1);
    setenv("DT_TEST_OVERRIDDEN", "old", 1);
    const char *argv[] = {"sh", "-c",
                          "echo \"$DT_RANK $DT_TEST_FROM_PARENT "
                          "$DT_TEST_OVERRIDDEN $JOBVAR\"; echo err$DT_RANK >&2",
                          NULL};
    const char *env[] = {"JOBVAR=job", "DT_TEST_OVERRIDDEN=new", NULL};
    const char *r0[] = {"DT_RANK=0", NULL}, *r1[] = {"DT_RANK=1", NULL};
    const char *const *rank_env[] = {r0, r1};
    f->spec.np = 2;
    f->spec.argv = argv;
    f->spec.env = env;
    f->spec.rank_env = rank_env;
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
    dt_worker_exit_t evs[4];
    assert_int_equal(wait_all(f, evs, 4), 2);
    assert_string_equal(f->out.text[0][0], "0 parent new job\n");
    assert_string_equal(f->out.text[1][0], "1 parent new job\n");
    assert_string_equal(f->out.text[0][1], "err0\n");
    assert_string_equal(f->out.text[1][1], "err1\n");
    assert_int_equal(f->out.bad_calls, 0);
    unsetenv("DT_TEST_FROM_PARENT");
    unsetenv("DT_TEST_OVERRIDDEN");
}

static void test_exits_reported_once_each(void **state)
{
    fixture_t *f = *state;
    const char *argv[] = {"sh", "-c",
                          "case $DT_RANK in 0) exit 0;; 1) exit 7;;"
                          " 2) kill -9 $$;; esac",
                          NULL};
    const char *r0[] = {"DT_RANK=0", NULL}, *r1[] = {"DT_RANK=1", NULL},
               *r2[] = {"DT_RANK=2", NULL};
    const char *const *rank_env[] = {r0, r1, r2};
    f->spec.np = 3;
    f->spec.argv = argv;
    f->spec.rank_env = rank_env;
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
    dt_worker_exit_t evs[8];
    assert_int_equal(wait_all(f, evs, 8), 3);
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        assert_in_range(evs[i].rank, 0, 2);
        seen[evs[i].rank]++;
        assert_string_equal(evs[i].host, "localhost");
        switch (evs[i].rank) {
        case 0:
            assert_int_equal(evs[i].signaled, 0);
            assert_int_equal(evs[i].code, 0);
            break;
        case 1:
            assert_int_equal(evs[i].signaled, 0);
            assert_int_equal(evs[i].code, 7);
            break;
        case 2:
            assert_int_equal(evs[i].signaled, 1);
            assert_int_equal(evs[i].signo, SIGKILL);
            break;
        }
    }
    assert_int_equal(seen[0] + seen[1] * 10 + seen[2] * 100, 111);
    dt_worker_exit_t ev;
    assert_int_equal(f->ops->wait(f->ctx, 0, &ev), DT_ERR_NOT_FOUND);
}

/* The worker's pid and its background child's pid, printed by the
 * worker, so the test can check that both are gone. */
static void read_pids(const char *text, long *a, long *b)
{
    assert_int_equal(sscanf(text, "%ld %ld", a, b), 2);
}

static int process_gone(long pid)
{
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* pid's state letter and parent from /proc; 0 when there is no such
 * process. */
static char proc_state(long pid, long *ppid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'), state = 0;
    long pp = 0;
    if (!p || sscanf(p + 1, " %c %ld", &state, &pp) != 2)
        return 0;
    if (ppid)
        *ppid = pp;
    return state;
}

/* Dead: gone, or a zombie nobody has reaped yet. */
static int process_dead(long pid)
{
    char st = proc_state(pid, NULL);
    return st == 0 || st == 'Z';
}

/* Kill what a failed test leaves running, so that the test ends now and
 * not when `sleep 100` does. Only children of this process (the launcher
 * makes it their subreaper) that are not reaped: their pids cannot have
 * been reused by anyone else. */
static void kill_leftovers(const long *pids, int n)
{
    for (int i = 0; i < n; i++) {
        long ppid = 0;
        char st = proc_state(pids[i], &ppid);
        if (st && st != 'Z' && ppid == (long)getpid())
            kill((pid_t)pids[i], SIGKILL);
    }
}

/* Wait until every one of pids is dead; fail (after killing them) if one
 * still runs after DEAD_WITHIN_S. */
static void assert_dead_soon(const long *pids, int n, const char *what)
{
    for (int tick = 0; tick < DEAD_WITHIN_S * 100; tick++) {
        int alive = 0;
        for (int i = 0; i < n; i++)
            alive += !process_dead(pids[i]);
        if (!alive)
            return;
        usleep(10000);
    }
    for (int i = 0; i < n; i++)
        if (!process_dead(pids[i])) {
            kill_leftovers(pids, n);
            fail_msg("process %ld still runs %d s after %s", pids[i],
                     DEAD_WITHIN_S, what);
        }
}

static void *fini_main(void *p)
{
    fixture_t *f = p;
    f->ops->fini(f->ctx);
    return NULL;
}

/* fini kills every worker's process group and reaps it: it must return
 * at once, not when the group's `sleep 100` ends by itself. If it has not
 * returned after DEAD_WITHIN_S, what it waits for is killed here and the
 * test fails. */
static void fini_bounded(fixture_t *f, const long *pids, int n)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fini_main, f), 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += DEAD_WITHIN_S;
    int late = pthread_timedjoin_np(t, NULL, &until) != 0;
    if (late) {
        kill_leftovers(pids, n);
        pthread_join(t, NULL);
    }
    f->ctx = NULL;
    if (late)
        fail_msg("fini did not return within %d s: it waited for workers' "
                 "processes that its kill did not reach",
                 DEAD_WITHIN_S);
}

static void wait_for_output(fixture_t *f, int rank)
{
    dt_worker_exit_t ev;
    for (int i = 0; i < 200 && f->out.len[rank][0] == 0; i++)
        assert_int_equal(f->ops->wait(f->ctx, 100, &ev), DT_ERR_TIMEOUT);
    assert_true(f->out.len[rank][0] > 0);
}

static void test_signal_reaches_process_group(void **state)
{
    fixture_t *f = *state;
    const char *argv[] = {"sh", "-c", "sleep 100 & echo $$ $!; wait", NULL};
    f->spec.np = 1;
    f->spec.argv = argv;
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
    wait_for_output(f, 0);
    long shell, child;
    read_pids(f->out.text[0][0], &shell, &child);
    dt_worker_exit_t ev;
    assert_int_equal(f->ops->wait(f->ctx, 0, &ev), DT_ERR_TIMEOUT);
    assert_int_equal(f->ops->signal(f->ctx, SIGTERM), DT_OK);
    assert_int_equal(f->ops->wait(f->ctx, GUARD_MS, &ev), DT_OK);
    assert_int_equal(ev.rank, 0);
    assert_int_equal(ev.signaled, 1);
    assert_int_equal(ev.signo, SIGTERM);
    assert_int_equal(f->ops->wait(f->ctx, GUARD_MS, &ev), DT_ERR_NOT_FOUND);
    /* The background child got the SIGTERM too: it is dead now, long
     * before its sleep would end, and before fini's SIGKILL. */
    assert_dead_soon(&child, 1, "SIGTERM to its process group");
    long ppid = 0;
    if (proc_state(child, &ppid) == 'Z' && ppid == (long)getpid()) {
        siginfo_t si = {0};
        assert_int_equal(waitid(P_PID, (id_t)child, &si,
                                WEXITED | WNOHANG | WNOWAIT),
                         0);
        assert_int_equal(si.si_code, CLD_KILLED);
        assert_int_equal(si.si_status, SIGTERM);
    }
    long pids[2] = {shell, child};
    fini_bounded(f, pids, 2); /* reaps what the group left */
    assert_true(process_gone(shell));
    assert_true(process_gone(child));
    assert_int_equal(f->ops->init(NULL, &f->ctx), DT_OK);
}

static void test_fini_kills_running_and_orphans(void **state)
{
    fixture_t *f = *state;
    /* Rank 0 exits at once leaving a background sleep; rank 1 runs on. */
    const char *argv[] = {"sh", "-c",
                          "sleep 100 & echo $$ $!; "
                          "[ \"$DT_RANK\" = 0 ] || exec sleep 100",
                          NULL};
    const char *r0[] = {"DT_RANK=0", NULL}, *r1[] = {"DT_RANK=1", NULL};
    const char *const *rank_env[] = {r0, r1};
    f->spec.np = 2;
    f->spec.argv = argv;
    f->spec.rank_env = rank_env;
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
    dt_worker_exit_t ev;
    assert_int_equal(f->ops->wait(f->ctx, GUARD_MS, &ev), DT_OK);
    assert_int_equal(ev.rank, 0);
    assert_int_equal(ev.code, 0);
    wait_for_output(f, 1);
    long pids[4];
    read_pids(f->out.text[0][0], &pids[0], &pids[1]);
    read_pids(f->out.text[1][0], &pids[2], &pids[3]);
    assert_false(process_gone(pids[1])); /* the orphan still runs */
    fini_bounded(f, pids, 4);
    for (int i = 0; i < 4; i++)
        assert_true(process_gone(pids[i]));
    assert_int_equal(f->ops->init(NULL, &f->ctx), DT_OK);
}

static void test_exec_failure_is_clear(void **state)
{
    fixture_t *f = *state;
    const char *argv[] = {"dt-test-no-such-program", NULL};
    f->spec.np = 2;
    f->spec.argv = argv;
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_ERR_NOT_FOUND);
    dt_worker_exit_t ev;
    assert_int_equal(f->ops->wait(f->ctx, 0, &ev), DT_ERR_NOT_FOUND);
    /* Nothing was left behind: this test process has no children. */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void test_workdir(void **state)
{
    fixture_t *f = *state;
    const char *argv[] = {"pwd", NULL};
    f->spec.np = 1;
    f->spec.argv = argv;
    f->spec.workdir = "/";
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
    dt_worker_exit_t evs[2];
    assert_int_equal(wait_all(f, evs, 2), 1);
    assert_string_equal(f->out.text[0][0], "/\n");
}

static void test_bad_workdir(void **state)
{
    fixture_t *f = *state;
    const char *argv[] = {"true", NULL};
    f->spec.np = 1;
    f->spec.argv = argv;
    f->spec.workdir = "/nonexistent/dt-test-dir";
    assert_int_not_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
}

static void test_remote_host_refused(void **state)
{
    fixture_t *f = *state;
    const char *argv[] = {"true", NULL};
    f->host.name = "dt-test-remote.invalid";
    f->spec.np = 1;
    f->spec.argv = argv;
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_ERR_INVALID);
    char *out = NULL;
    int code = -1;
    assert_int_equal(f->ops->run_on_host(f->ctx, &f->host, argv, &out, &code),
                     DT_ERR_UNSUPPORTED);
    assert_null(out);
}

static void test_run_on_host(void **state)
{
    fixture_t *f = *state;
    const char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    char *out = NULL;
    int code = -1;
    assert_int_equal(f->ops->run_on_host(f->ctx, &f->host, argv, &out, &code),
                     DT_OK);
    assert_string_equal(out, "out\nerr\n");
    assert_int_equal(code, 3);
    free(out);
    const char *missing[] = {"dt-test-no-such-program", NULL};
    assert_int_equal(
        f->ops->run_on_host(f->ctx, &f->host, missing, &out, &code),
        DT_ERR_NOT_FOUND);
}

/* Many workers that end at once: wait() reports them all while scanning
 * our children a bounded number of times per worker. It used to
 * waitpid(-group) every reaped worker on every call, N^2 / 2 scans of 2N
 * children: 3 s for 512 workers of `true`, 8 s for 700. */
#define MANY_RANKS 64
static void test_many_exits_few_group_waits(void **state)
{
    fixture_t *f = *state;
    dt_placement_t place[MANY_RANKS];
    for (int r = 0; r < MANY_RANKS; r++)
        place[r] = (dt_placement_t){r, 0, r, MANY_RANKS, 0, 1};
    const char *argv[] = {"true", NULL};
    f->host.slots = MANY_RANKS;
    f->spec.np = MANY_RANKS;
    f->spec.placement = place;
    f->spec.argv = argv;
    f->spec.output = NULL; /* `true` writes nothing */
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
    group_waits = 0;
    counting_group_waits = 1;
    dt_worker_exit_t evs[MANY_RANKS + 1];
    int n = wait_all(f, evs, MANY_RANKS + 1);
    counting_group_waits = 0;
    assert_int_equal(n, MANY_RANKS);
    int seen[MANY_RANKS] = {0};
    for (int i = 0; i < n; i++) {
        assert_in_range(evs[i].rank, 0, MANY_RANKS - 1);
        assert_int_equal(evs[i].code, 0);
        seen[evs[i].rank]++;
    }
    for (int r = 0; r < MANY_RANKS; r++)
        assert_int_equal(seen[r], 1);
    if (group_waits > MANY_RANKS)
        fail_msg("%ld waits for a process group to report %d exits: the "
                 "cost of waiting grows with the square of the workers",
                 group_waits, MANY_RANKS);
}

/* A worker's background child, left in its group, that ends while other
 * workers run: wait() reaps it (no zombie for as long as dtctl runs). */
static void test_group_orphan_reaped_while_waiting(void **state)
{
    fixture_t *f = *state;
    char fifo[] = "/tmp/dt-test-orphan-XXXXXX";
    assert_non_null(mkdtemp(fifo));
    char path[sizeof fifo + 8];
    snprintf(path, sizeof path, "%s/f", fifo);
    assert_int_equal(mkfifo(path, 0600), 0);
    setenv("DT_TEST_FIFO", path, 1);
    /* Rank 0 leaves a child that ends once the test writes to the fifo;
     * rank 1 runs on, so wait() keeps being called. */
    const char *argv[] = {"sh", "-c",
                          "if [ \"$DT_RANK\" = 0 ]; then "
                          "read x < \"$DT_TEST_FIFO\" & echo $$ $!; "
                          "else echo $$ $$; exec sleep 100; fi",
                          NULL};
    const char *r0[] = {"DT_RANK=0", NULL}, *r1[] = {"DT_RANK=1", NULL};
    const char *const *rank_env[] = {r0, r1};
    f->spec.np = 2;
    f->spec.argv = argv;
    f->spec.rank_env = rank_env;
    assert_int_equal(f->ops->launch(f->ctx, &f->spec), DT_OK);
    dt_worker_exit_t ev;
    assert_int_equal(f->ops->wait(f->ctx, GUARD_MS, &ev), DT_OK);
    assert_int_equal(ev.rank, 0);
    wait_for_output(f, 1);
    long pids[4];
    read_pids(f->out.text[0][0], &pids[0], &pids[1]);
    read_pids(f->out.text[1][0], &pids[2], &pids[3]);
    assert_true(proc_state(pids[1], NULL) != 0); /* the orphan waits */
    FILE *w = fopen(path, "w");
    assert_non_null(w);
    fputs("go\n", w);
    fclose(w);
    /* Gone (reaped) after a few wait() calls; a zombie left by the
     * launcher would stay one: bounded by GUARD_MS, not timed. */
    for (int i = 0; i < GUARD_MS / 10 && proc_state(pids[1], NULL); i++)
        assert_int_equal(f->ops->wait(f->ctx, 10, &ev), DT_ERR_TIMEOUT);
    char st = proc_state(pids[1], NULL);
    unlink(path);
    rmdir(fifo);
    unsetenv("DT_TEST_FIFO");
    if (st) {
        fini_bounded(f, pids, 4);
        assert_int_equal(f->ops->init(NULL, &f->ctx), DT_OK);
        fail_msg("rank 0's ended child %ld is still there (state %c) "
                 "while wait() runs", pids[1], st);
    }
}

int main(void)
{
    unsetenv("DT_PLUGIN_PATH"); /* the build tree's modules must be found */
    *(void **)&real_waitpid = dlsym(RTLD_NEXT, "waitpid");
    if (!real_waitpid) {
        fprintf(stderr, "test_launcher_local: no libc waitpid: %s\n",
                dlerror());
        return 99;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_env_and_output_per_rank, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_exits_reported_once_each, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_signal_reaches_process_group,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_fini_kills_running_and_orphans,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_failure_is_clear, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_workdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_workdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remote_host_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_run_on_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_exits_few_group_waits,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_orphan_reaped_while_waiting,
                                        setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dt_plugins_unload_all();
    return rc;
}
