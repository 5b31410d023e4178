/* skel.c — a minimal dt transport: one TCP socket per pair of ranks.
 *
 * Wire-up: each rank listens on the address dt chose, publishes it in the
 * rendezvous store, connects to every lower rank and accepts every higher
 * one; dt/auth.h proves that both ends hold the job token. A message is a
 * 12-byte header (tag, length) and its payload, read into a buffer of its
 * own: a receive takes the first message from its peer with its tag,
 * whether it arrived before the receive was posted or after. Every call
 * moves what the sockets take without blocking; wait polls for a bounded
 * time (dt/wait.h), then sleeps in poll(). Host memory only and no native
 * collectives: the core runs its own algorithms over isend/irecv. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/auth.h>
#include <dt/clock.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include <dt/store.h>
#include <dt/wait.h>

struct dt_request {
    dt_request_t *next, *prev, *queue; /* all live ones; its peer's queue   */
    int peer, tag, done;
    char *buf;
    size_t len, off;                   /* sends: bytes written, header too  */
    uint32_t hdr[3];                   /* tag, length high, low (big-endian) */
};
typedef struct msg {                   /* a message read from a peer        */
    struct msg *next;
    int tag;
    size_t len, got;
    char *data;
} msg_t;
typedef struct peer {
    int fd;
    dt_request_t *sends, *recvs;       /* not done yet, in posting order    */
    msg_t *arrived, *in;               /* read, not yet taken; being read   */
    uint32_t hdr[3];
    size_t hdr_got;
} peer_t;
typedef struct ctx {
    int rank, size;
    double timeout;
    dt_wait_spin_t spin;
    peer_t *peers;
    struct pollfd *pfd;
    dt_request_t *live;                /* fini frees those never finished   */
    dt_status_t err;                   /* sticky: once a peer failed        */
} ctx_t;

static dt_status_t fail(ctx_t *c, int p, dt_status_t st, const char *what)
{
    if (c->err == DT_OK)
        dt_error("skel: rank %d: rank %d %s", c->rank, p, what);
    return c->err = st;
}

/* The first receive posted with a tag takes the first message of that tag. */
static dt_status_t match(ctx_t *c, int p)
{
    peer_t *pe = &c->peers[p];
    for (dt_request_t **r = &pe->recvs; *r;) {
        msg_t **m = &pe->arrived, *hit;
        while (*m && (*m)->tag != (*r)->tag)
            m = &(*m)->next;
        if (!(hit = *m)) {
            r = &(*r)->queue;
            continue;
        }
        if (hit->len > (*r)->len)
            return fail(c, p, DT_ERR_INVALID, "sent more than the receive holds");
        memcpy((*r)->buf, hit->data, hit->len);
        (*r)->done = 1;
        *r = (*r)->queue;
        *m = hit->next;
        free(hit->data);
        free(hit);
    }
    return DT_OK;
}

/* Write what the socket takes, read what is there; never blocks. */
static dt_status_t pump(ctx_t *c, int p)
{
    peer_t *pe = &c->peers[p];
    while (pe->sends) {
        dt_request_t *r = pe->sends;
        size_t h = sizeof r->hdr, o = r->off, b = o > h ? o - h : 0;
        struct iovec iov[2] = {{(char *)r->hdr + (o < h ? o : h), o < h ? h - o : 0},
                               {r->buf + b, r->len - b}};
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
        ssize_t k = sendmsg(pe->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (k < 0)
            return fail(c, p, DT_ERR_PEER, "cannot be written to (died?)");
        if ((r->off += (size_t)k) == h + r->len)
            r->done = 1, pe->sends = r->queue;
    }
    for (;;) {
        msg_t *m = pe->in, **q = &pe->arrived;
        char *dst = m ? m->data + m->got : (char *)pe->hdr + pe->hdr_got;
        size_t want = m ? m->len - m->got : sizeof pe->hdr - pe->hdr_got;
        ssize_t k = want ? recv(pe->fd, dst, want, MSG_DONTWAIT) : 0;
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            return match(c, p);
        if (k < 0 || (k == 0 && want))
            return fail(c, p, DT_ERR_PEER, "closed the connection (exited or crashed?)");
        if (!m && (pe->hdr_got += (size_t)k) == sizeof pe->hdr) { /* header in */
            size_t len = (size_t)ntohl(pe->hdr[1]) << 32 | ntohl(pe->hdr[2]);
            pe->hdr_got = 0;
            if (!(m = pe->in = calloc(1, sizeof *m)) || !(m->data = malloc(len ? len : 1)))
                return fail(c, p, DT_ERR_NOMEM, "sent a message larger than our memory");
            m->tag = (int)ntohl(pe->hdr[0]), m->len = len;
        } else if (m && (m->got += (size_t)k) == m->len) { /* message in */
            while (*q)
                q = &(*q)->next;
            *q = m, pe->in = NULL;
        }
    }
}
static dt_status_t progress(ctx_t *c)
{
    for (int p = 0; p < c->size && c->err == DT_OK; p++)
        if (p != c->rank)
            pump(c, p);
    return c->err;
}

static dt_status_t post(ctx_t *c, int peer, void *buf, size_t len, dt_mem_t mem,
                        int tag, int send, dt_request_t **out)
{
    if (c->err != DT_OK)
        return c->err;
    if (peer < 0 || peer >= c->size || peer == c->rank || mem != DT_MEM_HOST)
        return DT_ERR_INVALID;
    dt_request_t *r = calloc(1, sizeof *r), **q;
    if (!r)
        return DT_ERR_NOMEM;
    *r = (dt_request_t){.next = c->live, .peer = peer, .tag = tag, .buf = buf,
                        .len = len, .hdr = {htonl((uint32_t)tag),
                        htonl((uint32_t)((uint64_t)len >> 32)), htonl((uint32_t)len)}};
    if (c->live)
        c->live->prev = r;
    c->live = *out = r;
    for (q = send ? &c->peers[peer].sends : &c->peers[peer].recvs; *q;)
        q = &(*q)->queue;
    *q = r;
    return pump(c, peer); /* small messages often finish right here */
}
static dt_status_t sk_isend(void *c, int peer, const void *buf, size_t len,
                            dt_mem_t mem, int tag, dt_request_t **req)
{
    return post(c, peer, (void *)buf, len, mem, tag, 1, req);
}
static dt_status_t sk_irecv(void *c, int peer, void *buf, size_t len,
                            dt_mem_t mem, int tag, dt_request_t **req)
{
    return post(c, peer, buf, len, mem, tag, 0, req);
}
static void req_free(ctx_t *c, dt_request_t *r)
{
    *(r->prev ? &r->prev->next : &c->live) = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r);
}
static dt_status_t sk_test(void *ctx, dt_request_t *r, int *done)
{
    ctx_t *c = ctx;
    if (!r->done)
        progress(c);
    if ((*done = r->done))
        req_free(c, r);
    return *done ? DT_OK : c->err; /* after a failure, fini frees it */
}

