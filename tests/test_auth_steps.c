/* test_auth_steps.c — dt/auth.h's connector one step at a time (as the tcp
 * wireup runs many at once) against the stepwise acceptor, both in this
 * one thread over a socket pair: the same token authenticates both ways
 * and names rank and channel; another token is refused on both sides;
 * handshakes on several sockets interleave; a silent acceptor times out;
 * a stranger that closes or stays silent is described to the acceptor
 * (not logged: dt_auth_acceptor_stray) with DT_ERR_PEER / DT_ERR_TIMEOUT;
 * the blocking dt_auth_connect (built on the steps) waits for a late
 * acceptor. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <dt/auth.h>
#include <dt/clock.h>

static const uint8_t token_a[32] = "token-a-token-a-token-a-token-a";
static const uint8_t token_b[32] = "token-b-token-b-token-b-token-b";

typedef struct pair {
    int sv[2];
    dt_auth_connector_t *c;
    dt_auth_acceptor_t *x;
    dt_status_t cst, xst; /* DT_DECLINED while running */
    int peer;
    uint32_t channel;
} pair_t;

/* Connector rank 3 to acceptor rank 1 of a job of 4, on channel ch. */
static void pair_start(pair_t *p, const uint8_t *ctoken, uint32_t ch)
{
    memset(p, 0, sizeof *p);
    assert_int_equal(
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p->sv), 0);
    dt_auth_t ca = {"test", ctoken, 32, 3, 4, 2.0};
    dt_auth_t aa = {"test", token_a, 32, 1, 4, 2.0};
    assert_int_equal(dt_auth_acceptor_new(p->sv[1], &aa, 2, 4, 2, &p->x),
                     DT_OK);
    assert_int_equal(dt_auth_connector_new(p->sv[0], &ca, 1, ch, &p->c),
                     DT_OK);
    p->cst = p->xst = DT_DECLINED;
    p->peer = -1;
}

/* One step of each side that is still running. */
static void pair_step(pair_t *p)
{
    if (p->xst == DT_DECLINED)
        p->xst = dt_auth_acceptor_step(p->x, &p->peer, &p->channel);
    if (p->xst != DT_DECLINED && p->xst != DT_OK && p->sv[1] >= 0) {
        close(p->sv[1]); /* a refused connector sees the close */
        p->sv[1] = -1;
    }
    if (p->cst == DT_DECLINED)
        p->cst = dt_auth_connector_step(p->c);
}

static int pair_running(const pair_t *p)
{
    return p->cst == DT_DECLINED || p->xst == DT_DECLINED;
}

static void pair_end(pair_t *p)
{
    dt_auth_connector_free(p->c);
    dt_auth_acceptor_free(p->x);
    close(p->sv[0]);
    if (p->sv[1] >= 0)
        close(p->sv[1]);
}

static void test_same_token_both_ways(void **state)
{
    (void)state;
    pair_t p;
    pair_start(&p, token_a, 1);
    for (int i = 0; i < 100 && pair_running(&p); i++)
        pair_step(&p);
    assert_int_equal(p.cst, DT_OK);
    assert_int_equal(p.xst, DT_OK);
    assert_int_equal(p.peer, 3);
    assert_int_equal(p.channel, 1);
    pair_end(&p);
}

static void test_other_token_refused(void **state)
{
    (void)state;
    pair_t p;
    pair_start(&p, token_b, 0);
    for (int i = 0; i < 100 && pair_running(&p); i++)
        pair_step(&p);
    assert_int_equal(p.xst, DT_ERR_AUTH);
    assert_int_equal(p.cst, DT_ERR_AUTH);
    pair_end(&p);
}

/* Three handshakes, stepped round-robin (each only a step at a time),
 * all end authenticated on their own channels. */
