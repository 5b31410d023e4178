/* test_store.c — the rendezvous store: server and clients in one process
 * (threads), including hostile clients that must not crash or stall it,
 * and raw-socket clients that speak the handshake of docs/RENDEZVOUS.md
 * themselves to check the server's side of it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dt/store.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "stderr_capture.h"

#define NTHREADS 4
#define NADDS 200

typedef struct fixture {
    uint8_t token[DT_TOKEN_BYTES];
    dt_store_server_t *srv;
    int port;
    char where[64];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(dt_token_generate(f->token), DT_OK);
    assert_int_equal(dt_store_server_start("127.0.0.1", 0, f->token, &f->srv),
                     DT_OK);
    f->port = dt_store_server_port(f->srv);
    snprintf(f->where, sizeof f->where, "127.0.0.1:%d", f->port);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    dt_store_server_stop(f->srv);
    free(f);
    return 0;
}

static dt_store_t *client(const fixture_t *f)
{
    dt_store_t *s = NULL;
    assert_int_equal(dt_store_connect(f->where, f->token, 10, &s), DT_OK);
    return s;
}

/* A plain TCP connection to the store, for speaking garbage. */
static int raw_connect(const fixture_t *f)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)f->port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* 1 when the server closed fd (EOF) within 30 s. */
static int closed_by_server(int fd)
{
    char buf[256];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, 30000) == 1) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0)
            return 1;
    }
    return 0;
}

/* A good client can do a full round trip. */
static void assert_store_serves(const fixture_t *f, const char *key)
{
    dt_store_t *s = client(f);
    assert_int_equal(dt_store_set(s, key, "ok", 2), DT_OK);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(dt_store_get(s, key, 5, &v, &len), DT_OK);
    assert_int_equal(len, 2);
    assert_memory_equal(v, "ok", 2);
    free(v);
    dt_store_close(s);
}

static void test_set_get(void **state)
{
    fixture_t *f = *state;
    dt_store_t *s = client(f);
    assert_int_equal(dt_store_set(s, "addr/0", "10.0.0.1:5000", 13), DT_OK);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(dt_store_get(s, "addr/0", 5, &v, &len), DT_OK);
    assert_int_equal(len, 13);
    assert_string_equal(v, "10.0.0.1:5000"); /* NUL-terminated for text */
    free(v);
    /* Overwrite, and an empty value. */
    assert_int_equal(dt_store_set(s, "addr/0", "x", 1), DT_OK);
    assert_int_equal(dt_store_set(s, "empty", NULL, 0), DT_OK);
    assert_int_equal(dt_store_get(s, "addr/0", 5, &v, &len), DT_OK);
    assert_int_equal(len, 1);
    free(v);
    assert_int_equal(dt_store_get(s, "empty", 5, &v, &len), DT_OK);
    assert_int_equal(len, 0);
    free(v);
    /* A missing key with no wait times out, and the connection stays good. */
    assert_int_equal(dt_store_get(s, "missing", 0, &v, &len), DT_ERR_TIMEOUT);
    assert_int_equal(dt_store_get(s, "missing", 0.05, &v, &len),
                     DT_ERR_TIMEOUT);
    /* A deadline already passed (callers pass "deadline - now") looks
     * once; it once meant "wait forever" (the alarm ends a hang). */
    alarm(20);
    assert_int_equal(dt_store_get(s, "missing", -0.001, &v, &len),
                     DT_ERR_TIMEOUT);
    assert_int_equal(dt_store_barrier(s, "passed", 2, -1), DT_ERR_TIMEOUT);
    alarm(0);
    assert_int_equal(dt_store_get(s, "addr/0", 5, &v, &len), DT_OK);
    free(v);
    /* Keys are bounded and non-empty. */
    assert_int_equal(dt_store_set(s, "", "x", 1), DT_ERR_INVALID);
    dt_store_close(s);
}

/* dt_store_lookup: many keys in one call (more than one batch of 64),
 * set ones with their values, unset ones NULL, nothing waited for; the
 * connection stays in step for the requests after it. */
static void test_lookup_many(void **state)
{
    fixture_t *f = *state;
    dt_store_t *s = client(f);
    enum { N = 150 };
    char keys[N][32];
    const char *kp[N];
    void *vals[N];
    size_t lens[N];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "look/%d", i);
        kp[i] = keys[i];
        if (i % 3 != 1) { /* every third unset */
            char v[32];
            snprintf(v, sizeof v, "value %d", i * 7);
            assert_int_equal(dt_store_set(s, keys[i], v, strlen(v)), DT_OK);
        }
    }
    alarm(20); /* an unset key must not be waited for */
    assert_int_equal(dt_store_lookup(s, kp, N, vals, lens), DT_OK);
    alarm(0);
    for (int i = 0; i < N; i++) {
        if (i % 3 == 1) {
            assert_null(vals[i]);
            continue;
        }
        char v[32];
        snprintf(v, sizeof v, "value %d", i * 7);
        assert_non_null(vals[i]);
        assert_int_equal(lens[i], strlen(v));
        assert_string_equal(vals[i], v); /* NUL-terminated */
        free(vals[i]);
    }
    /* Nothing to look up; a bad key is refused before anything is sent. */
    assert_int_equal(dt_store_lookup(s, kp, 0, vals, lens), DT_OK);
    const char *bad[2] = {"look/0", ""};
    assert_int_equal(dt_store_lookup(s, bad, 2, vals, lens), DT_ERR_INVALID);
    /* Still in step: a get and a waiting get after it. */
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(dt_store_get(s, "look/3", 5, &v, &len), DT_OK);
    assert_string_equal(v, "value 21");
    free(v);
    assert_int_equal(dt_store_get(s, "look/1", 0.05, &v, &len),
                     DT_ERR_TIMEOUT);
    dt_store_close(s);
}

