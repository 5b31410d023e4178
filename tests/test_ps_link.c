/* test_ps_link.c — a parameter server's connection to the store for its
 * looks at the workers' heartbeats (core/train/ps_link.c), against a
 * store in a child process. A first connection that failed (dtctl
 * stopped at that moment) is tried again at a later look, which then
 * reads the beat: the server once never tried again, blind to the beats
 * for the rest of the job (a worker evaluating alone was then taken for
 * hung). A connection that broke is opened again too: the server once
 * logged the client's "connection unusable" line at every look, for the
 * rest of the job. Each stretch of failure is said once, and the store's
 * answer again once. A worker's beat (core/train/ps_beat.c) uses the same
 * link: it once kept a broken connection for the rest of the job, logging
 * "connection unusable" at every beat (every half period) while no beat
 * reached the servers. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dt/log.h>
#include <dt/store.h>

#include "stderr_capture.h"
#include "store_child.h"
#include "train/ps_beat.h"
#include "train/ps_link.h"

typedef struct fixture {
    uint8_t token[DT_TOKEN_BYTES];
    store_child_t child;
} fixture_t;

/* The store, and the environment dtctl gives a server to reach it. */
static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    char hex[2 * DT_TOKEN_BYTES + 1];
    assert_non_null(f);
    assert_int_equal(dt_token_generate(f->token), DT_OK);
    assert_true(store_child_start(&f->child, f->token));
    dt_token_to_hex(f->token, hex);
    setenv("DT_RENDEZVOUS", f->child.where, 1);
    setenv("DT_JOB_TOKEN", hex, 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    store_child_end(&f->child);
    free(f);
    return 0;
}

/* A worker's beat, as its beat thread counts it. */
static void beat(const fixture_t *f, const char *key, int64_t times)
{
    dt_store_t *s = NULL;
    int64_t n;
    assert_int_equal(dt_store_connect(f->child.where, f->token, 10, &s),
                     DT_OK);
    assert_int_equal(dt_store_add(s, key, times, &n), DT_OK);
    dt_store_close(s);
}

