/* store_client.c — the rendezvous store client used by workers and
 * transports: connect (retrying while dtctl's server starts), the mutual
 * token handshake, then one request and one reply at a time. A mutex makes
 * one handle safe to share between threads. A request that timed out with
 * no byte of its reply read leaves the framing known: its reply is owed,
 * and the next request skips it first (a store that was only slow for a
 * while works again). After any other error or timeout the framing is
 * unknown, so the handle refuses further use. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/store.h>
#include "store_client.h"
#include "store_proto.h"

/* A server answers a timed-out wait itself; allow this much extra. */
#define STORE_WAIT_SLACK 5.0
/* dt_store_lookup: requests sent before their replies are read. */
#define STORE_LOOKUP_BATCH 64

struct dt_store {
    int fd;
    int broken;
    int owed;        /* replies of timed-out requests not yet read */
    char where[300]; /* "host:port" for messages */
    pthread_mutex_t lock;
};

/* ---- bytes on a blocking socket, bounded by a deadline ------------------ */

static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - dt_clock_now();
            if (left <= 0)
                return 0;
            ms = (int)(left * 1000.0) + 1;
        }
        struct pollfd p = {.fd = fd, .events = ev};
        int r = poll(&p, 1, ms);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

static dt_status_t send_all(int fd, const void *buf, size_t len,
                            double deadline)
{
    const uint8_t *p = buf;
    while (len) {
        int w = wait_fd(fd, POLLOUT, deadline);
        if (w == 0)
            return DT_ERR_TIMEOUT;
        if (w < 0)
            return DT_ERR_IO;
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return DT_ERR_PEER;
        p += n;
        len -= (size_t)n;
    }
    return DT_OK;
}

static dt_status_t recv_all(int fd, void *buf, size_t len, double deadline)
{
    uint8_t *p = buf;
    while (len) {
        int w = wait_fd(fd, POLLIN, deadline);
        if (w == 0)
            return DT_ERR_TIMEOUT;
        if (w < 0)
            return DT_ERR_IO;
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return DT_ERR_PEER;
        p += n;
        len -= (size_t)n;
    }
    return DT_OK;
}

/* One frame, written with one send where possible (one TCP segment for
 * small requests). */
static dt_status_t send_frame(int fd, const void *a, size_t alen,
                              const void *b, size_t blen, double deadline)
{
    uint8_t *buf = malloc(4 + alen + blen);
    if (!buf)
        return DT_ERR_NOMEM;
    store_put_u32(buf, (uint32_t)(alen + blen));
    memcpy(buf + 4, a, alen);
    if (blen)
        memcpy(buf + 4 + alen, b, blen);
    dt_status_t st = send_all(fd, buf, 4 + alen + blen, deadline);
    OPENSSL_cleanse(buf, 4 + alen); /* may hold a handshake proof */
    free(buf);
    return st;
}

/* One frame of at most max bytes; *body is malloc'd. */
static dt_status_t recv_frame(int fd, size_t max, double deadline,
                              uint8_t **body, size_t *len)
{
    uint8_t hdr[4];
    dt_status_t st = recv_all(fd, hdr, 4, deadline);
    if (st != DT_OK)
        return st;
    size_t n = store_get_u32(hdr);
    if (n == 0 || n > max)
        return DT_ERR_INVALID;
    uint8_t *b = malloc(n);
    if (!b)
        return DT_ERR_NOMEM;
    if ((st = recv_all(fd, b, n, deadline)) != DT_OK) {
        free(b);
        return st;
    }
    *body = b;
    *len = n;
    return DT_OK;
}

/* ---- connect and handshake -------------------------------------------- */

/* "host:port" or "[v6addr]:port" into its parts. */
static dt_status_t split_host_port(const char *hp, char *host, size_t hlen,
                                   char *port, size_t plen)
{
    const char *colon, *hstart = hp, *hend;
    if (hp[0] == '[') {
        hstart = hp + 1;
        hend = strchr(hp, ']');
        if (!hend || hend[1] != ':')
            return DT_ERR_INVALID;
        colon = hend + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon)
            return DT_ERR_INVALID;
        hend = colon;
    }
    size_t n = (size_t)(hend - hstart), m = strlen(colon + 1);
    if (n == 0 || n >= hlen || m == 0 || m >= plen ||
        strspn(colon + 1, "0123456789") != m)
        return DT_ERR_INVALID;
    memcpy(host, hstart, n);
    host[n] = '\0';
    memcpy(port, colon + 1, m + 1);
    return DT_OK;
}