typedef struct waiter_arg {
    const fixture_t *f;
    dt_status_t st;
    char value[32];
} waiter_arg_t;

static void *waiter(void *p)
{
    waiter_arg_t *a = p;
    dt_store_t *s = NULL;
    int64_t r;
    a->st = dt_store_connect(a->f->where, a->f->token, 10, &s);
    if (a->st == DT_OK)
        a->st = dt_store_add(s, "waiting", 1, &r);
    if (a->st == DT_OK) {
        void *v = NULL;
        size_t len = 0;
        a->st = dt_store_get(s, "late", 30, &v, &len);
        if (a->st == DT_OK)
            snprintf(a->value, sizeof a->value, "%.*s", (int)len, (char *)v);
        free(v);
    }
    dt_store_close(s);
    return NULL;
}

static void test_get_waits_for_later_set(void **state)
{
    fixture_t *f = *state;
    waiter_arg_t a[NTHREADS];
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        a[i] = (waiter_arg_t){.f = f, .st = DT_ERR_INTERNAL};
        assert_int_equal(pthread_create(&t[i], NULL, waiter, &a[i]), 0);
    }
    /* Set the key only after every waiter has announced itself. */
    dt_store_t *s = client(f);
    int64_t n = 0;
    while (n < NTHREADS) {
        assert_int_equal(dt_store_add(s, "waiting", 0, &n), DT_OK);
        usleep(1000);
    }
    assert_int_equal(dt_store_set(s, "late", "value-42", 8), DT_OK);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].st, DT_OK);
        assert_string_equal(a[i].value, "value-42");
    }
    dt_store_close(s);
}

typedef struct adder_arg {
    const fixture_t *f;
    int64_t results[NADDS];
    dt_status_t st;
} adder_arg_t;

static void *adder(void *p)
{
    adder_arg_t *a = p;
    dt_store_t *s = NULL;
    a->st = dt_store_connect(a->f->where, a->f->token, 10, &s);
    for (int i = 0; i < NADDS && a->st == DT_OK; i++)
        a->st = dt_store_add(s, "counter", 1, &a->results[i]);
    dt_store_close(s);
    return NULL;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static void test_add_is_atomic(void **state)
{
    fixture_t *f = *state;
    adder_arg_t *a = calloc(NTHREADS, sizeof *a);
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        a[i].f = f;
        assert_int_equal(pthread_create(&t[i], NULL, adder, &a[i]), 0);
    }
    int64_t all[NTHREADS * NADDS];
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].st, DT_OK);
        memcpy(all + i * NADDS, a[i].results, sizeof a[i].results);
    }
    /* Every add saw a distinct value: exactly 1..N once each. */
    qsort(all, NTHREADS * NADDS, sizeof all[0], cmp_i64);
    for (int i = 0; i < NTHREADS * NADDS; i++)
        assert_int_equal(all[i], i + 1);
    dt_store_t *s = client(f);
    int64_t r = 0;
    assert_int_equal(dt_store_add(s, "counter", -5, &r), DT_OK);
    assert_int_equal(r, NTHREADS * NADDS - 5);
    /* The counter reads as decimal text. */
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(dt_store_get(s, "counter", 1, &v, &len), DT_OK);
    char want[32];
    snprintf(want, sizeof want, "%d", NTHREADS * NADDS - 5);
    assert_string_equal(v, want);
    free(v);
    /* Adding to a non-number is refused, and the store goes on. */
    assert_int_equal(dt_store_set(s, "text", "abc", 3), DT_OK);
    assert_int_equal(dt_store_add(s, "text", 1, &r), DT_ERR_INVALID);
    assert_int_equal(dt_store_add(s, "counter", 0, &r), DT_OK);
    dt_store_close(s);
    free(a);
}

typedef struct barrier_arg {
    const fixture_t *f;
    dt_status_t st;
    int64_t seen[2];
} barrier_arg_t;

static void *barrier_worker(void *p)
{
    barrier_arg_t *a = p;
    dt_store_t *s = NULL;
    a->st = dt_store_connect(a->f->where, a->f->token, 10, &s);
    /* Twice with the same name: a filled barrier can be used again. */
    for (int round = 0; round < 2 && a->st == DT_OK; round++) {
        int64_t r;
        char key[32];
        snprintf(key, sizeof key, "arrived/%d", round);
        if ((a->st = dt_store_add(s, key, 1, &r)) != DT_OK ||
            (a->st = dt_store_barrier(s, "step", NTHREADS, 30)) != DT_OK ||
            (a->st = dt_store_add(s, key, 0, &a->seen[round])) != DT_OK)
            break;
    }
    dt_store_close(s);
    return NULL;
}