static int count(const char *log, const char *what)
{
    int n = 0;
    for (const char *p = log; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

static void test_first_connection_failed(void **state)
{
    fixture_t *f = *state;
    dt_ps_link_t link = {0};
    int64_t n = -1;
    capture_t cap;
    assert_true(store_child_stop(&f->child));
    capture_begin(&cap);
    dt_status_t first = dt_ps_link_look(&link, "ps/beat/0", 0.3, &n);
    int resting = dt_ps_link_resting(&link, link.silent_at, 1.0);
    dt_status_t again = dt_ps_link_look(&link, "ps/beat/0", 0.3, &n);
    store_child_continue(&f->child);
    beat(f, "ps/beat/0", 7);
    dt_status_t back = dt_ps_link_look(&link, "ps/beat/0", 5.0, &n);
    char *log = capture_end(&cap);
    dt_ps_link_close(&link);
    assert_int_not_equal(first, DT_OK);
    assert_true(resting);
    assert_int_not_equal(again, DT_OK);
    assert_int_equal(back, DT_OK);
    assert_int_equal(n, 7);
    /* The client's line and the server's, once; the retry quiet. */
    assert_int_equal(count(log, "handshake failed"), 1);
    assert_int_equal(count(log, "no connection to the rendezvous store for "
                                "the workers' heartbeats"),
                     1);
    assert_int_equal(count(log, "the rendezvous store answers heartbeats "
                                "again"),
                     1);
    free(log);
}

/* The test process's one connection to the store's port. */
static int store_fd(const fixture_t *f)
{
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        if (getpeername(fd, (struct sockaddr *)&sa, &len) == 0 &&
            sa.sin_family == AF_INET && ntohs(sa.sin_port) == f->child.port)
            return fd;
    }
    return -1;
}

static void test_broken_connection(void **state)
{
    fixture_t *f = *state;
    dt_ps_link_t link = {0};
    int64_t n = -1;
    beat(f, "ps/beat/1", 3);
    assert_int_equal(dt_ps_link_look(&link, "ps/beat/1", 5.0, &n), DT_OK);
    assert_int_equal(n, 3);
    int fd = store_fd(f);
    assert_true(fd >= 0);
    /* Its framing lost, as after a reset or a reply cut short. */
    assert_int_equal(shutdown(fd, SHUT_RDWR), 0);
    capture_t cap;
    capture_begin(&cap);
    dt_status_t broke = dt_ps_link_look(&link, "ps/beat/1", 5.0, &n);
    beat(f, "ps/beat/1", 1);
    dt_status_t looks[3];
    for (int i = 0; i < 3; i++)
        looks[i] = dt_ps_link_look(&link, "ps/beat/1", 5.0, &n);
    char *log = capture_end(&cap);
    dt_ps_link_close(&link);
    assert_int_not_equal(broke, DT_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(looks[i], DT_OK);
    assert_int_equal(n, 4);
    assert_int_equal(count(log, "connection unusable"), 0);
    assert_int_equal(count(log, "did not take heartbeat 'ps/beat/1'"), 1);
    assert_int_equal(count(log, "the rendezvous store answers heartbeats "
                                "again"),
                     1);
    free(log);
}

/* The counter at key, read on a connection of its own. */
static int64_t counter(const fixture_t *f, const char *key)
{
    dt_store_t *s = NULL;
    int64_t n = -1;
    assert_int_equal(dt_store_connect(f->child.where, f->token, 10, &s),
                     DT_OK);
    assert_int_equal(dt_store_add(s, key, 0, &n), DT_OK);
    dt_store_close(s);
    return n;
}

/* Past the link's rest after a failure (a period): the next beat tries. */
static void sleep_past(double period)
{
    struct timespec ts = {0, (long)(2 * period * 1e9)};
    nanosleep(&ts, NULL);
}

static void test_beat_reconnects(void **state)
{
    fixture_t *f = *state;
    /* each beat waits up to 1 s (T/2) for the store; a short rest */
    ps_live_t live = {.timeout = 2.0, .period = 0.05};
    dt_ps_beat_t b = {0};
    assert_true(dt_ps_beat_init(&b, live));
    dt_ps_beat_once(&b);
    assert_int_equal(counter(f, b.key), 1);
    int fd = store_fd(f);
    assert_true(fd >= 0);
    assert_int_equal(shutdown(fd, SHUT_RDWR), 0); /* its framing lost */
    capture_t cap;
    capture_begin(&cap);
    dt_ps_beat_once(&b); /* finds it broken */
    for (int i = 0; i < 3; i++) {
        sleep_past(live.period);
        dt_ps_beat_once(&b);
    }
    char *log = capture_end(&cap);
    int64_t n = counter(f, b.key);
    dt_ps_beat_free(&b);
    assert_int_equal(n, 4); /* the first, and the three after it broke */
    assert_int_equal(count(log, "connection unusable"), 0);
    assert_int_equal(count(log, "did not take heartbeat"), 1);
    assert_int_equal(count(log, "the rendezvous store answers heartbeats "
                                "again"),
                     1);
    free(log);
}

/* The store out of reach for a while (its host cut off): the beats that
 * find none are skipped, said once for the whole outage (the broken
 * connection, then the new ones that fail), and counted again, said
 * once, when a store answers. */
static void test_beat_outage(void **state)
{
    fixture_t *f = *state;
    ps_live_t live = {.timeout = 2.0, .period = 0.05};
    dt_ps_beat_t b = {0};
    assert_true(dt_ps_beat_init(&b, live));
    dt_ps_beat_once(&b);
    store_child_end(&f->child); /* each try now waits T/2 in vain */
    capture_t cap;
    capture_begin(&cap);
    for (int i = 0; i < 3; i++) { /* the first finds the connection gone */
        sleep_past(live.period);
        dt_ps_beat_once(&b);
    }
    /* back (at a new address: the test's store cannot have its old port
     * again; the environment is read at each try) */
    assert_true(store_child_start(&f->child, f->token));
    setenv("DT_RENDEZVOUS", f->child.where, 1);
    sleep_past(live.period);
    dt_ps_beat_once(&b);
    char *log = capture_end(&cap);
    int64_t n = counter(f, b.key);
    dt_ps_beat_free(&b);
    assert_int_equal(n, 1);
    assert_int_equal(count(log, "connection unusable"), 0);
    assert_int_equal(count(log, "did not take heartbeat") +
                         count(log, "no connection to the rendezvous store"),
                     1);
    assert_int_equal(count(log, "the rendezvous store answers heartbeats "
                                "again"),
                     1);
    free(log);
}

int main(void)
{
    /* the counts below are of the lines said at the default level: a
     * DT_LOG_LEVEL=debug run would also see the quiet retries' lines */
    dt_log_set_level(DT_LOG_INFO);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_connection_failed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_broken_connection, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_beat_reconnects, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_beat_outage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
