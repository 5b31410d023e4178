/* test_store_version.c — the store's handshake between different dt
 * builds: a client of another DT_PROTOCOL_VERSION, or one from before
 * protocol versions (DTSTORE1), is refused once it proved the job token,
 * with a line naming both sides, and counted for dtctl; a stranger of any
 * greeting is not; a worker whose store closes at its greeting (an older
 * dtctl) says so. The other client is libdt's own, its advertised
 * protocol set by the test hook DT_TEST_PROTO_VERSION. */
#include <arpa/inet.h>
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
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include "config.h"
#include <dt/store.h>
#include "rendezvous/store_proto.h"

#include "stderr_capture.h"

typedef struct fixture {
    uint8_t token[DT_TOKEN_BYTES];
    dt_store_server_t *srv;
    char where[64];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(dt_token_generate(f->token), DT_OK);
    assert_int_equal(dt_store_server_start("127.0.0.1", 0, f->token, &f->srv),
                     DT_OK);
    snprintf(f->where, sizeof f->where, "127.0.0.1:%d",
             dt_store_server_port(f->srv));
    unsetenv("DT_TEST_PROTO_VERSION");
    unsetenv("DT_RANK");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    dt_store_server_stop(f->srv);
    free(f);
    unsetenv("DT_TEST_PROTO_VERSION");
    unsetenv("DT_RANK");
    return 0;
}

static void assert_store_serves(const fixture_t *f)
{
    dt_store_t *s = NULL;
    assert_int_equal(dt_store_connect(f->where, f->token, 10, &s), DT_OK);
    assert_int_equal(dt_store_set(s, "k", "v", 1), DT_OK);
    dt_store_close(s);
}

static void assert_has(const char *log, const char *want)
{
    if (!strstr(log, want))
        fail_msg("no '%s' in:\n%s", want, log);
}

/* A text longer than a field keeps its start and end; a HELLO decodes to
 * what was encoded; a malformed one is refused. */
static void test_hello_encoding(void **state)
{
    (void)state;
    store_hello_t h, back;
    uint8_t buf[STORE_MAX_HANDSHAKE_FRAME];
    store_hello_self(&h);
    h.rank = 12;
    char longp[600];
    memset(longp, 'x', sizeof longp);
    memcpy(longp, "/home/u/dt", 10);
    memcpy(longp + sizeof longp - 10, "/dt-train", 9);
    longp[sizeof longp - 1] = '\0';
    /* an overlong text is cut by store_text_put, never by the struct */
    size_t off = 0;
    store_text_put(buf, &off, longp);
    assert_int_equal(off, 1 + STORE_TEXT_MAX);
    size_t at = 0;
    char text[STORE_TEXT_MAX + 1];
    assert_int_equal(store_text_get(buf, off, &at, text), 0);
    assert_int_equal(strncmp(text, "/home/u/dt", 10), 0);
    assert_non_null(strstr(text, "..."));
    assert_string_equal(text + strlen(text) - 8, "dt-train");

    size_t len = store_hello_encode(&h, buf);
    assert_true(len <= STORE_MAX_HANDSHAKE_FRAME);
    assert_int_equal(store_hello_decode(buf, len, &back), DT_OK);
    assert_int_equal(back.protocol, DT_PROTOCOL_VERSION);
    assert_int_equal(back.rank, 12);
    assert_string_equal(back.program, h.program);
    assert_string_equal(back.libdt, h.libdt);
    assert_int_equal(store_hello_decode(buf, len - 1, &back), DT_ERR_INVALID);
    buf[len] = 0;
    assert_int_equal(store_hello_decode(buf, len + 1, &back), DT_ERR_INVALID);
    buf[8] = '1'; /* DTSTORE1 */
    assert_int_equal(store_hello_decode(buf, len, &back), DT_ERR_INVALID);
}

/* A worker of a later protocol, with the job's token: refused at once;
 * both sides' lines name rank, host, both protocols and what to do. */
static void test_other_protocol_refused(void **state)
{
    fixture_t *f = *state;
    char other[16];
    snprintf(other, sizeof other, "%d", DT_PROTOCOL_VERSION + 1);
    setenv("DT_TEST_PROTO_VERSION", other, 1);
    setenv("DT_RANK", "4", 1);
    capture_t cap;
    capture_begin(&cap);
    dt_store_t *s = NULL;
    dt_status_t st = dt_store_connect(f->where, f->token, 10, &s);
    char *log = capture_end(&cap);
    assert_int_equal(st, DT_ERR_UNSUPPORTED);
    assert_null(s);
    assert_int_equal(dt_store_server_refused(f->srv), 1);
    char want[128];
    assert_has(log, "rendezvous store: refused rank 4 on ");
    snprintf(want, sizeof want, "of protocol %d (program ",
             DT_PROTOCOL_VERSION + 1);
    assert_has(log, want);
    snprintf(want, sizeof want, "this dtctl runs dt %s of protocol %d",
             PACKAGE_VERSION, DT_PROTOCOL_VERSION);
    assert_has(log, want);
    assert_has(log, "the worker's dt is newer");
    assert_has(log, "refused this worker: dtctl there runs dt");
    assert_has(log, "install the same dt on every host");
    free(log);
    unsetenv("DT_TEST_PROTO_VERSION");
    assert_store_serves(f); /* the others are served on */
    assert_int_equal(dt_store_server_refused(f->srv), 1);
}

