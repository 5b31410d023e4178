/* skel.c — a minimal dt transport: TCP, one socket per pair of ranks, wired
 * up through the rendezvous store and authenticated with dt/auth.h. Early
 * messages are kept until their receive is posted; wait polls for a bounded
 * time (dt/wait.h), then sleeps in poll(). README.md walks through it. */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/auth.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include <dt/store.h>
#include <dt/wait.h>

#define HDR 16 /* header bytes: tag and length, 64 bits each, big-endian */

struct dt_request {                    /* a send, a receive or a message read */
    dt_request_t *next;                /* in its list, in order              */
    int peer, send, tag, done;
    char *buf, *data;                  /* the bytes; data: a message's own   */
    size_t len, off;                   /* off: bytes moved, the header too   */
    uint64_t hdr[2];
};
typedef struct ctx {
    int rank, size;
    double timeout;
    dt_wait_spin_t spin;
    dt_request_t *reqs, *arrived;      /* posted, not freed; messages read   */
    dt_status_t err;                   /* sticky: once a peer failed         */
    struct pollfd pfd[];               /* pfd[p].fd: the socket to rank p    */
} ctx_t;

static dt_status_t fail(ctx_t *c, int p, dt_status_t st, const char *what)
{
    if (c->err == DT_OK)
        dt_error("skel: rank %d: rank %d %s", c->rank, p, what);
    return c->err = st;
}

/* A new request or message at the end of a list; NULL when out of memory. */
static dt_request_t *add(dt_request_t **list, int peer, int send, int tag, void *buf, size_t len)
{
    dt_request_t *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    *r = (dt_request_t){.peer = peer, .send = send, .tag = tag, .buf = buf, .len = len,
                        .hdr = {htobe64((uint64_t)tag), htobe64(len)}};
    while (*list)
        list = &(*list)->next;
    *list = r;
    return r;
}
static void drop(dt_request_t **list, dt_request_t *r)
{
    while (*list != r)
        list = &(*list)->next;
    *list = r->next;
    free(r->data);
    free(r);
}

/* Send or receive r's header, then its payload: 1 once it is done, 0 when
 * the socket is full (or empty), the error when the peer failed. */