/* One TCP connection attempt to any address of host:port. */
static int try_connect(const struct addrinfo *list, double deadline,
                       int *last_errno)
{
    for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            *last_errno = errno;
            continue;
        }
        int fl = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (r < 0 && errno == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline);
            int err = 0;
            socklen_t elen = sizeof err;
            if (w <= 0)
                err = ETIMEDOUT;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen))
                err = errno;
            r = err ? -1 : 0;
            errno = err;
        }
        if (r == 0) {
            fcntl(fd, F_SETFL, fl);
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        /* A refusal says more than a timeout at the deadline: keep it. */
        if (errno != ETIMEDOUT || !*last_errno)
            *last_errno = errno;
        close(fd);
    }
    return -1;
}

/* HELLO: who this client is and its protocol (store_proto.h), or, under
 * the test hook DT_TEST_PROTO_VERSION=0, what a dt from before protocol
 * versions sent. Its length; the nonce goes to nonce_c. */
static size_t make_hello(int protocol, uint8_t *hello,
                         uint8_t nonce_c[STORE_NONCE_BYTES])
{
    if (RAND_bytes(nonce_c, STORE_NONCE_BYTES) != 1)
        return 0;
    if (protocol == 0) {
        hello[0] = STORE_HELLO;
        memcpy(hello + 1, STORE_MAGIC_V1, STORE_MAGIC_LEN);
        memcpy(hello + 1 + STORE_MAGIC_LEN, nonce_c, STORE_NONCE_BYTES);
        return STORE_HELLO_V1_LEN;
    }
    store_hello_t me;
    store_hello_self(&me);
    me.protocol = (unsigned)protocol;
    memcpy(me.nonce_c, nonce_c, STORE_NONCE_BYTES);
    return store_hello_encode(&me, hello);
}

static dt_status_t handshake(dt_store_t *s, const uint8_t *token,
                             double deadline)
{
    uint8_t hello[STORE_MAX_HANDSHAKE_FRAME];
    uint8_t nonce_c[STORE_NONCE_BYTES], proof[1 + STORE_MAC_BYTES];
    uint8_t *body = NULL;
    size_t len = 0;
    dt_status_t st;
    int protocol = store_test_protocol();
    size_t hello_len = make_hello(protocol, hello, nonce_c);
    if (!hello_len)
        return DT_ERR_INTERNAL;
    if ((st = send_frame(s->fd, hello, hello_len, NULL, 0, deadline)))
        goto out;
    st = recv_frame(s->fd, STORE_MAX_HANDSHAKE_FRAME, deadline, &body, &len);
    if (st == DT_ERR_PEER && protocol != 0) {
        char why[1500];
        store_closed_at_hello_text(s->where, protocol, why, sizeof why);
        dt_error("%s", why);
        st = DT_ERR_UNSUPPORTED;
    }
    if (st)
        goto out;
    /* The server proves first: a client never reveals a proof to an
     * impostor. */
    if (len != 1 + STORE_NONCE_BYTES + STORE_MAC_BYTES ||
        body[0] != STORE_CHALLENGE ||
        !store_proof_ok(token, STORE_ROLE_SERVER, nonce_c, body + 1,
                        body + 1 + STORE_NONCE_BYTES)) {
        dt_error("rendezvous store at %s could not prove it knows this job's "
                 "token: DT_RENDEZVOUS points to another job's store or to "
                 "something else, or DT_JOB_TOKEN is not this job's",
                 s->where);
        st = DT_ERR_AUTH;
        goto out;
    }
    proof[0] = STORE_PROOF;
    if (protocol == 0)
        st = store_proof(token, STORE_ROLE_CLIENT, nonce_c, body + 1,
                         proof + 1);
    else
        st = store_proof_hello(token, body + 1, hello, hello_len, proof + 1);
    if (st || (st = send_frame(s->fd, proof, sizeof proof, NULL, 0,
                               deadline)))
        goto out;
    free(body);
    body = NULL;
    st = recv_frame(s->fd, STORE_MAX_HANDSHAKE_FRAME, deadline, &body, &len);
    if (st == DT_OK && len >= 1 && body[0] == STORE_REFUSED) {
        char why[1500];
        store_refused_text(s->where, body, len, protocol, why, sizeof why);
        dt_error("%s", why);
        st = DT_ERR_UNSUPPORTED;
        goto out;
    }
    if (st == DT_OK && (len != 1 || body[0] != STORE_WELCOME))
        st = DT_ERR_INVALID;
    if (st == DT_ERR_PEER || st == DT_ERR_INVALID) {
        dt_error("rendezvous store at %s refused this worker's job token "
                 "(%s): check that DT_JOB_TOKEN comes from the same dtctl "
                 "run as DT_RENDEZVOUS",
                 s->where, dt_status_str(st));
        st = DT_ERR_AUTH;
    }
out:
    OPENSSL_cleanse(proof, sizeof proof);
    free(body);
    return st;
}

