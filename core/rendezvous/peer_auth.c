/* peer_auth.c — dt/auth.h: a transport's peer connection proves, in both
 * directions, that it holds the job token (HMAC-SHA256 over fresh nonces,
 * both ranks, the job size, the channel and the protocol label). The wire
 * format is in dt/auth.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <dt/auth.h>
#include <dt/clock.h>
#include <dt/log.h>

#define AUTH_MAGIC "DTAUTH01"
#define AUTH_MAGIC_LEN 8
#define NONCE_BYTES 32
#define MAC_BYTES 32

typedef struct hello {
    char magic[AUTH_MAGIC_LEN];
    char proto[DT_AUTH_PROTO_MAX];
    uint32_t rank, size, channel; /* network byte order */
    uint8_t nonce[NONCE_BYTES];
} hello_t;

/* Milliseconds left until deadline (0: past it). */
static int ms_until(double deadline)
{
    double left = deadline - dt_clock_now();
    if (left <= 0)
        return 0;
    return left > 2e6 ? 2000000000 : (int)(left * 1000.0) + 1;
}

/* The whole buffer, or DT_ERR_PEER (closed, reset), DT_ERR_TIMEOUT. */
static dt_status_t io_full(int fd, void *buf, size_t len, int writing,
                           double deadline)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0 && !writing)
            return DT_ERR_PEER;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return DT_ERR_PEER;
        struct pollfd pfd = {.fd = fd, .events = writing ? POLLOUT : POLLIN};
        int ms = ms_until(deadline);
        if (ms == 0 || poll(&pfd, 1, ms) == 0)
            return DT_ERR_TIMEOUT;
    }
    return DT_OK;
}

/* HMAC(token, role | proto | connector, acceptor, size, channel | nonce_c |
 * nonce_a). */
static int mac(const dt_auth_t *a, const char *role, const char *proto,
               uint32_t con, uint32_t acc, uint32_t channel,
               const uint8_t *nonce_c, const uint8_t *nonce_a,
               uint8_t out[MAC_BYTES])
{
    uint8_t msg[16 + DT_AUTH_PROTO_MAX + 16 + 2 * NONCE_BYTES];
    memset(msg, 0, sizeof msg);
    memcpy(msg, role, strlen(role) < 16 ? strlen(role) : 16);
    memcpy(msg + 16, proto, DT_AUTH_PROTO_MAX);
    uint32_t ids[4] = {htonl(con), htonl(acc), htonl((uint32_t)a->size),
                       htonl(channel)};
    memcpy(msg + 16 + DT_AUTH_PROTO_MAX, ids, sizeof ids);
    memcpy(msg + 32 + DT_AUTH_PROTO_MAX, nonce_c, NONCE_BYTES);
    memcpy(msg + 32 + DT_AUTH_PROTO_MAX + NONCE_BYTES, nonce_a, NONCE_BYTES);
    unsigned int outlen = 0;
    int ok = HMAC(EVP_sha256(), a->token, (int)a->token_len, msg, sizeof msg,
                  out, &outlen) != NULL &&
             outlen == MAC_BYTES;
    OPENSSL_cleanse(msg, sizeof msg);
    return ok;
}

/* The label as it goes on the wire: zero-padded to DT_AUTH_PROTO_MAX. */
static void proto_field(const dt_auth_t *a, char out[DT_AUTH_PROTO_MAX])
{
    memset(out, 0, DT_AUTH_PROTO_MAX);
    if (a->proto)
        memcpy(out, a->proto, strnlen(a->proto, DT_AUTH_PROTO_MAX));
}

static const char *label(const dt_auth_t *a)
{
    return a->proto && *a->proto ? a->proto : "auth";
}

static int args_ok(const dt_auth_t *a, const char *fn)
{
    if (a && a->token && a->token_len && a->size > 0 && a->rank >= 0 &&
        a->rank < a->size && a->timeout > 0)
        return 1;
    dt_error("%s: invalid arguments (no token, rank outside the job or no "
             "timeout)", fn);
    return 0;
}

/* "host:port" of the socket's peer, for messages about unknown clients. */
static void peer_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
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
        } else if (ss.ss_family == AF_UNIX) {
            snprintf(host, sizeof host, "local socket");
        }
    }
    if (port)
        snprintf(buf, len, "%s:%d", host, port);
    else
        snprintf(buf, len, "%s", host);
}