static void test_barrier(void **state)
{
    fixture_t *f = *state;
    barrier_arg_t a[NTHREADS];
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        a[i] = (barrier_arg_t){.f = f, .st = DT_ERR_INTERNAL};
        assert_int_equal(pthread_create(&t[i], NULL, barrier_worker, &a[i]),
                         0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].st, DT_OK);
        /* Nobody left the barrier before everyone had arrived. */
        assert_int_equal(a[i].seen[0], NTHREADS);
        assert_int_equal(a[i].seen[1], NTHREADS);
    }
}

typedef struct mixed_arg {
    const fixture_t *f;
    int n;
    dt_status_t st;
} mixed_arg_t;

static void *mixed_worker(void *p)
{
    mixed_arg_t *a = p;
    dt_store_t *s = NULL;
    a->st = dt_store_connect(a->f->where, a->f->token, 10, &s);
    if (a->st == DT_OK)
        a->st = dt_store_barrier(s, "mixed", a->n, 0.5);
    dt_store_close(s);
    return NULL;
}

static void test_barrier_timeout_and_mismatch(void **state)
{
    fixture_t *f = *state;
    dt_store_t *s = client(f);
    /* Alone in a barrier of 2: times out, and leaves it... */
    assert_int_equal(dt_store_barrier(s, "lonely", 2, 0.05), DT_ERR_TIMEOUT);
    /* ...so the name is free again, even for another count. */
    assert_int_equal(dt_store_barrier(s, "lonely", 1, 5), DT_OK);
    dt_store_close(s);
    /* Two counts for one name: whoever comes second is refused (not left
     * hanging), the first times out alone. */
    mixed_arg_t a[2] = {{.f = f, .n = 3}, {.f = f, .n = 2}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, mixed_worker, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_true((a[0].st == DT_ERR_INVALID && a[1].st == DT_ERR_TIMEOUT) ||
                (a[0].st == DT_ERR_TIMEOUT && a[1].st == DT_ERR_INVALID));
    assert_store_serves(f, "after-barrier");
}

static void test_wrong_token_refused(void **state)
{
    fixture_t *f = *state;
    uint8_t other[DT_TOKEN_BYTES];
    memcpy(other, f->token, sizeof other);
    other[7] ^= 0x40; /* one bit off */
    dt_store_t *s = NULL;
    assert_int_equal(dt_store_connect(f->where, other, 5, &s), DT_ERR_AUTH);
    assert_null(s);
    assert_store_serves(f, "after-bad-token");
}

/* ---- the handshake spoken by hand (docs/RENDEZVOUS.md) ------------------
 * HELLO     01 | "DTSTORE1" | nonce_c (32)  (a dt before protocol versions;
 *           this one's HELLO: raw_client)
 * CHALLENGE 02 | nonce_s (32) | proof_s (32)
 * PROOF     03 | proof_c (32)
 * WELCOME   04
 * proof_x = HMAC-SHA256(token, "dt-store-<server|client>" 0 nonce_c nonce_s)
 * (the client's of DTSTORE2: raw_client)
 * Every message is a frame: a 4-byte big-endian length, then the body. The
 * proofs are computed here from the document, not with libdt's code. */
#define NONCE 32
#define MAC 32

static void hs_proof(const uint8_t *token, const char *label,
                     const uint8_t *nonce_c, const uint8_t *nonce_s,
                     uint8_t out[MAC])
{
    uint8_t msg[16 + 2 * NONCE];
    size_t l = strlen(label) + 1;
    assert_true(l <= 16);
    memcpy(msg, label, l);
    memcpy(msg + l, nonce_c, NONCE);
    memcpy(msg + l + NONCE, nonce_s, NONCE);
    unsigned int len = 0;
    assert_non_null(HMAC(EVP_sha256(), token, DT_TOKEN_BYTES, msg,
                         l + 2 * NONCE, out, &len));
    assert_int_equal(len, MAC);
}

/* 1 when the whole frame was sent (a server that dropped the connection
 * makes later sends fail: not an error where that is expected). */
static int send_frame_raw(int fd, const uint8_t *body, size_t len)
{
    uint8_t buf[4 + 256];
    assert_true(len <= 256);
    buf[0] = (uint8_t)(len >> 24);
    buf[1] = (uint8_t)(len >> 16);
    buf[2] = (uint8_t)(len >> 8);
    buf[3] = (uint8_t)len;
    memcpy(buf + 4, body, len);
    return send(fd, buf, 4 + len, MSG_NOSIGNAL) == (ssize_t)(4 + len);
}

/* Exactly len bytes within 30 s; 0 on EOF, error or timeout. */
static int recv_exact(int fd, uint8_t *buf, size_t len)
{
    size_t got = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (got < len && poll(&p, 1, 30000) == 1) {
        ssize_t r = recv(fd, buf + got, len - got, 0);
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    return got == len;
}

/* Up to the PROOF: a connection that has sent hello (with nonce_c) and
 * checked that the server proved the token (so this file's proofs match
 * the server's). */
static int raw_greet(const fixture_t *f, const uint8_t *hello, size_t len,
                     const uint8_t nonce_c[NONCE], uint8_t nonce_s[NONCE])
{
    int fd = raw_connect(f);
    assert_true(send_frame_raw(fd, hello, len));
    uint8_t ch[4 + 1 + NONCE + MAC], want[MAC];
    assert_true(recv_exact(fd, ch, sizeof ch));
    assert_int_equal(ch[3], 1 + NONCE + MAC);
    assert_int_equal(ch[4], 0x02);
    memcpy(nonce_s, ch + 5, NONCE);
    hs_proof(f->token, "dt-store-server", nonce_c, nonce_s, want);
    assert_memory_equal(ch + 5 + NONCE, want, MAC);
    return fd;
}

/* The HELLO of a dt before protocol versions: what a stranger who knows
 * the old greeting sends (its proofs are checked like any other). */
static int raw_hello(const fixture_t *f, uint8_t nonce_c[NONCE],
                     uint8_t nonce_s[NONCE])
{
    uint8_t hello[1 + 8 + NONCE] = {0x01, 'D', 'T', 'S', 'T', 'O', 'R', 'E',
                                    '1'};
    for (size_t i = 0; i < NONCE; i++)
        nonce_c[i] = (uint8_t)rand();
    memcpy(hello + 9, nonce_c, NONCE);
    return raw_greet(f, hello, sizeof hello, nonce_c, nonce_s);
}

/* A SET and a GET frame (key length u16, key; GET: u32 timeout_ms first). */
static int send_set(int fd, const char *key, const char *value)
{
    uint8_t b[128];
    size_t kl = strlen(key), vl = strlen(value);
    b[0] = 0x10;
    b[1] = (uint8_t)(kl >> 8);
    b[2] = (uint8_t)kl;
    memcpy(b + 3, key, kl);
    memcpy(b + 3 + kl, value, vl);
    return send_frame_raw(fd, b, 3 + kl + vl);
}

static int send_get(int fd, const char *key)
{
    uint8_t b[128] = {0x11, 0, 0, 0, 0};
    size_t kl = strlen(key);
    b[5] = (uint8_t)(kl >> 8);
    b[6] = (uint8_t)kl;
    memcpy(b + 7, key, kl);
    return send_frame_raw(fd, b, 7 + kl);
}

/* An authenticated raw connection of this protocol: HELLO
 *   01 | "DTSTORE2" | nonce_c | u16 protocol | i32 rank (-1) | 4 empty
 *   texts (version, host, program, libdt: u8 length 0)
 * the server's proof checked, the client's proof
 *   HMAC-SHA256(token, "dt-store-client-2" 0 nonce_s HELLO)
 * and WELCOME. */
static int raw_client(const fixture_t *f)
{
    uint8_t nc[NONCE], ns[NONCE], proof[1 + MAC] = {0x03};
    uint8_t hello[1 + 8 + NONCE + 6 + 4] = {0x01, 'D', 'T', 'S', 'T', 'O',
                                            'R', 'E', '2'};
    for (size_t i = 0; i < NONCE; i++)
        nc[i] = (uint8_t)rand();
    memcpy(hello + 9, nc, NONCE);
    hello[9 + NONCE] = (uint8_t)(DT_PROTOCOL_VERSION >> 8);
    hello[10 + NONCE] = (uint8_t)DT_PROTOCOL_VERSION;
    memset(hello + 11 + NONCE, 0xff, 4); /* rank -1 */
    int fd = raw_greet(f, hello, sizeof hello, nc, ns);
    static const char label[] = "dt-store-client-2";
    uint8_t msg[sizeof label + NONCE + sizeof hello];
    memcpy(msg, label, sizeof label);
    memcpy(msg + sizeof label, ns, NONCE);
    memcpy(msg + sizeof label + NONCE, hello, sizeof hello);
    unsigned int len = 0;
    assert_non_null(HMAC(EVP_sha256(), f->token, DT_TOKEN_BYTES, msg,
                         sizeof msg, proof + 1, &len));
    assert_true(send_frame_raw(fd, proof, sizeof proof));
    uint8_t welcome[5];
    assert_true(recv_exact(fd, welcome, sizeof welcome));
    assert_memory_equal(welcome, "\0\0\0\1\4", 5);
    return fd;
}

/* The right proof from a raw client is welcomed and served: the framing
 * above is right, so the refusals below are refusals of the proof. */
static void test_raw_client_with_token_served(void **state)
{
    fixture_t *f = *state;
    int fd = raw_client(f);
    assert_true(send_set(fd, "raw/key", "raw-value"));
    assert_true(send_get(fd, "raw/key"));
    uint8_t r1[9], r2[9 + 9];
    assert_true(recv_exact(fd, r1, sizeof r1)); /* REPLY, DT_OK */
    assert_memory_equal(r1, "\0\0\0\5\x20\0\0\0\0", 9);
    assert_true(recv_exact(fd, r2, sizeof r2)); /* REPLY, DT_OK, value */
    assert_memory_equal(r2, "\0\0\0\16\x20\0\0\0\0raw-value", sizeof r2);
    close(fd);
    dt_store_t *s = client(f);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(dt_store_get(s, "raw/key", 5, &v, &len), DT_OK);
    assert_string_equal(v, "raw-value");
    free(v);
    dt_store_close(s);
}

/* BARRIER: u32 count, u32 timeout_ms, u16 name length, name. */
static int send_barrier(int fd, const char *name, uint32_t n, uint32_t ms)
{
    uint8_t b[64] = {0x13};
    size_t kl = strlen(name);
    for (int i = 0; i < 4; i++) {
        b[1 + i] = (uint8_t)(n >> (24 - 8 * i));
        b[5 + i] = (uint8_t)(ms >> (24 - 8 * i));
    }
    b[9] = (uint8_t)(kl >> 8);
    b[10] = (uint8_t)kl;
    memcpy(b + 11, name, kl);
    return send_frame_raw(fd, b, 11 + kl);
}

/* The status of the reply to a wait, or -1 when none came in ms. */
static long wait_reply_status(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return -1;
    uint8_t r[9];
    if (!recv_exact(fd, r, sizeof r) || r[4] != 0x20)
        return -1;
    return (long)(int32_t)((uint32_t)r[5] << 24 | (uint32_t)r[6] << 16 |
                           (uint32_t)r[7] << 8 | r[8]);
}

/* A store server in a child process, so that a test can stop it
 * (SIGSTOP) as a stopped dtctl is; f gets its token and address. */
static pid_t server_child(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(dt_token_generate(f->token), DT_OK);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        dt_store_server_t *srv = NULL;
        int port = -1;
        if (dt_store_server_start("127.0.0.1", 0, f->token, &srv) == DT_OK)
            port = dt_store_server_port(srv);
        if (write(p[1], &port, sizeof port) != sizeof port || port < 0)
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    int port = -1;
    assert_int_equal(read(p[0], &port, sizeof port), (ssize_t)sizeof port);
    close(p[0]);
    assert_true(port > 0);
    f->port = port;
    snprintf(f->where, sizeof f->where, "127.0.0.1:%d", port);
    return pid;
}

/* A waiter that is gone does not count, even when its disconnect and the
 * last arrival reach the server in the same poll round (it counted until
 * the end of the round: a barrier of 3 let 2 through). The server runs in
 * a child that is stopped while the disconnect and the arrival are sent,
 * so that it sees both at once. */
static void test_barrier_gone_waiter_in_same_round(void **state)
{
    (void)state;
    fixture_t f;
    pid_t pid = server_child(&f);
    int a = raw_client(&f), b = raw_client(&f), c = raw_client(&f);
    assert_true(send_barrier(a, "race", 3, 5000));
    assert_true(send_barrier(b, "race", 3, 800));
    /* Both are waiting (no answer yet). */
    assert_int_equal(wait_reply_status(a, 200), -1);
    assert_int_equal(wait_reply_status(b, 1), -1);
    int ws;
    assert_int_equal(kill(pid, SIGSTOP), 0);
    assert_int_equal(waitpid(pid, &ws, WUNTRACED), pid);
    assert_true(WIFSTOPPED(ws));
    close(a);
    assert_true(send_barrier(c, "race", 3, 800));
    usleep(50 * 1000); /* both in the server's socket buffers */
    assert_int_equal(kill(pid, SIGCONT), 0);
    /* Two of three are there: both time out, neither is let through. */
    long sb = wait_reply_status(b, 5000), sc = wait_reply_status(c, 5000);
    kill(pid, SIGKILL);
    waitpid(pid, &ws, 0);
    close(b);
    close(c);
    assert_int_equal(sb, DT_ERR_TIMEOUT);
    assert_int_equal(sc, DT_ERR_TIMEOUT);
}

/* The failure record of a failing rank whose store does not answer (a
 * stopped dtctl, a host cut off from dtctl's): the bounded record gives
 * up after its bound with a warning that the rank reports its own view,
 * where dt_store_culprit_record waited the client's 60 s per request (a
 * worker lingered minutes after its own error). With the store back, the
 * handle still works. A store that answers keeps the record. */
static void test_culprit_record_bounded(void **state)
{
    fixture_t *live = *state;
    dt_store_t *s = client(live);
    int rank = -1, det = -1;
    char how[DT_CULPRIT_HOW_MAX] = "";
    assert_int_equal(dt_store_culprit_record_bounded(s, 3, 1, "hung", 5.0),
                     DT_OK);
    assert_int_equal(dt_store_culprit_get(s, 1.0, &rank, &det, how), DT_OK);
    assert_int_equal(rank, 3);
    assert_int_equal(det, 1);
    assert_string_equal(how, "hung");
    assert_int_equal(dt_store_culprit_record_bounded(NULL, 3, 1, "hung", 5),
                     DT_ERR_INVALID);
    assert_int_equal(dt_store_culprit_record_bounded(s, 3, 1, "hung", 0),
                     DT_ERR_INVALID);
    dt_store_close(s);

    fixture_t f;
    pid_t pid = server_child(&f);
    s = client(&f);
    int ws;
    assert_int_equal(kill(pid, SIGSTOP), 0);
    assert_int_equal(waitpid(pid, &ws, WUNTRACED), pid);
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_store_culprit_record_bounded(s, 2, 0, "exited", 0.3);
    char *log = capture_end(&cap);
    kill(pid, SIGCONT);
    int64_t n = -1;
    dt_status_t after = dt_store_add(s, "after", 5, &n);
    dt_store_close(s);
    kill(pid, SIGKILL);
    waitpid(pid, &ws, 0);
    assert_int_equal(st, DT_ERR_TIMEOUT);
    if (!strstr(log, "the rendezvous store did not answer within") ||
        !strstr(log, "Rank 2's failure (exited) is not recorded"))
        fail_msg("no warning that the record was not kept:\n%s", log);
    free(log);
    assert_int_equal(after, DT_OK);
    assert_int_equal(n, 5);
}

/* A client that completes HELLO and sees the server's proof, then sends a
 * wrong proof of its own: the server must drop it and log so, and the SET
 * and GET it sends right behind the proof must never be served. The
 * wrong proofs: the right one with its last or first byte changed, the
 * server's own proof sent back, the client proof of another session
 * (replayed), and zeros. */
static void test_wrong_client_proof_dropped(void **state)
{
    fixture_t *f = *state;
    dt_store_t *s = client(f);
    assert_int_equal(dt_store_set(s, "addr/0", "10.0.0.1:5000", 13), DT_OK);
    uint8_t old_nc[NONCE], old_ns[NONCE];
    close(raw_hello(f, old_nc, old_ns)); /* a session to replay from */
    const char *kinds[] = {"last byte", "first byte", "server's proof",
                           "replayed", "zeros"};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        uint8_t nc[NONCE], ns[NONCE], proof[1 + MAC] = {0x03};
        capture_t cap;
        capture_begin(&cap);
        int fd = raw_hello(f, nc, ns);
        switch (k) {
        case 0:
        case 1:
            hs_proof(f->token, "dt-store-client", nc, ns, proof + 1);
            proof[k == 0 ? MAC : 1] ^= 0x01;
            break;
        case 2: hs_proof(f->token, "dt-store-server", nc, ns, proof + 1); break;
        case 3:
            hs_proof(f->token, "dt-store-client", old_nc, old_ns, proof + 1);
            break;
        default: break;
        }
        /* The requests may meet a closed connection: not checked. */
        (void)(send_frame_raw(fd, proof, sizeof proof) &&
               send_set(fd, "addr/0", "6.6.6.6:666") && send_get(fd, "addr/0"));
        /* Closed without a byte: no WELCOME, no reply to either request
         * (a reset, as the server closes with requests unread, is a close
         * too). */
        uint8_t b;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, 30000);
        ssize_t r = ready == 1 ? recv(fd, &b, 1, 0) : -2;
        int closed = r == 0 || (r == -1 && errno == ECONNRESET);
        close(fd);
        char *log = capture_end(&cap);
        if (!closed)
            fail_msg("wrong client proof (%s): the server %s", kinds[k],
                     r > 0 ? "answered it" : "kept the connection open");
        if (!strstr(log, "rendezvous store: dropped connection from "
                         "127.0.0.1:") ||
            !strstr(log, "authentication failed"))
            fail_msg("wrong client proof (%s): no log line names the drop; "
                     "log:\n%s",
                     kinds[k], log);
        free(log);
    }
    /* Strangers: none of them counts as a worker of another dt. */
    assert_int_equal(dt_store_server_refused(f->srv), 0);
    /* The key is as the good client left it. */
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(dt_store_get(s, "addr/0", 5, &v, &len), DT_OK);
    assert_string_equal(v, "10.0.0.1:5000");
    free(v);
    dt_store_close(s);
    assert_store_serves(f, "after-wrong-proofs");
}