/* Poll while dt/wait.h says it pays, then sleep in poll(). */
static dt_status_t sk_wait(void *ctx, dt_request_t **reqs, size_t n, int timeout_ms)
{
    ctx_t *c = ctx;
    double start = dt_clock_now(), now;
    double end = start + (timeout_ms < 0 ? c->timeout : timeout_ms / 1e3);
    int slept = 0;
    for (size_t i = 0;; i = 0) {
        DT_CHECK(progress(c));
        while (i < n && reqs[i]->done)
            i++;
        if (i == n)
            break;
        if ((now = dt_clock_now()) >= end) {
            if (timeout_ms < 0)
                dt_error("skel: rank %d: waited %.0f s for rank %d (tag %d): is it stuck?",
                         c->rank, c->timeout, reqs[i]->peer, reqs[i]->tag);
            return DT_ERR_TIMEOUT; /* the requests stay valid */
        }
        if (dt_wait_spin_again(&c->spin, start))
            continue;
        for (int p = 0; p < c->size; p++)
            c->pfd[p] = (struct pollfd){c->peers[p].fd, /* fd -1: ignored */
                (short)(POLLIN | (c->peers[p].sends ? POLLOUT : 0)), 0};
        poll(c->pfd, (nfds_t)c->size, (int)((end - now) * 1e3) + 1);
        slept = 1;
    }
    if (!slept)
        dt_wait_spin_paid(&c->spin);
    for (size_t i = 0; i < n; i++)
        req_free(c, reqs[i]);
    return DT_OK;
}

/* Listen, publish "host port" under an epoch key (one per dt_init), connect
 * to the ranks below and accept the ranks above, each authenticated. */
