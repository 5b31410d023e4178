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
#include <stdlib.h>
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

/* Free a handshake's state (a connector, an acceptor), wiped first: its
 * nonces, MACs and the token's address. NULL: nothing to do. */
static void free_wiped(void *state, size_t len)
{
    if (!state)
        return;
    OPENSSL_cleanse(state, len);
    free(state);
}

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
    if (port) /* an IPv6 peer as [addr]:port, its port told apart */
        snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
                 port);
    else
        snprintf(buf, len, "%s", host);
}

struct dt_auth_connector {
    int fd;
    dt_auth_t a;
    int peer;
    uint32_t channel;
    double deadline;
    int have_nonce;  /* nonce_a read and the proof sent: reading the reply */
    size_t got;      /* bytes of nonce_a, then of the reply                */
    hello_t h;
    uint8_t nonce_a[NONCE_BYTES], reply[MAC_BYTES + 1];
};

/* A connector's handshake failed with st: say why, naming both ranks. */
static dt_status_t connector_failed(const dt_auth_connector_t *x,
                                    dt_status_t st)
{
    const dt_auth_t *a = &x->a;
    const char *who = label(a);
    if (st == DT_ERR_PEER && !x->have_nonce) {
        dt_error("%s: rank %d: rank %d closed the connection before "
                 "authenticating: it died, or it is not a %s endpoint of a "
                 "job of %d ranks taking channel %u",
                 who, a->rank, x->peer, who, a->size, x->channel);
        return st;
    }
    if (st == DT_ERR_PEER) {
        /* The acceptor also closes when its own deadline passed, when it
         * already had this channel, or when it exited: only its log
         * knows which. */
        dt_error("%s: rank %d: rank %d closed the connection during "
                 "authentication (channel %u): it refused our proof, gave "
                 "up waiting, or exited; see rank %d's log for why (if it "
                 "says 'wrong job token', DT_JOB_TOKEN must be the one "
                 "dtctl gave this job)",
                 who, a->rank, x->peer, x->channel, x->peer);
        return DT_ERR_AUTH;
    }
    dt_error("%s: rank %d: authenticating the connection to rank %d failed: "
             "%s",
             who, a->rank, x->peer,
             st == DT_ERR_TIMEOUT ? "it did not answer in time"
                                  : "the connection broke off");
    return st;
}

/* Read what fd holds, without blocking, into buf until *got reaches
 * want (both handshake sides step through their messages this way):
 * DT_OK once it has, DT_DECLINED when fd has no more yet, DT_ERR_TIMEOUT
 * when that happens past the deadline, DT_ERR_PEER when the peer closed
 * or reset the connection. */