/* A fake server that knows no token: the client must refuse it (mutual
 * authentication), without sending its own proof. */
static void *fake_server(void *p)
{
    int lfd = *(int *)p;
    int fd = accept(lfd, NULL, NULL);
    uint8_t buf[2048];
    if (fd >= 0) {
        /* The whole HELLO, as long as its frame says (it may arrive in
         * pieces). */
        size_t got = 0, want = 4;
        while (got < want && want <= sizeof buf) {
            ssize_t r = recv(fd, buf + got, want - got, 0);
            if (r <= 0)
                break;
            got += (size_t)r;
            if (got == 4)
                want = 4 + ((size_t)buf[0] << 24 | (size_t)buf[1] << 16 |
                            (size_t)buf[2] << 8 | buf[3]);
        }
        uint8_t frame[4 + 65] = {0, 0, 0, 65, 0x02};
        for (size_t i = 5; i < sizeof frame; i++)
            frame[i] = (uint8_t)(i * 37);
        send(fd, frame, sizeof frame, MSG_NOSIGNAL);
        /* If the client answered, it would arrive here: record it. */
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        *(int *)p = r > 0 ? -2 : -1;
        close(fd);
    }
    return NULL;
}

static void test_client_checks_server(void **state)
{
    fixture_t *f = *state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof sa;
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    char where[64];
    snprintf(where, sizeof where, "127.0.0.1:%d", ntohs(sa.sin_port));
    int arg = lfd;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fake_server, &arg), 0);
    dt_store_t *s = NULL;
    assert_int_equal(dt_store_connect(where, f->token, 5, &s), DT_ERR_AUTH);
    pthread_join(t, NULL);
    assert_int_equal(arg, -1); /* the client sent no proof to the impostor */
    close(lfd);
}