dt_status_t dt_store_connect(const char *host_port,
                             const uint8_t token[DT_TOKEN_BYTES],
                             double timeout, dt_store_t **out)
{
    return store_connect_logged(host_port, token, timeout, DT_LOG_ERROR,
                                out);
}

dt_status_t store_connect_logged(const char *host_port,
                                 const uint8_t token[DT_TOKEN_BYTES],
                                 double timeout, dt_log_level_t level,
                                 dt_store_t **out)
{
    char host[256], port[16];
    if (!host_port || !token || !out)
        return DT_ERR_INVALID;
    if (split_host_port(host_port, host, sizeof host, port, sizeof port)) {
        dt_error("rendezvous address '%s' is not host:port (DT_RENDEZVOUS "
                 "is set by dtctl run)",
                 host_port);
        return DT_ERR_INVALID;
    }
    dt_store_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    s->fd = -1;
    snprintf(s->where, sizeof s->where, "%s", host_port);
    pthread_mutex_init(&s->lock, NULL);

    double deadline = dt_clock_now() + (timeout > 0 ? timeout : 0.001);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai) {
        dt_log(level, "rendezvous store %s: cannot resolve '%s': %s",
               host_port, host, gai_strerror(gai));
        dt_store_close(s);
        return DT_ERR_NOT_FOUND;
    }
    /* The server may still be starting: retry refused connections. */
    int err = 0;
    long pause_ms = 10;
    while ((s->fd = try_connect(ai, deadline, &err)) < 0 &&
           dt_clock_now() < deadline) {
        struct timespec ts = {0, pause_ms * 1000000L};
        nanosleep(&ts, NULL);
        pause_ms = pause_ms < 500 ? pause_ms * 2 : 500;
    }
    freeaddrinfo(ai);
    if (s->fd < 0) {
        dt_log(level,
               "cannot reach the rendezvous store at %s within %.1f s: %s; "
               "is dtctl still running, and is that address reachable "
               "from this host (see [cluster] interface)?",
               host_port, timeout, strerror(err));
        dt_store_close(s);
        return DT_ERR_TIMEOUT;
    }
    dt_status_t st = handshake(s, token, deadline);
    if (st == DT_ERR_TIMEOUT || st == DT_ERR_PEER || st == DT_ERR_IO)
        dt_log(level, "rendezvous store at %s: handshake failed (%s)",
               host_port, dt_status_str(st));
    if (st != DT_OK) {
        dt_store_close(s);
        return st;
    }
    *out = s;
    return DT_OK;
}

