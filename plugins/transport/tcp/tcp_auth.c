/* tcp_auth.c — every connection proves both ends hold the job token.
 *
 *   connector -> acceptor  hello: magic, its rank, socket index, world
 *                          size, nonce_c (32 random bytes)
 *   acceptor -> connector  nonce_a (32 random bytes)
 *   connector -> acceptor  HMAC(token, "connector" nonce_a ids)
 *   acceptor -> connector  HMAC(token, "acceptor" nonce_c ids), then one
 *                          byte 1: accepted (or it closes: refused)
 *
 * HMAC-SHA256 over fresh nonces: a replayed or forged handshake fails, the
 * token never crosses the wire, and each side knows which rank it talks to.
 * A process without the token is refused and logged (never the token). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <dt/log.h>
#include "tcp.h"

#define HELLO_MAGIC 0x44545431u /* "DTT1" */
#define NONCE_BYTES 32
#define MAC_BYTES 32

typedef struct hello {
    uint32_t magic, rank, sock_index, world;
    uint8_t nonce[NONCE_BYTES];
} hello_t;

/* HMAC(token, label | nonce | connector rank | acceptor rank | socket). */
static int mac(const uint8_t *token, size_t token_len, const char *label,
               const uint8_t *nonce, uint32_t con_rank, uint32_t acc_rank,
               uint32_t sock_index, uint8_t out[MAC_BYTES])
{
    uint8_t msg[16 + NONCE_BYTES + 12];
    size_t l = strlen(label);
    memset(msg, 0, sizeof msg);
    memcpy(msg, label, l < 16 ? l : 16);
    memcpy(msg + 16, nonce, NONCE_BYTES);
    uint32_t ids[3] = {htonl(con_rank), htonl(acc_rank), htonl(sock_index)};
    memcpy(msg + 16 + NONCE_BYTES, ids, sizeof ids);
    unsigned int outlen = 0;
    return HMAC(EVP_sha256(), token, (int)token_len, msg, sizeof msg, out,
                &outlen) != NULL &&
           outlen == MAC_BYTES;
}

static void peer_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[64] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
            port = ntohs(in6->sin6_port);
        }
    }
    snprintf(buf, len, "%s:%d", host, port);
}

dt_status_t tcp_auth_connector(int fd, const uint8_t *token, size_t token_len,
                               int my_rank, int peer_rank, int sock_index,
                               int world, double deadline)
{
    hello_t h = {htonl(HELLO_MAGIC), htonl((uint32_t)my_rank),
                 htonl((uint32_t)sock_index), htonl((uint32_t)world), {0}};
    uint8_t nonce_a[NONCE_BYTES], proof[MAC_BYTES], want[MAC_BYTES];
    uint8_t reply[MAC_BYTES + 1];
    if (RAND_bytes(h.nonce, NONCE_BYTES) != 1)
        return DT_ERR_INTERNAL;
    DT_CHECK(tcp_io_full(fd, &h, sizeof h, 1, deadline));
    DT_CHECK(tcp_io_full(fd, nonce_a, sizeof nonce_a, 0, deadline));
    if (!mac(token, token_len, "connector", nonce_a, (uint32_t)my_rank,
             (uint32_t)peer_rank, (uint32_t)sock_index, proof))
        return DT_ERR_INTERNAL;
    DT_CHECK(tcp_io_full(fd, proof, sizeof proof, 1, deadline));
    dt_status_t st = tcp_io_full(fd, reply, sizeof reply, 0, deadline);
    if (st == DT_ERR_PEER) {
        dt_error("tcp: rank %d: rank %d refused our connection: the job "
                 "tokens differ (DT_JOB_TOKEN must be the one dtctl gave "
                 "this job)",
                 my_rank, peer_rank);
        return DT_ERR_AUTH;
    }
    DT_CHECK(st);
    if (!mac(token, token_len, "acceptor", h.nonce, (uint32_t)my_rank,
             (uint32_t)peer_rank, (uint32_t)sock_index, want))
        return DT_ERR_INTERNAL;
    if (CRYPTO_memcmp(want, reply, MAC_BYTES) != 0 || reply[MAC_BYTES] != 1) {
        dt_error("tcp: rank %d: the process listening at rank %d's address "
                 "did not prove the job token: it belongs to another job or "
                 "the address in the store is stale; restart the job",
                 my_rank, peer_rank);
        return DT_ERR_AUTH;
    }
    return DT_OK;
}

dt_status_t tcp_auth_acceptor(int fd, const uint8_t *token, size_t token_len,
                              int my_rank, int world, int nsock,
                              double deadline, int *peer_rank,
                              int *sock_index)
{
    hello_t h;
    uint8_t nonce_a[NONCE_BYTES], want[MAC_BYTES], proof[MAC_BYTES];
    uint8_t reply[MAC_BYTES + 1];
    char who[96];
    peer_name(fd, who, sizeof who);
    dt_status_t st = tcp_io_full(fd, &h, sizeof h, 0, deadline);
    if (st != DT_OK) {
        dt_warn("tcp: rank %d: a connection from %s ended before saying who "
                "it is (%s); ignored",
                my_rank, who, dt_status_str(st));
        return DT_ERR_AUTH;
    }
    uint32_t r = ntohl(h.rank), s = ntohl(h.sock_index), w = ntohl(h.world);
    if (ntohl(h.magic) != HELLO_MAGIC || w != (uint32_t)world ||
        r <= (uint32_t)my_rank || r >= (uint32_t)world ||
        s >= (uint32_t)nsock) {
        dt_error("tcp: rank %d: rejected a connection from %s: not a dt "
                 "tcp hello for this job (rank %u of %u, socket %u; expected "
                 "a rank above %d of %d, sockets_per_peer %d equal on all "
                 "ranks)",
                 my_rank, who, r, w, s, my_rank, world, nsock);
        return DT_ERR_AUTH;
    }
    if (RAND_bytes(nonce_a, NONCE_BYTES) != 1)
        return DT_ERR_INTERNAL;
    if ((st = tcp_io_full(fd, nonce_a, sizeof nonce_a, 1, deadline)) !=
            DT_OK ||
        (st = tcp_io_full(fd, proof, sizeof proof, 0, deadline)) != DT_OK) {
        dt_error("tcp: rank %d: a connection from %s claiming rank %u broke "
                 "off during authentication (%s); ignored",
                 my_rank, who, r, dt_status_str(st));
        return DT_ERR_AUTH;
    }
    if (!mac(token, token_len, "connector", nonce_a, r, (uint32_t)my_rank, s,
             want))
        return DT_ERR_INTERNAL;
    if (CRYPTO_memcmp(want, proof, MAC_BYTES) != 0) {
        dt_error("tcp: rank %d: rejected a connection from %s claiming rank "
                 "%u: wrong job token",
                 my_rank, who, r);
        return DT_ERR_AUTH;
    }
    if (!mac(token, token_len, "acceptor", h.nonce, r, (uint32_t)my_rank, s,
             reply))
        return DT_ERR_INTERNAL;
    reply[MAC_BYTES] = 1;
    DT_CHECK(tcp_io_full(fd, reply, sizeof reply, 1, deadline));
    *peer_rank = (int)r;
    *sock_index = (int)s;
    return DT_OK;
}