static void test_garbage_dropped(void **state)
{
    fixture_t *f = *state;
    /* Random bytes: a huge length prefix, dropped at once. */
    int fd = raw_connect(f);
    uint8_t junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(rand() | 0x80);
    send(fd, junk, sizeof junk, MSG_NOSIGNAL);
    assert_true(closed_by_server(fd));
    close(fd);
    /* A well-framed but wrong greeting. */
    fd = raw_connect(f);
    uint8_t hello[4 + 41] = {0, 0, 0, 41, 0x01, 'N', 'O', 'T', 'D', 'T'};
    send(fd, hello, sizeof hello, MSG_NOSIGNAL);
    assert_true(closed_by_server(fd));
    close(fd);
    /* A zero-length frame. */
    fd = raw_connect(f);
    uint8_t zero[4] = {0};
    send(fd, zero, sizeof zero, MSG_NOSIGNAL);
    assert_true(closed_by_server(fd));
    close(fd);
    /* An HTTP request (someone pointed curl at it). */
    fd = raw_connect(f);
    const char *http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    send(fd, http, strlen(http), MSG_NOSIGNAL);
    assert_true(closed_by_server(fd));
    close(fd);
    assert_store_serves(f, "after-garbage");
}

static int count_lines_with(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

/* A flood of garbage connections: the first few are logged one by one,
 * the rest summed up (count and addresses) in one line, here at stop;
 * 3,000 of them once printed 3,001 lines. */
static void test_garbage_flood_summarized(void **state)
{
    (void)state;
    enum { FLOOD = 300 };
    fixture_t f;
    assert_int_equal(dt_token_generate(f.token), DT_OK);
    assert_int_equal(dt_store_server_start("127.0.0.1", 0, f.token, &f.srv),
                     DT_OK);
    f.port = dt_store_server_port(f.srv);
    snprintf(f.where, sizeof f.where, "127.0.0.1:%d", f.port);
    capture_t cap;
    capture_begin(&cap);
    for (int i = 0; i < FLOOD; i++) {
        int fd = raw_connect(&f);
        const char *http = "GET / HTTP/1.1\r\n\r\n";
        send(fd, http, strlen(http), MSG_NOSIGNAL);
        assert_true(closed_by_server(fd));
        close(fd);
    }
    assert_store_serves(&f, "after-flood");
    dt_store_server_stop(f.srv);
    char *log = capture_end(&cap);
    int lines = count_lines_with(log, "\n");
    assert_int_equal(count_lines_with(log, "dropped connection from"), 10);
    assert_true(lines <= 10 + 3); /* and a summary every 10 s at most */
    assert_non_null(strstr(log, "(300 in all since the store started) "
                                "from 127.0.0.1;"));
    free(log);
}

static void test_silent_client_does_not_stall(void **state)
{
    fixture_t *f = *state;
    int silent = raw_connect(f);
    /* Half a frame header, then nothing. */
    int partial = raw_connect(f);
    send(partial, "\0\0", 2, MSG_NOSIGNAL);
    assert_store_serves(f, "while-silent");
    assert_store_serves(f, "while-silent-2");
    close(silent);
    close(partial);
}

static void test_handshake_deadline(void **state)
{
    (void)state;
    fixture_t f;
    assert_int_equal(dt_token_generate(f.token), DT_OK);
    setenv("DT_STORE_HANDSHAKE_TIMEOUT", "0.2", 1);
    assert_int_equal(dt_store_server_start("127.0.0.1", 0, f.token, &f.srv),
                     DT_OK);
    unsetenv("DT_STORE_HANDSHAKE_TIMEOUT");
    f.port = dt_store_server_port(f.srv);
    snprintf(f.where, sizeof f.where, "127.0.0.1:%d", f.port);
    int silent = raw_connect(&f);
    assert_true(closed_by_server(silent)); /* dropped by its deadline */
    close(silent);
    assert_store_serves(&f, "after-deadline");
    dt_store_server_stop(f.srv);
    /* A bad setting is an error, not a silent default. */
    setenv("DT_STORE_HANDSHAKE_TIMEOUT", "soon", 1);
    assert_int_equal(dt_store_server_start("127.0.0.1", 0, f.token, &f.srv),
                     DT_ERR_CONFIG);
    unsetenv("DT_STORE_HANDSHAKE_TIMEOUT");
}

/* Silent connections from anyone who finds the port take at most a
 * quarter of the descriptors: with 120 of them open and the limit at
 * what this process uses + 230, a worker still connects at once (the
 * store, unbounded, held one descriptor per stranger for the handshake's
 * 10 s and had none left: EMFILE for dtctl's pipes and launches too). */
static void test_silent_flood_leaves_room(void **state)
{
    fixture_t *f = *state;
    enum { STRANGERS = 120 };
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    int base = dup(0);
    close(base);
    low = old;
    low.rlim_cur = (rlim_t)base + 2 * STRANGERS - 10;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[STRANGERS], n = 0;
    for (; n < STRANGERS; n++) {
        fds[n] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fds[n] >= 0);
        struct sockaddr_in sa = {
            .sin_family = AF_INET,
            .sin_port = htons((uint16_t)dt_store_server_port(f->srv))};
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        assert_int_equal(connect(fds[n], (struct sockaddr *)&sa, sizeof sa),
                         0);
    }
    usleep(300000); /* the store accepts what it takes */
    dt_store_t *s = NULL;
    dt_status_t st = dt_store_connect(f->where, f->token, 2.0, &s);
    dt_store_close(s);
    while (n > 0)
        close(fds[--n]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(st, DT_OK);
    assert_store_serves(f, "after-flood");
}

/* Out of file descriptors: the store neither crashes nor spins; it
 * accepts again once descriptors are free. */
static void test_out_of_fds(void **state)
{
    fixture_t *f = *state;
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    int base = dup(0); /* the lowest free fd: roughly how many are open */
    close(base);
    low = old;
    low.rlim_cur = (rlim_t)base + 32;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    /* Use up every descriptor, then free one for a client socket: the
     * server has none left to accept it with. */
    int fillers[64], n = 0, fd;
    while (n < 64 && (fd = dup(0)) >= 0)
        fillers[n++] = fd;
    assert_true(n > 1 && n < 64);
    close(fillers[--n]);
    int waiting = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(waiting >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)dt_store_server_port(f->srv))};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(waiting, (struct sockaddr *)&sa, sizeof sa), 0);
    usleep(200000); /* let the server meet EMFILE (not needed for the result) */
    while (n > 0)
        close(fillers[--n]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_store_serves(f, "after-out-of-fds");
    /* The connection that waited is accepted now, and handled like any
     * other: garbage gets it dropped. */
    send(waiting, "\xff\xff\xff\xff", 4, MSG_NOSIGNAL);
    assert_true(closed_by_server(waiting));
    close(waiting);
}