void dt_store_close(dt_store_t *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- requests ---------------------------------------------------------- */

/* Read and drop the replies of requests that timed out. DT_ERR_TIMEOUT:
 * still owed (nothing of the next one arrived); other errors break. */
static dt_status_t skip_owed(dt_store_t *s, double deadline)
{
    while (s->owed > 0) {
        int w = wait_fd(s->fd, POLLIN, deadline);
        if (w == 0)
            return DT_ERR_TIMEOUT;
        uint8_t *body = NULL;
        size_t len = 0;
        dt_status_t st = w < 0 ? DT_ERR_IO
                               : recv_frame(s->fd, 5 + STORE_MAX_VALUE,
                                            deadline, &body, &len);
        free(body);
        if (st != DT_OK)
            return st == DT_ERR_TIMEOUT ? DT_ERR_IO : st;
        s->owed--;
    }
    return DT_OK;
}

/* Send the request frame and read its reply frame. A timeout before any
 * byte of the reply came is clean: the reply is owed. *clean says so. */
static dt_status_t exchange(dt_store_t *s, const uint8_t *buf, size_t blen,
                            const void *tail, size_t tlen, double deadline,
                            uint8_t **body, size_t *len, int *clean)
{
    *clean = 0;
    dt_status_t st = skip_owed(s, deadline);
    if (st != DT_OK) {
        *clean = st == DT_ERR_TIMEOUT;
        return st;
    }
    st = send_frame(s->fd, buf, blen, tail, tlen, deadline);
    if (st != DT_OK)
        return st;
    int w = wait_fd(s->fd, POLLIN, deadline);
    if (w == 0) {
        s->owed++;
        *clean = 1;
        return DT_ERR_TIMEOUT;
    }
    if (w < 0)
        return DT_ERR_IO;
    st = recv_frame(s->fd, 5 + STORE_MAX_VALUE, deadline, body, len);
    if (st == DT_OK && (*len < 5 || (*body)[0] != STORE_REPLY))
        st = DT_ERR_INVALID;
    return st;
}

/* Send one request (head, then key with its length, then tail) and read the
 * reply: its status, and its payload into *payload (malloc'd) if wanted.
 * The reply may take wait + io seconds; a caller that bounds io itself
 * (io < STORE_IO_SECONDS) hears of a clean timeout only through the
 * status. */
static dt_status_t request(dt_store_t *s, const uint8_t *head, size_t hlen,
                           const char *key, const void *tail, size_t tlen,
                           double wait, double io, void **payload,
                           size_t *plen)
{
    size_t klen = key ? strlen(key) : 0;
    if (!s || !key || klen == 0 || klen > STORE_MAX_KEY) {
        dt_error("rendezvous store: key '%.64s%s' must be 1 to %d bytes",
                 key ? key : "(null)", klen > 64 ? "..." : "",
                 STORE_MAX_KEY);
        return DT_ERR_INVALID;
    }
    if (tlen > STORE_MAX_VALUE) {
        dt_error("rendezvous store: value for '%s' is %zu bytes; the limit "
                 "is %u",
                 key, tlen, STORE_MAX_VALUE);
        return DT_ERR_INVALID;
    }
    uint8_t msg[32];
    memcpy(msg, head, hlen);
    store_put_u16(msg + hlen, (uint16_t)klen);
    uint8_t *buf = malloc(hlen + 2 + klen);
    if (!buf)
        return DT_ERR_NOMEM;
    memcpy(buf, msg, hlen + 2);
    memcpy(buf + hlen + 2, key, klen);

    uint8_t *body = NULL;
    size_t len = 0;
    int clean = 0;
    dt_status_t st;
    pthread_mutex_lock(&s->lock);
    if (s->broken) {
        st = DT_ERR_PEER;
        dt_error("rendezvous store at %s: connection unusable after an "
                 "earlier error",
                 s->where);
        goto out;
    }
    double deadline = wait < 0 ? 0 : dt_clock_now() + wait + io;
    st = exchange(s, buf, hlen + 2 + klen, tail, tlen, deadline, &body, &len,
                  &clean);
    if (st != DT_OK) {
        s->broken = !clean;
        if (clean && io < STORE_IO_SECONDS)
            dt_debug("rendezvous store at %s: no reply for '%s' within "
                     "%.1f s; it is skipped when it comes",
                     s->where, key, wait + io);
        else
            dt_error("rendezvous store at %s: request for '%s' failed (%s); "
                     "has dtctl stopped?",
                     s->where, key, dt_status_str(st));
        st = st == DT_ERR_TIMEOUT ? DT_ERR_TIMEOUT : DT_ERR_PEER;
        goto out;
    }
    st = (dt_status_t)(int32_t)store_get_u32(body + 1);
    if (st == DT_OK && payload) {
        size_t n = len - 5;
        void *v = malloc(n ? n + 1 : 1);
        if (!v) {
            st = DT_ERR_NOMEM;
            goto out;
        }
        memcpy(v, body + 5, n);
        ((char *)v)[n] = '\0'; /* handy for text values */
        *payload = v;
        *plen = n;
    }
out:
    pthread_mutex_unlock(&s->lock);
    free(body);
    free(buf);
    return st;
}

/* A negative timeout is a deadline already passed (callers pass
 * "deadline - now"): answer at once, never "wait forever". */
static uint32_t to_ms(double seconds)
{
    if (!(seconds > 0))
        return 0;
    double ms = seconds * 1000.0;
    return ms >= (double)(UINT32_MAX - 1) ? UINT32_MAX - 1 : (uint32_t)ms;
}

dt_status_t dt_store_set(dt_store_t *s, const char *key, const void *value,
                         size_t len)
{
    uint8_t head = STORE_SET;
    if (len && !value)
        return DT_ERR_INVALID;
    return request(s, &head, 1, key, value, len, 0, STORE_IO_SECONDS, NULL,
                   NULL);
}

dt_status_t dt_store_set_bounded(dt_store_t *s, const char *key,
                                 const void *value, size_t len,
                                 double timeout)
{
    uint8_t head = STORE_SET;
    if ((len && !value) || !(timeout > 0))
        return DT_ERR_INVALID;
    return request(s, &head, 1, key, value, len, 0,
                   timeout < STORE_IO_SECONDS ? timeout : STORE_IO_SECONDS,
                   NULL, NULL);
}

dt_status_t dt_store_get(dt_store_t *s, const char *key, double timeout,
                         void **value, size_t *len)
{
    return dt_store_get_bounded(s, key, timeout, STORE_IO_SECONDS, value,
                                len);
}

dt_status_t dt_store_get_bounded(dt_store_t *s, const char *key,
                                 double timeout, double io, void **value,
                                 size_t *len)
{
    uint8_t head[5] = {STORE_GET};
    if (!value || !len || !(io > 0))
        return DT_ERR_INVALID;
    store_put_u32(head + 1, to_ms(timeout));
    /* The server answers a look at once, a wait when it ends (the slack);
     * a failure path's look at a silent store costs io, not io + slack. */
    dt_status_t st = request(s, head, sizeof head, key, NULL, 0,
                             timeout > 0 ? timeout + STORE_WAIT_SLACK : 0,
                             io < STORE_IO_SECONDS ? io : STORE_IO_SECONDS,
                             value, len);
    if (st == DT_ERR_TIMEOUT)
        dt_debug("rendezvous store: key '%s' not set within %.1f s", key,
                 timeout);
    return st;
}

/* One batch of dt_store_lookup, under the lock: every GET (wait 0) sent,
 * then every reply read. A timeout before a reply began leaves that reply
 * and the later ones owed (the framing is intact); anything else breaks
 * the connection. */
static dt_status_t lookup_batch(dt_store_t *s, const char *const *keys,
                                size_t n, void **values, size_t *lens)
{
    double deadline = dt_clock_now() + STORE_IO_SECONDS;
    int nomem = 0;
    dt_status_t st = skip_owed(s, deadline);
    if (st != DT_OK) {
        s->broken = st != DT_ERR_TIMEOUT;
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        size_t klen = strlen(keys[i]);
        uint8_t head[7] = {STORE_GET}; /* wait 0 ms: look once */
        store_put_u16(head + 5, (uint16_t)klen);
        if ((st = send_frame(s->fd, head, sizeof head, keys[i], klen,
                             deadline)) != DT_OK) {
            s->broken = 1;
            return st;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int w = wait_fd(s->fd, POLLIN, deadline);
        if (w == 0) {
            s->owed += (int)(n - i);
            return DT_ERR_TIMEOUT;
        }
        uint8_t *body = NULL;
        size_t len = 0;
        st = w < 0 ? DT_ERR_IO
                   : recv_frame(s->fd, 5 + STORE_MAX_VALUE, deadline, &body,
                                &len);
        if (st == DT_OK && (len < 5 || body[0] != STORE_REPLY))
            st = DT_ERR_INVALID;
        dt_status_t found = st == DT_OK
                                ? (dt_status_t)(int32_t)store_get_u32(body + 1)
                                : st;
        if (st == DT_OK && found == DT_OK) {
            values[i] = malloc(len - 5 + 1);
            nomem |= !values[i];
            if (values[i]) {
                memcpy(values[i], body + 5, len - 5);
                ((char *)values[i])[len - 5] = '\0'; /* handy for text */
                lens[i] = len - 5;
            }
        } else if (st == DT_OK && found != DT_ERR_TIMEOUT) {
            st = DT_ERR_INVALID; /* a GET answers a value or "unset" */
        }
        free(body);
        if (st != DT_OK) {
            s->broken = 1;
            return st;
        }
    }
    return nomem ? DT_ERR_NOMEM : DT_OK;
}

dt_status_t dt_store_lookup(dt_store_t *s, const char *const *keys, size_t n,
                            void **values, size_t *lens)
{
    if (!s || (n && (!keys || !values || !lens)))
        return DT_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        size_t klen = keys[i] ? strlen(keys[i]) : 0;
        values[i] = NULL;
        lens[i] = 0;
        if (klen == 0 || klen > STORE_MAX_KEY) {
            dt_error("rendezvous store: key '%.64s%s' must be 1 to %d bytes",
                     keys[i] ? keys[i] : "(null)", klen > 64 ? "..." : "",
                     STORE_MAX_KEY);
            return DT_ERR_INVALID;
        }
    }
    dt_status_t st = DT_OK;
    pthread_mutex_lock(&s->lock);
    if (s->broken) {
        st = DT_ERR_PEER;
        dt_error("rendezvous store at %s: connection unusable after an "
                 "earlier error",
                 s->where);
    }
    /* Batches bound what waits in the socket buffers both ways. */
    for (size_t i = 0; st == DT_OK && i < n; i += STORE_LOOKUP_BATCH) {
        size_t k = n - i < STORE_LOOKUP_BATCH ? n - i : STORE_LOOKUP_BATCH;
        st = lookup_batch(s, keys + i, k, values + i, lens + i);
        if (st != DT_OK)
            dt_error("rendezvous store at %s: looking up '%s' and %zu more "
                     "keys failed (%s); has dtctl stopped?",
                     s->where, keys[i], k - 1, dt_status_str(st));
    }
    pthread_mutex_unlock(&s->lock);
    if (st != DT_OK)
        for (size_t i = 0; i < n; i++) {
            free(values[i]);
            values[i] = NULL;
        }
    return st == DT_ERR_IO ? DT_ERR_PEER : st;
}

dt_status_t dt_store_add(dt_store_t *s, const char *key, int64_t delta,
                         int64_t *result)
{
    return dt_store_add_bounded(s, key, delta, result, STORE_IO_SECONDS);
}

dt_status_t dt_store_add_bounded(dt_store_t *s, const char *key,
                                 int64_t delta, int64_t *result,
                                 double timeout)
{
    uint8_t head[9] = {STORE_ADD};
    if (!(timeout > 0))
        return DT_ERR_INVALID;
    store_put_u64(head + 1, (uint64_t)delta);
    void *v = NULL;
    size_t n = 0;
    dt_status_t st = request(s, head, sizeof head, key, NULL, 0, 0,
                             timeout < STORE_IO_SECONDS ? timeout
                                                        : STORE_IO_SECONDS,
                             &v, &n);
    if (st == DT_OK && n != 8)
        st = DT_ERR_INVALID;
    if (st == DT_OK && result)
        *result = (int64_t)store_get_u64(v);
    if (st == DT_ERR_INVALID)
        dt_error("rendezvous store: add to '%s' failed: its value is not an "
                 "integer or the sum overflows",
                 key);
    free(v);
    return st;
}

dt_status_t dt_store_barrier(dt_store_t *s, const char *name, int n,
                             double timeout)
{
    return store_barrier_bounded(s, name, n, timeout, STORE_IO_SECONDS);
}

dt_status_t store_barrier_bounded(dt_store_t *s, const char *name, int n,
                                  double timeout, double io)
{
    uint8_t head[9] = {STORE_BARRIER};
    if (n < 1 || !(io > 0))
        return DT_ERR_INVALID;
    store_put_u32(head + 1, (uint32_t)n);
    store_put_u32(head + 5, to_ms(timeout));
    dt_status_t st = request(s, head, sizeof head, name, NULL, 0,
                             (timeout > 0 ? timeout : 0) + STORE_WAIT_SLACK,
                             io < STORE_IO_SECONDS ? io : STORE_IO_SECONDS,
                             NULL, NULL);
    if (st == DT_ERR_TIMEOUT)
        dt_error("rendezvous store: barrier '%s' of %d did not fill within "
                 "%.1f s: some worker did not arrive (crashed or stuck)%s",
                 name, n, timeout,
                 io < STORE_IO_SECONDS ? ", or the store stopped answering "
                                         "(dtctl stopped, or its host cut "
                                         "off?)"
                                       : "");
    return st;
}
