/* fuzz_store.c — the rendezvous store server against any bytes from a
 * client: before authentication (first input byte even: what anyone who
 * can reach the port can send) and after a correct handshake (odd: what a
 * buggy or compromised worker can send). The server, started once, must
 * neither crash nor hang: every connection is closed by it once this side
 * hangs up, within a few seconds. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/store.h>
#include "rendezvous/store_proto.h"
#include "fuzz.h"

static dt_store_server_t *server;
static uint8_t token[DT_TOKEN_BYTES];

static int xfer(int fd, void *buf, size_t len, int writing)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL)
                            : recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) /* libFuzzer's timers */
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int frame(int fd, const uint8_t *body, size_t len)
{
    uint8_t hdr[4];
    store_put_u32(hdr, (uint32_t)len);
    return xfer(fd, hdr, 4, 1) || xfer(fd, (void *)body, len, 1);
}

/* The client's side of the handshake (store_client.c), by hand. */
static int authenticate(int fd)
{
    uint8_t hello[STORE_MAX_HANDSHAKE_FRAME];
    uint8_t hdr[4], ch[1 + STORE_NONCE_BYTES + STORE_MAC_BYTES];
    uint8_t proof[1 + STORE_MAC_BYTES] = {STORE_PROOF}, welcome[5];
    store_hello_t me;
    store_hello_self(&me);
    /* Fresh each time: the server refuses a client nonce it has seen. */
    if (getrandom(me.nonce_c, sizeof me.nonce_c, 0) !=
        (ssize_t)sizeof me.nonce_c)
        return -1;
    size_t len = store_hello_encode(&me, hello);
    if (frame(fd, hello, len) || xfer(fd, hdr, 4, 0) ||
        store_get_u32(hdr) != sizeof ch || xfer(fd, ch, sizeof ch, 0)) {
        fprintf(stderr, "fuzz_store: no challenge\n");
        return -1;
    }
    if (store_proof_hello(token, ch + 1, hello, len, proof + 1) != DT_OK ||
        frame(fd, proof, sizeof proof))
        return -1;
    return xfer(fd, welcome, sizeof welcome, 0) || welcome[4] != STORE_WELCOME
               ? -1
               : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!server) {
        dt_log_set_level(DT_LOG_ERROR);
        if (dt_token_generate(token) != DT_OK ||
            dt_store_server_start("127.0.0.1", 0, token, &server) != DT_OK)
            abort();
    }
    if (size < 1)
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons(
                                 (uint16_t)dt_store_server_port(server))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        perror("fuzz_store: connect");
        abort(); /* the server stopped accepting */
    }
    if (data[0] % 2 == 1 && authenticate(fd) != 0) {
        fprintf(stderr, "fuzz_store: a correct client was refused\n");
        abort(); /* a correct client must get in */
    }
    send(fd, data + 1, size - 1, MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    /* Drain replies until the server closes; it must within 5 s (a GET or
     * barrier the bytes asked for ends when its client is gone). */
    uint8_t buf[4096];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, 5000);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready != 1) {
            fprintf(stderr, "fuzz_store: the server kept the connection "
                            "open 5 s after the client hung up\n");
            abort();
        }
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
    }
    close(fd);
    return 0;
}