static dt_status_t wireup(ctx_t *c, const dt_transport_args_t *a)
{
    double deadline = dt_clock_now() + c->timeout;
    char key[64], host[NI_MAXHOST], port[NI_MAXSERV], val[sizeof host + sizeof port];
    struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *ai;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int64_t epoch;
    int lfd = -1;
    snprintf(key, sizeof key, "skel/inits/%d", c->rank);
    DT_CHECK(dt_store_add(a->store, key, 1, &epoch));
    if (getaddrinfo(a->bind_addr, "0", &hints, &ai) == 0) {
        if ((lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 &&
            (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, c->size) ||
             getsockname(lfd, (struct sockaddr *)&ss, &sl)))
            close(lfd), lfd = -1;
        freeaddrinfo(ai);
    }
    if (lfd < 0 || getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port,
                               sizeof port, NI_NUMERICHOST | NI_NUMERICSERV)) {
        dt_error("skel: rank %d: cannot listen on %s: %s", c->rank, a->bind_addr, strerror(errno));
        return DT_ERR_IO;
    }
    snprintf(val, sizeof val, "%s %s", host, port);
    snprintf(key, sizeof key, "skel/%lld/addr/%d", (long long)epoch, c->rank);
    dt_status_t st = dt_store_set(a->store, key, val, strlen(val));
    dt_auth_t au = {"skel", a->token, a->token_len, c->rank, c->size, 0};
    for (int p = 0; p < c->rank && st == DT_OK; p++) {
        void *v = NULL;
        size_t len = 0;
        snprintf(key, sizeof key, "skel/%lld/addr/%d", (long long)epoch, p);
        if (dt_store_get(a->store, key, deadline - dt_clock_now(), &v, &len) != DT_OK) {
            dt_error("skel: rank %d: rank %d never published its address", c->rank, p);
            st = DT_ERR_PEER;
            break;
        }
        snprintf(val, sizeof val, "%.*s", (int)len, (char *)v);
        free(v);
        hints.ai_flags = 0;
        int fd = -1;
        if (sscanf(val, "%1024s %31s", host, port) == 2 && !getaddrinfo(host, port, &hints, &ai)) {
            if ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 &&
                connect(fd, ai->ai_addr, ai->ai_addrlen))
                close(fd), fd = -1;
            freeaddrinfo(ai);
        }
        if (fd < 0) {
            dt_error("skel: rank %d: cannot connect to rank %d at %s", c->rank, p, val);
            st = DT_ERR_PEER;
            break;
        }
        c->peers[p].fd = fd; /* fini closes it, whatever happens next */
        au.timeout = deadline - dt_clock_now();
        st = dt_auth_connect(fd, &au, p, 0); /* logs why when it fails */
    }
    for (int got = c->rank + 1; got < c->size && st == DT_OK;) {
        struct pollfd pf = {lfd, POLLIN, 0};
        double left = deadline - dt_clock_now();
        if (left <= 0 || poll(&pf, 1, (int)(left * 1e3) + 1) <= 0) {
            dt_error("skel: rank %d: the ranks above did not all connect in time", c->rank);
            st = DT_ERR_PEER;
            break;
        }
        int fd = accept(lfd, NULL, NULL), p = -1;
        au.timeout = left < 10 ? left : 10; /* a stray client cannot stall us */
        if (fd >= 0 && dt_auth_accept(fd, &au, c->rank + 1, c->size, 1, &p, NULL) == DT_OK &&
            c->peers[p].fd < 0)
            c->peers[p].fd = fd, got++;
        else if (fd >= 0)
            close(fd);
    }
    close(lfd);
    for (int p = 0, one = 1; p < c->size && st == DT_OK; p++)
        if (p != c->rank) {
            setsockopt(c->peers[p].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            fcntl(c->peers[p].fd, F_SETFL, O_NONBLOCK);
        }
    return st;
}

static void sk_fini(void *ctx)
{
    ctx_t *c = ctx;
    for (int p = 0; p < c->size; p++) {
        peer_t *pe = &c->peers[p];
        if (pe->fd >= 0)
            close(pe->fd);
        if (pe->in)
            pe->in->next = pe->arrived, pe->arrived = pe->in;
        for (msg_t *m = pe->arrived, *next; m; m = next)
            next = m->next, free(m->data), free(m);
    }
    while (c->live)
        req_free(c, c->live);
    free(c->peers);
    free(c->pfd);
    free(c);
}

static dt_status_t sk_init(const dt_config_t *cfg, const dt_transport_args_t *a, void **out)
{
    const char *spin = "auto";
    ctx_t *c = calloc(1, sizeof *c);
    if (!c || !(c->peers = calloc((size_t)a->size, sizeof(peer_t))) ||
        !(c->pfd = calloc((size_t)a->size, sizeof(struct pollfd)))) {
        free(c ? c->peers : NULL), free(c);
        return DT_ERR_NOMEM;
    }
    c->rank = a->rank, c->size = a->size, c->timeout = a->timeout;
    for (int p = 0; p < a->size; p++)
        c->peers[p].fd = -1;
    dt_status_t st = dt_config_get_string(cfg, "transport.skel", "spin", &spin);
    if (st == DT_OK)
        st = dt_wait_spin_init(&c->spin, spin, "transport.skel", a->local_size);
    if (st == DT_OK && !a->store) {
        dt_error("skel: rank %d: no rendezvous store: start the job with dtctl run", c->rank);
        st = DT_ERR_INVALID;
    }
    if (st == DT_OK)
        st = wireup(c, a);
    if (st != DT_OK)
        sk_fini(c);
    else
        *out = c;
    return st;
}

static const dt_key_spec_t keys[] = {
    {"spin", DT_KEY_STRING, "auto", "how long wait polls before it sleeps: auto "
     "(only while each rank has a CPU of its own) or a duration up to 10ms"},
    {NULL, 0, NULL, NULL}};
static const dt_transport_ops_t ops = {
    .size = sizeof ops, .init = sk_init, .isend = sk_isend, .irecv = sk_irecv,
    .test = sk_test, .wait = sk_wait, .fini = sk_fini};
DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    DT_PLUGIN_ABI, DT_KIND_TRANSPORT, "skel", "1.0",
    "example: TCP, one socket per pair of ranks (examples/transport-skeleton)",
    keys, NULL, &ops};