/* A worker of a dt from before protocol versions cannot say its protocol:
 * its old greeting with the right proof is refused by the store's side. */
static void test_old_greeting_refused(void **state)
{
    fixture_t *f = *state;
    setenv("DT_TEST_PROTO_VERSION", "0", 1);
    capture_t cap;
    capture_begin(&cap);
    dt_store_t *s = NULL;
    dt_status_t st = dt_store_connect(f->where, f->token, 10, &s);
    char *log = capture_end(&cap);
    assert_int_equal(st, DT_ERR_AUTH); /* what an old worker concludes */
    assert_int_equal(dt_store_server_refused(f->srv), 1);
    assert_has(log, "rendezvous store: refused a worker at 127.0.0.1:");
    assert_has(log, "from before protocol versions");
    assert_has(log, "install the same dt on every host");
    free(log);
}

/* A stranger greeting with another protocol (or the old greeting) but
 * without the token is dropped as one: no refusal for dtctl, no line that
 * claims a rank. */
static void test_stranger_is_no_refusal(void **state)
{
    fixture_t *f = *state;
    for (int old = 0; old < 2; old++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)dt_store_server_port(
                                     f->srv))};
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        uint8_t hello[STORE_MAX_HANDSHAKE_FRAME + 4];
        store_hello_t h;
        store_hello_self(&h);
        h.protocol = DT_PROTOCOL_VERSION + 7;
        h.rank = 3;
        size_t len = store_hello_encode(&h, hello + 4);
        if (old) {
            memcpy(hello + 5, "DTSTORE1", 8);
            len = STORE_HELLO_V1_LEN;
        }
        store_put_u32(hello, (uint32_t)len);
        uint8_t proof[4 + 1 + STORE_MAC_BYTES] = {0, 0, 0, 1 + STORE_MAC_BYTES,
                                                  STORE_PROOF};
        uint8_t ch[4 + 1 + 2 * STORE_NONCE_BYTES];
        capture_t cap;
        capture_begin(&cap);
        assert_int_equal(send(fd, hello, 4 + len, MSG_NOSIGNAL),
                         (ssize_t)(4 + len));
        size_t got = 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (got < sizeof ch && poll(&p, 1, 10000) == 1) {
            ssize_t r = recv(fd, ch + got, sizeof ch - got, 0);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        assert_int_equal(got, sizeof ch);
        assert_int_equal(ch[4], STORE_CHALLENGE);
        send(fd, proof, sizeof proof, MSG_NOSIGNAL); /* zeros: wrong */
        uint8_t b;
        ssize_t r = poll(&p, 1, 10000) == 1 ? recv(fd, &b, 1, 0) : 1;
        close(fd);
        char *log = capture_end(&cap);
        assert_true(r <= 0); /* closed, nothing answered */
        assert_has(log, "authentication failed");
        if (strstr(log, "refused"))
            fail_msg("a stranger was reported as a refused worker:\n%s", log);
        free(log);
    }
    assert_int_equal(dt_store_server_refused(f->srv), 0);
    assert_store_serves(f);
}

/* A store that closes at the greeting (an older dtctl, which takes only
 * its own): the worker names the likely cause. */
static void *closing_server(void *p)
{
    int lfd = *(int *)p;
    int fd = accept(lfd, NULL, NULL);
    if (fd >= 0) {
        uint8_t buf[64];
        (void)!recv(fd, buf, sizeof buf, 0);
        close(fd);
    }
    return NULL;
}

static void test_closed_at_greeting(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof sa;
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    char where[64];
    snprintf(where, sizeof where, "127.0.0.1:%d", ntohs(sa.sin_port));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, closing_server, &lfd), 0);
    uint8_t token[DT_TOKEN_BYTES] = {1};
    capture_t cap;
    capture_begin(&cap);
    dt_store_t *s = NULL;
    dt_status_t st = dt_store_connect(where, token, 10, &s);
    char *log = capture_end(&cap);
    pthread_join(t, NULL);
    close(lfd);
    assert_int_equal(st, DT_ERR_UNSUPPORTED);
    assert_has(log, "closed the connection at this worker's greeting");
    assert_has(log, "an older dt");
    assert_has(log, "install the same dt on every host");
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_encoding),
        cmocka_unit_test_setup_teardown(test_other_protocol_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_old_greeting_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stranger_is_no_refusal, setup,
                                        teardown),
        cmocka_unit_test(test_closed_at_greeting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
