/* test_tcp_cause.c — the tcp transport's failure path (tcp_cause.c) with
 * a store that answered its probe and then stopped (SIGSTOP, as a dtctl
 * stopped, or its host cut off, in the middle of a failure): every later
 * request waits at most DT_STORE_FAILURE_WAIT_S, and the first write it
 * leaves unanswered ends the path's use of the store. Each request once
 * waited the store client's 60 s (a GET 65 s): a rank lingered minutes
 * after its own timeout, holding its GPU. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <dt/store.h>

#include "stderr_capture.h"
#include "store_child.h"
#include "tcp.h"

/* A hang guard, not a measurement: bounded, each call below takes 5 to
 * 10 s; unbounded, 60 s or more. */
#define HANG_GUARD_S 40

static pid_t store_pid;
static int report_fd = STDERR_FILENO; /* the real stderr while captured */

static void hang_guard(int sig)
{
    static const char msg[] = "FAIL: the failure path still waited on the "
                              "stopped store after 40 s\n";
    (void)sig;
    if (write(report_fd, msg, sizeof msg - 1) < 0)
        _exit(2);
    kill(store_pid, SIGKILL);
    _exit(1);
}

typedef struct fixture {
    uint8_t token[DT_TOKEN_BYTES];
    store_child_t child;
    tcp_ctx_t c;
} fixture_t;

/* Rank 0 of 2 whose failure path's probe the store answered; then the
 * store stops. */
static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(dt_token_generate(f->token), DT_OK);
    assert_true(store_child_start(&f->child, f->token));
    assert_int_equal(dt_store_connect(f->child.where, f->token, 10,
                                      &f->c.store),
                     DT_OK);
    f->c.rank = 0;
    f->c.size = 2;
    f->c.timeout = 4;
    f->c.epoch = 1;
    f->c.wait_note_after = 0.1;
    f->c.store_answered = 1;
    assert_true(store_child_stop(&f->child));
    store_pid = f->child.pid;
    signal(SIGALRM, hang_guard);
    alarm(HANG_GUARD_S);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    alarm(0);
    store_child_end(&f->child);
    free(f);
    return 0;
}

/* Its own record of the hung peer: the look and the vote go unanswered;
 * the vote's timeout ends the store's use for this failure, said once. */
static void test_resolve_after_probe(void **state)
{
    fixture_t *f = *state;
    dt_store_t *store = f->c.store;
    int failed = -1, detector = -1;
    char how[TCP_HOW_MAX] = "";
    capture_t cap;
    capture_begin(&cap);
    report_fd = cap.saved_fd;
    int found = tcp_cause_resolve(&f->c, 1, "hung", &failed, &detector, how);
    char *log = capture_end(&cap);
    report_fd = STDERR_FILENO;
    dt_store_close(store);
    assert_int_equal(found, 0);
    assert_null(f->c.store);
    if (!strstr(log, "tcp: rank 0: the rendezvous store did not answer "
                     "this rank's vote within 5 s"))
        fail_msg("no warning that the store stopped answering:\n%s", log);
    free(log);
}

/* The walk along the wait records: its first look goes unanswered and
 * ends it at the peer this rank timed out on. */
static void test_silent_root_after_probe(void **state)
{
    fixture_t *f = *state;
    char chain[64];
    int root = tcp_silent_root(&f->c, 1, chain, sizeof chain);
    dt_store_close(f->c.store);
    assert_int_equal(root, 1);
    assert_string_equal(chain, "1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resolve_after_probe, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_silent_root_after_probe, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