dt_status_t dt_auth_connect(int fd, const dt_auth_t *a, int peer,
                            uint32_t channel)
{
    if (!args_ok(a, "dt_auth_connect") || peer < 0 || peer >= a->size)
        return DT_ERR_INVALID;
    const char *who = label(a);
    double deadline = dt_clock_now() + a->timeout;
    hello_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, AUTH_MAGIC, AUTH_MAGIC_LEN);
    proto_field(a, h.proto);
    h.rank = htonl((uint32_t)a->rank);
    h.size = htonl((uint32_t)a->size);
    h.channel = htonl(channel);
    uint8_t nonce_a[NONCE_BYTES], proof[MAC_BYTES], want[MAC_BYTES];
    uint8_t reply[MAC_BYTES + 1];
    if (RAND_bytes(h.nonce, NONCE_BYTES) != 1) {
        dt_error("%s: rank %d: no random bytes for the handshake with rank %d",
                 who, a->rank, peer);
        return DT_ERR_INTERNAL;
    }
    dt_status_t st = io_full(fd, &h, sizeof h, 1, deadline);
    if (st == DT_OK)
        st = io_full(fd, nonce_a, sizeof nonce_a, 0, deadline);
    if (st == DT_ERR_PEER) {
        dt_error("%s: rank %d: rank %d closed the connection before "
                 "authenticating: it died, or it is not a %s endpoint of a "
                 "job of %d ranks taking channel %u",
                 who, a->rank, peer, who, a->size, channel);
        return st;
    }
    if (st != DT_OK)
        goto broken;
    if (!mac(a, "connector", h.proto, (uint32_t)a->rank, (uint32_t)peer,
             channel, h.nonce, nonce_a, proof))
        return DT_ERR_INTERNAL;
    if ((st = io_full(fd, proof, sizeof proof, 1, deadline)) != DT_OK)
        goto broken;
    st = io_full(fd, reply, sizeof reply, 0, deadline);
    if (st == DT_ERR_PEER) {
        dt_error("%s: rank %d: rank %d refused our connection: the job "
                 "tokens differ (DT_JOB_TOKEN must be the one dtctl gave "
                 "this job)",
                 who, a->rank, peer);
        return DT_ERR_AUTH;
    }
    if (st != DT_OK)
        goto broken;
    if (!mac(a, "acceptor", h.proto, (uint32_t)a->rank, (uint32_t)peer,
             channel, h.nonce, nonce_a, want))
        return DT_ERR_INTERNAL;
    if (CRYPTO_memcmp(want, reply, MAC_BYTES) != 0 || reply[MAC_BYTES] != 1) {
        dt_error("%s: rank %d: the process listening at rank %d's address "
                 "did not prove the job token: it belongs to another job or "
                 "the address is stale; restart the job",
                 who, a->rank, peer);
        return DT_ERR_AUTH;
    }
    return DT_OK;
broken:
    dt_error("%s: rank %d: authenticating the connection to rank %d failed: "
             "%s",
             who, a->rank, peer,
             st == DT_ERR_TIMEOUT ? "it did not answer in time"
                                  : "the connection broke off");
    return st;
}

dt_status_t dt_auth_accept(int fd, const dt_auth_t *a, int peer_lo,
                           int peer_hi, uint32_t nchannels, int *peer,
                           uint32_t *channel)
{
    if (!args_ok(a, "dt_auth_accept") || !peer)
        return DT_ERR_INVALID;
    const char *who = label(a);
    double deadline = dt_clock_now() + a->timeout;
    hello_t h;
    char from[INET6_ADDRSTRLEN + 16], want_proto[DT_AUTH_PROTO_MAX];
    uint8_t nonce_a[NONCE_BYTES], want[MAC_BYTES], proof[MAC_BYTES];
    uint8_t reply[MAC_BYTES + 1];
    peer_name(fd, from, sizeof from);
    proto_field(a, want_proto);
    dt_status_t st = io_full(fd, &h, sizeof h, 0, deadline);
    if (st != DT_OK) {
        dt_warn("%s: rank %d: a connection from %s ended before saying who "
                "it is (%s); ignored",
                who, a->rank, from, dt_status_str(st));
        return st;
    }
    uint32_t r = ntohl(h.rank), w = ntohl(h.size), c = ntohl(h.channel);
    if (memcmp(h.magic, AUTH_MAGIC, AUTH_MAGIC_LEN) != 0 ||
        memcmp(h.proto, want_proto, DT_AUTH_PROTO_MAX) != 0) {
        dt_error("%s: rank %d: rejected a connection from %s: not a %s "
                 "hello",
                 who, a->rank, from, who);
        return DT_ERR_AUTH;
    }
    if (w != (uint32_t)a->size || peer_lo < 0 || r < (uint32_t)peer_lo ||
        r >= (uint32_t)peer_hi || c >= nchannels) {
        dt_error("%s: rank %d: rejected a connection from %s: it says rank "
                 "%u of %u, channel %u; expected a rank in [%d, %d) of %d, "
                 "channel below %u (are all ranks of one job and "
                 "configured alike?)",
                 who, a->rank, from, r, w, c, peer_lo, peer_hi, a->size,
                 nchannels);
        return DT_ERR_AUTH;
    }
    if (RAND_bytes(nonce_a, NONCE_BYTES) != 1)
        return DT_ERR_INTERNAL;
    if ((st = io_full(fd, nonce_a, sizeof nonce_a, 1, deadline)) != DT_OK ||
        (st = io_full(fd, proof, sizeof proof, 0, deadline)) != DT_OK) {
        dt_error("%s: rank %d: a connection from %s claiming rank %u broke "
                 "off during authentication (%s); ignored",
                 who, a->rank, from, r, dt_status_str(st));
        return st;
    }
    if (!mac(a, "connector", want_proto, r, (uint32_t)a->rank, c, h.nonce,
             nonce_a, want))
        return DT_ERR_INTERNAL;
    if (CRYPTO_memcmp(want, proof, MAC_BYTES) != 0) {
        dt_error("%s: rank %d: rejected a connection from %s claiming rank "
                 "%u: wrong job token",
                 who, a->rank, from, r);
        return DT_ERR_AUTH;
    }
    if (!mac(a, "acceptor", want_proto, r, (uint32_t)a->rank, c, h.nonce,
             nonce_a, reply))
        return DT_ERR_INTERNAL;
    reply[MAC_BYTES] = 1;
    if ((st = io_full(fd, reply, sizeof reply, 1, deadline)) != DT_OK) {
        dt_error("%s: rank %d: rank %u (%s) broke off after authenticating "
                 "(%s)",
                 who, a->rank, r, from, dt_status_str(st));
        return st;
    }
    *peer = (int)r;
    if (channel)
        *channel = c;
    return DT_OK;
}