static dt_status_t recv_some(int fd, uint8_t *buf, size_t want, size_t *got,
                             double deadline)
{
    while (*got < want) {
        ssize_t n = recv(fd, buf + *got, want - *got, MSG_DONTWAIT);
        if (n > 0) {
            *got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return dt_clock_now() < deadline ? DT_DECLINED : DT_ERR_TIMEOUT;
        return DT_ERR_PEER;
    }
    return DT_OK;
}

/* Read what fd holds of nonce_a or the reply; DT_DECLINED: not all yet. */
static dt_status_t connector_read(dt_auth_connector_t *x)
{
    uint8_t *buf = x->have_nonce ? x->reply : x->nonce_a;
    size_t want = x->have_nonce ? sizeof x->reply : sizeof x->nonce_a;
    return recv_some(x->fd, buf, want, &x->got, x->deadline);
}

dt_status_t dt_auth_connector_new(int fd, const dt_auth_t *a, int peer,
                                  uint32_t channel, dt_auth_connector_t **out)
{
    if (!args_ok(a, "dt_auth_connector_new") || peer < 0 ||
        peer >= a->size || !out)
        return DT_ERR_INVALID;
    dt_auth_connector_t *x = calloc(1, sizeof *x);
    if (!x)
        return DT_ERR_NOMEM;
    x->fd = fd;
    x->a = *a;
    x->peer = peer;
    x->channel = channel;
    x->deadline = dt_clock_now() + a->timeout;
    memcpy(x->h.magic, AUTH_MAGIC, AUTH_MAGIC_LEN);
    proto_field(a, x->h.proto);
    x->h.rank = htonl((uint32_t)a->rank);
    x->h.size = htonl((uint32_t)a->size);
    x->h.channel = htonl(channel);
    if (RAND_bytes(x->h.nonce, NONCE_BYTES) != 1) {
        dt_error("%s: rank %d: no random bytes for the handshake with rank %d",
                 label(a), a->rank, peer);
        dt_auth_connector_free(x);
        return DT_ERR_INTERNAL;
    }
    dt_status_t st = io_full(fd, &x->h, sizeof x->h, 1, x->deadline);
    if (st != DT_OK) {
        st = connector_failed(x, st);
        dt_auth_connector_free(x);
        return st;
    }
    *out = x;
    return DT_OK;
}

dt_status_t dt_auth_connector_step(dt_auth_connector_t *x)
{
    if (!x)
        return DT_ERR_INVALID;
    const dt_auth_t *a = &x->a;
    dt_status_t st;
    if (!x->have_nonce) {
        if ((st = connector_read(x)) != DT_OK)
            return st == DT_DECLINED ? st : connector_failed(x, st);
        uint8_t proof[MAC_BYTES];
        if (!mac(a, "connector", x->h.proto, (uint32_t)a->rank,
                 (uint32_t)x->peer, x->channel, x->h.nonce, x->nonce_a,
                 proof))
            return DT_ERR_INTERNAL;
        st = io_full(x->fd, proof, sizeof proof, 1, x->deadline);
        OPENSSL_cleanse(proof, sizeof proof);
        x->have_nonce = 1;
        x->got = 0;
        if (st != DT_OK) { /* "closed" means a reply read: not here */
            dt_error("%s: rank %d: authenticating the connection to rank %d "
                     "failed: %s",
                     label(a), a->rank, x->peer,
                     st == DT_ERR_TIMEOUT ? "it did not answer in time"
                                          : "the connection broke off");
            return st;
        }
    }
    if ((st = connector_read(x)) != DT_OK)
        return st == DT_DECLINED ? st : connector_failed(x, st);
    uint8_t want[MAC_BYTES];
    if (!mac(a, "acceptor", x->h.proto, (uint32_t)a->rank, (uint32_t)x->peer,
             x->channel, x->h.nonce, x->nonce_a, want))
        return DT_ERR_INTERNAL;
    if (CRYPTO_memcmp(want, x->reply, MAC_BYTES) != 0 ||
        x->reply[MAC_BYTES] != 1) {
        dt_error("%s: rank %d: the process listening at rank %d's address "
                 "did not prove the job token: it belongs to another job or "
                 "the address is stale; restart the job",
                 label(a), a->rank, x->peer);
        return DT_ERR_AUTH;
    }
    return DT_OK;
}

int dt_auth_connector_fd(const dt_auth_connector_t *x)
{
    return x ? x->fd : -1;
}

double dt_auth_connector_deadline(const dt_auth_connector_t *x)
{
    return x ? x->deadline : 0;
}

void dt_auth_connector_free(dt_auth_connector_t *x)
{
    free_wiped(x, sizeof *x);
}

dt_status_t dt_auth_connect(int fd, const dt_auth_t *a, int peer,
                            uint32_t channel)
{
    if (!args_ok(a, "dt_auth_connect") || peer < 0 || peer >= a->size)
        return DT_ERR_INVALID;
    dt_auth_connector_t *x = NULL;
    dt_status_t st = dt_auth_connector_new(fd, a, peer, channel, &x);
    if (st == DT_OK)
        st = dt_auth_connector_step(x);
    while (st == DT_DECLINED) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, ms_until(x->deadline)) < 0 && errno != EINTR)
            st = connector_failed(x, DT_ERR_IO);
        else
            st = dt_auth_connector_step(x);
    }
    dt_auth_connector_free(x);
    return st;
}

/* ---- accepting --------------------------------------------------------- */

struct dt_auth_acceptor {
    int fd;
    dt_auth_t a;
    int peer_lo, peer_hi;
    uint32_t nchannels;
    double deadline;
    int have_hello;  /* the hello checked and nonce_a sent: reading proof */
    size_t got;      /* bytes of the hello, then of the proof             */
    hello_t h;
    uint8_t nonce_a[NONCE_BYTES], proof[MAC_BYTES];
    char from[INET6_ADDRSTRLEN + 16];
    const char *stray; /* why it was dropped before saying who it is     */
};