static void test_oversized(void **state)
{
    fixture_t *f = *state;
    dt_store_t *s = client(f);
    size_t max = 1u << 20; /* the documented value limit */
    uint8_t *big = malloc(max + 1);
    assert_non_null(big);
    for (size_t i = 0; i <= max; i++)
        big[i] = (uint8_t)(i * 131 + 7);
    assert_int_equal(dt_store_set(s, "big", big, max + 1), DT_ERR_INVALID);
    assert_int_equal(dt_store_set(s, "big", big, max), DT_OK);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(dt_store_get(s, "big", 5, &v, &len), DT_OK);
    assert_int_equal(len, max);
    assert_memory_equal(v, big, max);
    free(v);
    char key[2048];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    assert_int_equal(dt_store_set(s, key, "x", 1), DT_ERR_INVALID);
    free(big);
    dt_store_close(s);
    /* Before authenticating, even a modest frame is too big. */
    int fd = raw_connect(f);
    uint8_t hdr[4] = {0, 0, 4, 0}; /* 1 KiB */
    send(fd, hdr, sizeof hdr, MSG_NOSIGNAL);
    assert_true(closed_by_server(fd));
    close(fd);
    assert_store_serves(f, "after-oversized");
}

static void test_connect_errors(void **state)
{
    fixture_t *f = *state;
    dt_store_t *s = NULL;
    assert_int_equal(dt_store_connect("no-port-here", f->token, 1, &s),
                     DT_ERR_INVALID);
    /* Nothing listens on a port we just closed. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    char where[64];
    snprintf(where, sizeof where, "127.0.0.1:%d", ntohs(sa.sin_port));
    assert_int_equal(dt_store_connect(where, f->token, 0.2, &s),
                     DT_ERR_TIMEOUT);
    assert_null(s);
}

static void test_token_hex(void **state)
{
    (void)state;
    uint8_t t[DT_TOKEN_BYTES], u[DT_TOKEN_BYTES];
    char hex[2 * DT_TOKEN_BYTES + 1];
    assert_int_equal(dt_token_generate(t), DT_OK);
    dt_token_to_hex(t, hex);
    assert_int_equal(strlen(hex), 2 * DT_TOKEN_BYTES);
    assert_int_equal(dt_token_from_hex(hex, u), DT_OK);
    assert_memory_equal(t, u, sizeof t);
    hex[5] = 'z';
    assert_int_equal(dt_token_from_hex(hex, u), DT_ERR_INVALID);
    assert_int_equal(dt_token_from_hex("abcd", u), DT_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_waits_for_later_set, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_add_is_atomic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_barrier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_barrier_timeout_and_mismatch,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_token_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_client_checks_server, setup,
                                        teardown),
        cmocka_unit_test(test_barrier_gone_waiter_in_same_round),
        cmocka_unit_test_setup_teardown(test_raw_client_with_token_served,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_client_proof_dropped,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_dropped, setup, teardown),
        cmocka_unit_test(test_garbage_flood_summarized),
        cmocka_unit_test_setup_teardown(test_silent_client_does_not_stall,
                                        setup, teardown),
        cmocka_unit_test(test_handshake_deadline),
        cmocka_unit_test_setup_teardown(test_out_of_fds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_flood_leaves_room, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_culprit_record_bounded, setup,
                                        teardown),
        cmocka_unit_test(test_token_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