static void test_interleaved(void **state)
{
    (void)state;
    pair_t p[3];
    for (int k = 0; k < 3; k++)
        pair_start(&p[k], token_a, (uint32_t)(k % 2));
    for (int i = 0; i < 100; i++)
        for (int k = 2; k >= 0; k--)
            pair_step(&p[k]);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(p[k].cst, DT_OK);
        assert_int_equal(p[k].xst, DT_OK);
        assert_int_equal(p[k].channel, (uint32_t)(k % 2));
        pair_end(&p[k]);
    }
}

/* Nobody answers: a step after the deadline says so, not DT_DECLINED. */
static void test_silent_acceptor_times_out(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                     0);
    /* 1 s: the first step comes well before it even on a loaded host */
    dt_auth_t ca = {"test", token_a, 32, 3, 4, 1.0};
    dt_auth_connector_t *c = NULL;
    assert_int_equal(dt_auth_connector_new(sv[0], &ca, 1, 0, &c), DT_OK);
    assert_int_equal(dt_auth_connector_step(c), DT_DECLINED);
    usleep(1100000);
    assert_true(dt_clock_now() >= dt_auth_connector_deadline(c));
    assert_int_equal(dt_auth_connector_step(c), DT_ERR_TIMEOUT);
    assert_int_equal(dt_auth_connector_fd(c), sv[0]);
    dt_auth_connector_free(c);
    close(sv[0]);
    close(sv[1]);
}

/* The acceptor's side of a connection that never says who it is: closed
 * at once (a port scanner), or silent past the deadline. */
static void test_stranger_described(void **state)
{
    (void)state;
    int sv[2];
    dt_auth_t aa = {"test", token_a, 32, 1, 4, 2.0};
    dt_auth_acceptor_t *x = NULL;
    int peer = -1;
    uint32_t ch = 0;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                     0);
    assert_int_equal(dt_auth_acceptor_new(sv[1], &aa, 2, 4, 1, &x), DT_OK);
    assert_null(dt_auth_acceptor_stray(x));
    close(sv[0]);
    assert_int_equal(dt_auth_acceptor_step(x, &peer, &ch), DT_ERR_PEER);
    assert_string_equal(dt_auth_acceptor_stray(x),
                        "it closed before saying who it is");
    dt_auth_acceptor_free(x);
    close(sv[1]);

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                     0);
    aa.timeout = 0.05;
    assert_int_equal(dt_auth_acceptor_new(sv[1], &aa, 2, 4, 1, &x), DT_OK);
    usleep(100000); /* past the deadline: the step reads nothing then */
    assert_true(dt_clock_now() >= dt_auth_acceptor_deadline(x));
    assert_int_equal(dt_auth_acceptor_step(x, &peer, &ch), DT_ERR_TIMEOUT);
    assert_string_equal(dt_auth_acceptor_stray(x),
                        "it said nothing about who it is in time");
    assert_int_equal(peer, -1);
    dt_auth_acceptor_free(x);
    close(sv[0]);
    close(sv[1]);
}

typedef struct late {
    int fd;
    dt_status_t st;
    int peer;
} late_t;

/* The acceptor answers only after the connector's first step found
 * nothing to read (the sleep makes that path certain, it times nothing). */
static void *late_acceptor(void *arg)
{
    late_t *l = arg;
    usleep(100000);
    dt_auth_t aa = {"test", token_a, 32, 1, 4, 5.0};
    uint32_t ch = 9;
    l->st = dt_auth_accept(l->fd, &aa, 2, 4, 1, &l->peer, &ch);
    return NULL;
}

static void test_blocking_connect_waits(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    late_t l = {sv[1], DT_ERR_INTERNAL, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, late_acceptor, &l), 0);
    dt_auth_t ca = {"test", token_a, 32, 2, 4, 5.0};
    assert_int_equal(dt_auth_connect(sv[0], &ca, 1, 0), DT_OK);
    pthread_join(t, NULL);
    assert_int_equal(l.st, DT_OK);
    assert_int_equal(l.peer, 2);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_token_both_ways),
        cmocka_unit_test(test_other_token_refused),
        cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_silent_acceptor_times_out),
        cmocka_unit_test(test_stranger_described),
        cmocka_unit_test(test_blocking_connect_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