/* The hello names a rank, job size and channel this acceptor takes. With
 * stray set, a stranger's non-hello is not logged but described there. */
static dt_status_t check_hello(const dt_auth_acceptor_t *x, const char **stray)
{
    const dt_auth_t *a = &x->a;
    const char *who = label(a);
    char want_proto[DT_AUTH_PROTO_MAX];
    proto_field(a, want_proto);
    uint32_t r = ntohl(x->h.rank), w = ntohl(x->h.size),
             c = ntohl(x->h.channel);
    if (memcmp(x->h.magic, AUTH_MAGIC, AUTH_MAGIC_LEN) != 0 ||
        memcmp(x->h.proto, want_proto, DT_AUTH_PROTO_MAX) != 0) {
        if (stray)
            *stray = "it did not send a hello of this protocol";
        else
            dt_error("%s: rank %d: rejected a connection from %s: not a %s "
                     "hello",
                     who, a->rank, x->from, who);
        return DT_ERR_AUTH;
    }
    if (w != (uint32_t)a->size || x->peer_lo < 0 ||
        r < (uint32_t)x->peer_lo || r >= (uint32_t)x->peer_hi ||
        c >= x->nchannels) {
        dt_error("%s: rank %d: rejected a connection from %s: it says rank "
                 "%u of %u, channel %u; expected a rank in [%d, %d) of %d, "
                 "channel below %u (are all ranks of one job and "
                 "configured alike?)",
                 who, a->rank, x->from, r, w, c, x->peer_lo, x->peer_hi,
                 a->size, x->nchannels);
        return DT_ERR_AUTH;
    }
    return DT_OK;
}

/* The connector's proof is right: prove back. */
static dt_status_t check_proof(const dt_auth_acceptor_t *x, int *peer,
                               uint32_t *channel)
{
    const dt_auth_t *a = &x->a;
    const char *who = label(a);
    char want_proto[DT_AUTH_PROTO_MAX];
    uint8_t want[MAC_BYTES], reply[MAC_BYTES + 1];
    uint32_t r = ntohl(x->h.rank), c = ntohl(x->h.channel);
    proto_field(a, want_proto);
    if (!mac(a, "connector", want_proto, r, (uint32_t)a->rank, c, x->h.nonce,
             x->nonce_a, want))
        return DT_ERR_INTERNAL;
    if (CRYPTO_memcmp(want, x->proof, MAC_BYTES) != 0) {
        dt_error("%s: rank %d: rejected a connection from %s claiming rank "
                 "%u: wrong job token",
                 who, a->rank, x->from, r);
        return DT_ERR_AUTH;
    }
    if (!mac(a, "acceptor", want_proto, r, (uint32_t)a->rank, c, x->h.nonce,
             x->nonce_a, reply))
        return DT_ERR_INTERNAL;
    reply[MAC_BYTES] = 1;
    /* 33 bytes on a fresh socket: the send buffer takes them at once. */
    dt_status_t st = io_full(x->fd, reply, sizeof reply, 1, x->deadline);
    if (st != DT_OK) {
        dt_error("%s: rank %d: rank %u (%s) broke off after authenticating "
                 "(%s)",
                 who, a->rank, r, x->from, dt_status_str(st));
        return st;
    }
    *peer = (int)r;
    if (channel)
        *channel = c;
    return DT_OK;
}

/* The hello is in and fits: send nonce_a, then read the proof. */
static dt_status_t send_nonce(dt_auth_acceptor_t *x)
{
    if (RAND_bytes(x->nonce_a, NONCE_BYTES) != 1)
        return DT_ERR_INTERNAL;
    dt_status_t st = io_full(x->fd, x->nonce_a, sizeof x->nonce_a, 1,
                             x->deadline);
    x->have_hello = 1;
    x->got = 0;
    return st;
}

/* Reading failed with st: before the hello it is a stranger (described,
 * not logged); after it, a rank that broke off (logged). */