static int move(ctx_t *c, dt_request_t *r)
{
    while (!r->done) {
        int fd = c->pfd[r->peer].fd, head = r->off < HDR;
        char *at = head ? (char *)r->hdr + r->off : r->buf + (r->off - HDR);
        size_t n = head ? HDR - r->off : HDR + r->len - r->off;
        ssize_t k;
        if (r->send) /* MSG_MORE: the header waits for its payload */
            k = send(fd, at, n, MSG_DONTWAIT | MSG_NOSIGNAL | (head && r->len ? MSG_MORE : 0));
        else
            k = recv(fd, at, n, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (k <= 0)
            return fail(c, r->peer, DT_ERR_PEER, r->send ? "cannot be written to (died?)"
                                                         : "closed the connection (died?)");
        r->off += (size_t)k;
        if (!r->send && r->off == HDR) { /* a header read: room for its payload */
            r->tag = (int)be64toh(r->hdr[0]);
            r->len = be64toh(r->hdr[1]);
            r->buf = r->data = malloc(r->len ? r->len : 1);
            if (!r->data)
                return fail(c, r->peer, DT_ERR_NOMEM, "sent more than our memory holds");
        }
        r->done = r->off == HDR + r->len;
    }
    return 1;
}

/* The first receive posted with a tag takes the first message of that tag. */
static dt_status_t match(ctx_t *c)
{
    for (dt_request_t **r = &c->reqs; *r; r = &(*r)->next) {
        dt_request_t *hit = c->arrived;
        while (hit && (!hit->done || hit->peer != (*r)->peer || hit->tag != (*r)->tag))
            hit = hit->next;
        if ((*r)->send || (*r)->done || !hit)
            continue;
        if (hit->len > (*r)->len)
            return fail(c, hit->peer, DT_ERR_INVALID, "sent more than the receive holds");
        memcpy((*r)->buf, hit->data, hit->len);
        (*r)->done = 1;
        drop(&c->arrived, hit);
    }
    return DT_OK;
}

/* Write what the socket to p takes, read what is there; never blocks. */
static dt_status_t pump(ctx_t *c, int p)
{
    dt_request_t *m = c->arrived;
    int k = 1;
    for (dt_request_t *r = c->reqs; r && k > 0; r = r->next) /* p's sends, in order */
        if (r->send && r->peer == p)
            k = move(c, r);
    c->pfd[p].events = k == 0 ? POLLIN | POLLOUT : POLLIN; /* for wait's poll() */
    while (m && (m->peer != p || m->done)) /* the message coming in, if any */
        m = m->next;
    while (k >= 0) {
        if (!m && !(m = add(&c->arrived, p, 0, 0, NULL, 0)))
            return fail(c, p, DT_ERR_NOMEM, "sent more than our memory holds");
        if ((k = move(c, m)) == 0)
            return match(c);
        m = NULL; /* whole (or failed): on to the next */
    }
    return k;
}

/* The core passes other ranks and host memory only (this has no caps). */
static dt_status_t post(ctx_t *c, int peer, const void *buf, size_t len, dt_mem_t mem, int tag,
                        int send, dt_request_t **out)
{
    (void)mem;
    if (c->err != DT_OK)
        return c->err;
    *out = add(&c->reqs, peer, send, tag, (void *)buf, len);
    return *out ? pump(c, peer) : DT_ERR_NOMEM; /* small messages often finish here */
}
static dt_status_t sk_isend(void *c, int peer, const void *buf, size_t len, dt_mem_t mem,
                            int tag, dt_request_t **req)
{
    return post(c, peer, buf, len, mem, tag, 1, req);
}
static dt_status_t sk_irecv(void *c, int peer, void *buf, size_t len, dt_mem_t mem,
                            int tag, dt_request_t **req)
{
    return post(c, peer, buf, len, mem, tag, 0, req);
}

/* Progress on every peer (a send may wait for a read), polling while
 * dt/wait.h says it pays, then sleeping in poll(). */
static dt_status_t sk_wait(void *ctx, dt_request_t **reqs, size_t n, int timeout_ms)
{
    ctx_t *c = ctx;
    double start = dt_clock_now();
    double end = start + (timeout_ms < 0 ? c->timeout : timeout_ms / 1e3);
    int slept = 0;
    size_t i = 0;
    for (;;) {
        for (int p = 0; p < c->size && c->err == DT_OK; p++)
            if (p != c->rank)
                pump(c, p);
        while (i < n && reqs[i]->done)
            i++;
        double now = dt_clock_now();
        if (c->err != DT_OK || i == n || now >= end)
            break;
        if (!dt_wait_spin_again(&c->spin, start)) {
            poll(c->pfd, (nfds_t)c->size, (int)((end - now) * 1e3) + 1); /* ours: fd -1 */
            slept = 1;
        }
    }
    if (i < n && c->err == DT_OK && timeout_ms < 0)
        dt_error("skel: rank %d: waited %.0f s for rank %d (tag %d): is it stuck?", c->rank,
                 c->timeout, reqs[i]->peer, reqs[i]->tag);
    if (i < n) /* the requests stay valid; after a failure, fini frees them */
        return c->err != DT_OK ? c->err : DT_ERR_TIMEOUT;
    if (!slept)
        dt_wait_spin_paid(&c->spin);
    for (i = 0; i < n; i++)
        drop(&c->reqs, reqs[i]);
    return DT_OK;
}
/* test is a wait that does not wait. */
static dt_status_t sk_test(void *ctx, dt_request_t *r, int *done)
{
    dt_status_t st = sk_wait(ctx, &r, 1, 0);
    *done = st == DT_OK;
    return st == DT_ERR_TIMEOUT ? DT_OK : st;
}

/* Listen on bind_addr, publish that address (a struct sockaddr) under a key
 * of this dt_init's own (a second dt_init must not find the first one's),
 * connect to each lower rank and accept each higher one. */
static dt_status_t wireup(ctx_t *c, const dt_transport_args_t *a)
{
    double deadline = dt_clock_now() + c->timeout;
    dt_auth_t au = {"skel", a->token, a->token_len, c->rank, c->size, 0};
    struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *ai;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char key[64];
    int64_t epoch;
    int lfd = -1, one = 1;
    snprintf(key, sizeof key, "skel/inits/%d", c->rank);
    DT_CHECK(dt_store_add(a->store, key, 1, &epoch));
    if (getaddrinfo(a->bind_addr, "0", &hints, &ai) == 0) {
        lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* accepted ones inherit it */
        if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, SOMAXCONN) ||
            getsockname(lfd, (struct sockaddr *)&ss, &sl)) {
            close(lfd);
            lfd = -1;
        }
        freeaddrinfo(ai);
    }
    if (lfd < 0) {
        dt_error("skel: rank %d: cannot listen on %s: %s", c->rank, a->bind_addr, strerror(errno));
        return DT_ERR_IO;
    }
    snprintf(key, sizeof key, "skel/%lld/addr/%d", (long long)epoch, c->rank);
    dt_status_t st = dt_store_set(a->store, key, &ss, sl);
    for (int p = 0; p < c->rank && st == DT_OK; p++) {
        void *addr = NULL;
        size_t len = 0;
        snprintf(key, sizeof key, "skel/%lld/addr/%d", (long long)epoch, p);
        st = dt_store_get(a->store, key, deadline - dt_clock_now(), &addr, &len);
        if (st == DT_OK) /* fini closes it */
            c->pfd[p].fd = socket(((struct sockaddr *)addr)->sa_family,
                                  SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (st == DT_OK && connect(c->pfd[p].fd, addr, (socklen_t)len) == 0) {
            setsockopt(c->pfd[p].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            au.timeout = deadline - dt_clock_now();
            st = dt_auth_connect(c->pfd[p].fd, &au, p, 0); /* logs why when it fails */
        } else {
            dt_error("skel: rank %d: cannot connect to rank %d: %s", c->rank, p,
                     st == DT_OK ? strerror(errno) : "it never published its address");
            st = DT_ERR_PEER;
        }
        free(addr);
    }
    int next = c->rank + 1; /* the first rank above that has not connected */
    while (next < c->size && st == DT_OK) {
        struct pollfd pf = {lfd, POLLIN, 0};
        double left = deadline - dt_clock_now();
        int p, fd = -1;
        if (left <= 0) {
            dt_error("skel: rank %d: rank %d did not connect in time", c->rank, next);
            st = DT_ERR_PEER;
        } else if (poll(&pf, 1, (int)(left * 1e3) + 1) > 0 && (fd = accept(lfd, NULL, NULL)) >= 0) {
            au.timeout = left < 10 ? left : 10; /* a stray client cannot stall us */
            if (dt_auth_accept(fd, &au, c->rank + 1, c->size, 1, &p, NULL) == DT_OK)
                c->pfd[p].fd = fd;
            else
                close(fd); /* a stray client, logged */
        }
        while (next < c->size && c->pfd[next].fd >= 0)
            next++;
    }
    close(lfd);
    return st;
}

static void sk_fini(void *ctx)
{
    ctx_t *c = ctx;
    for (int p = 0; p < c->size; p++)
        if (c->pfd[p].fd >= 0)
            close(c->pfd[p].fd);
    while (c->reqs) /* never finished, or left after a failure */
        drop(&c->reqs, c->reqs);
    while (c->arrived)
        drop(&c->arrived, c->arrived);
    free(c);
}

static dt_status_t sk_init(const dt_config_t *cfg, const dt_transport_args_t *a, void **out)
{
    ctx_t *c = calloc(1, sizeof *c + (size_t)a->size * sizeof c->pfd[0]);
    (void)cfg; /* no keys: README.md says how to add one */
    if (!c)
        return DT_ERR_NOMEM;
    *c = (ctx_t){.rank = a->rank, .size = a->size, .timeout = a->timeout};
    for (int p = 0; p < c->size; p++)
        c->pfd[p].fd = -1;
    dt_wait_spin_init(&c->spin, "auto", "transport.skel", a->local_size); /* cannot fail */
    dt_status_t st = wireup(c, a);
    if (st != DT_OK)
        sk_fini(c);
    else
        *out = c;
    return st;
}

static const dt_transport_ops_t ops = {
    .size = sizeof ops, .init = sk_init, .isend = sk_isend, .irecv = sk_irecv,
    .test = sk_test, .wait = sk_wait, .fini = sk_fini};
DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    DT_PLUGIN_ABI, DT_KIND_TRANSPORT, "skel", "1.0",
    "example: TCP, one socket per pair of ranks (examples/transport-skeleton)",
    NULL, NULL, &ops};