static dt_status_t read_failed(dt_auth_acceptor_t *x, dt_status_t st)
{
    if (!x->have_hello) {
        x->stray = st == DT_ERR_TIMEOUT
                       ? "it said nothing about who it is in time"
                       : "it closed before saying who it is";
        return st;
    }
    dt_error("%s: rank %d: a connection from %s claiming rank %u broke off "
             "during authentication (%s); ignored",
             label(&x->a), x->a.rank, x->from, ntohl(x->h.rank),
             dt_status_str(st));
    return st;
}

/* Read what fd holds of the hello or proof; DT_DECLINED: not all yet. */
static dt_status_t read_some(dt_auth_acceptor_t *x)
{
    uint8_t *buf = x->have_hello ? x->proof : (uint8_t *)&x->h;
    size_t want = x->have_hello ? sizeof x->proof : sizeof x->h;
    dt_status_t st = recv_some(x->fd, buf, want, &x->got, x->deadline);
    return st == DT_OK || st == DT_DECLINED ? st : read_failed(x, st);
}

dt_status_t dt_auth_acceptor_new(int fd, const dt_auth_t *a, int peer_lo,
                                 int peer_hi, uint32_t nchannels,
                                 dt_auth_acceptor_t **out)
{
    if (!args_ok(a, "dt_auth_acceptor_new") || !out)
        return DT_ERR_INVALID;
    dt_auth_acceptor_t *x = calloc(1, sizeof *x);
    if (!x)
        return DT_ERR_NOMEM;
    x->fd = fd;
    x->a = *a;
    x->peer_lo = peer_lo;
    x->peer_hi = peer_hi;
    x->nchannels = nchannels;
    x->deadline = dt_clock_now() + a->timeout;
    peer_name(fd, x->from, sizeof x->from);
    *out = x;
    return DT_OK;
}

dt_status_t dt_auth_acceptor_step(dt_auth_acceptor_t *x, int *peer,
                                  uint32_t *channel)
{
    if (!x || !peer)
        return DT_ERR_INVALID;
    dt_status_t st;
    if (!x->have_hello) {
        if ((st = read_some(x)) != DT_OK)
            return st;
        if ((st = check_hello(x, &x->stray)) != DT_OK)
            return st;
        if ((st = send_nonce(x)) != DT_OK)
            return read_failed(x, st);
    }
    if ((st = read_some(x)) != DT_OK)
        return st;
    return check_proof(x, peer, channel);
}

const char *dt_auth_acceptor_stray(const dt_auth_acceptor_t *x)
{
    return x ? x->stray : NULL;
}

const char *dt_auth_acceptor_from(const dt_auth_acceptor_t *x)
{
    return x ? x->from : "?";
}

int dt_auth_acceptor_claimed_rank(const dt_auth_acceptor_t *x)
{
    return x && x->have_hello ? (int)ntohl(x->h.rank) : -1;
}

double dt_auth_acceptor_deadline(const dt_auth_acceptor_t *x)
{
    return x ? x->deadline : 0;
}

void dt_auth_acceptor_free(dt_auth_acceptor_t *x)
{
    free_wiped(x, sizeof *x);
}

dt_status_t dt_auth_accept(int fd, const dt_auth_t *a, int peer_lo,
                           int peer_hi, uint32_t nchannels, int *peer,
                           uint32_t *channel)
{
    if (!args_ok(a, "dt_auth_accept") || !peer)
        return DT_ERR_INVALID;
    dt_auth_acceptor_t x = {.fd = fd, .a = *a, .peer_lo = peer_lo,
                            .peer_hi = peer_hi, .nchannels = nchannels,
                            .deadline = dt_clock_now() + a->timeout};
    peer_name(fd, x.from, sizeof x.from);
    dt_status_t st = io_full(fd, &x.h, sizeof x.h, 0, x.deadline);
    if (st != DT_OK) {
        dt_warn("%s: rank %d: a connection from %s ended before saying who "
                "it is (%s); ignored",
                label(a), a->rank, x.from, dt_status_str(st));
        return st;
    }
    if ((st = check_hello(&x, NULL)) == DT_OK &&
        (st = send_nonce(&x)) == DT_OK)
        st = io_full(fd, x.proof, sizeof x.proof, 0, x.deadline);
    if (st == DT_OK)
        st = check_proof(&x, peer, channel);
    else if (st != DT_ERR_AUTH && st != DT_ERR_INTERNAL)
        read_failed(&x, st);
    OPENSSL_cleanse(&x, sizeof x);
    return st;
}
