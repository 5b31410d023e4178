/* store_server.c — the rendezvous store server that dtctl runs for a job.
 *
 * One thread, one poll() loop, non-blocking sockets. Each connection is a
 * small state machine: HELLO -> PROOF -> READY. Nothing a client sends can
 * make the server block or allocate without bound: frames are length-checked
 * before they are buffered (tiny ones until the client has authenticated),
 * a client that has not authenticated by its deadline is dropped, and a
 * client that does not read its replies stops being served until it does.
 * Clients that fail the handshake or send garbage are dropped and logged
 * with their address. See docs/RENDEZVOUS.md for the protocol. */
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/store.h>
#include "store_proto.h"
#include "store_table.h"

#define MAX_CONNS 8192
#define OUT_HIGH_WATER (64 * 1024) /* stop serving a client that won't read */
#define INITIAL_IN_CAP 512

/* Unauthenticated connections: how many are logged one by one, then how
 * often the rest are summed up in one line (and how many addresses it
 * names). 3,000 garbage connections once printed 3,001 lines. */
#define STRANGERS_LOGGED 10
#define STRANGERS_INTERVAL 10.0
#define STRANGER_ADDRS 8

typedef enum conn_state { CS_HELLO, CS_PROOF, CS_READY } conn_state_t;
typedef enum pending_kind { PEND_NONE, PEND_GET, PEND_BARRIER } pending_kind_t;

typedef struct conn {
    dt_store_server_t *srv;
    int fd;
    int dead;
    conn_state_t state;
    char addr[80];            /* "ip:port" for log lines                   */
    double hs_deadline;       /* handshake must finish by then             */
    uint8_t nonce_c[STORE_NONCE_BYTES], nonce_s[STORE_NONCE_BYTES];
    store_hello_t *hello;     /* what a DTSTORE2 HELLO said; NULL: v1      */
    uint8_t *hello_raw;       /* its bytes, which the client proof covers  */
    size_t hello_len;
    uint8_t *in;              /* received bytes, at most one frame ahead   */
    size_t in_len, in_cap;
    uint8_t *out;             /* replies not yet written                   */
    size_t out_len, out_off, out_cap;
    pending_kind_t pending;   /* a GET or BARRIER waiting for others       */
    char *pkey;
    double pdeadline;         /* 0: wait forever                           */
} conn_t;

typedef struct barrier {
    char *name;
    uint32_t n, arrived;
    struct barrier *next;
} barrier_t;

struct dt_store_server {
    int listen_fd;
    int wake[2];              /* stop request: a byte on wake[1]           */
    int port;
    char bind_addr[64];
    uint8_t token[DT_TOKEN_BYTES];
    double hs_seconds;
    pthread_t thread;
    conn_t **conns;
    size_t nconns, cap;
    store_table_t table;
    barrier_t *barriers;
    int released;             /* a waiting client was answered: its queued
                                 requests can now be handled               */
    double accept_paused;     /* out of fds: no accept() before this time */
    int fd_warned;            /* said so once, until an accept succeeds    */
    /* Strangers (connections dropped before they authenticated, and
     * connections refused): the first STRANGERS_LOGGED are logged one by
     * one, the rest summed up once per STRANGERS_INTERVAL and at stop. */
    long long strangers;      /* in all                                    */
    long long quiet;          /* not logged yet                            */
    double quiet_since;       /* first of them; 0: none                    */
    char quiet_addr[STRANGER_ADDRS][64]; /* distinct addresses among them */
    int quiet_naddr;
    long long quiet_other;    /* of addresses beyond quiet_addr            */
    int refused;              /* clients of another protocol (atomic)      */
};

/* ---- connections ------------------------------------------------------ */

static void conn_free(conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->in);
    free(c->out);
    free(c->pkey);
    free(c->hello);
    free(c->hello_raw);
    OPENSSL_cleanse(c->nonce_c, sizeof c->nonce_c);
    free(c);
}

/* One line for the strangers not logged since the last one. */
static void strangers_summary(dt_store_server_t *s, double now)
{
    if (!s->quiet)
        return;
    char from[STRANGER_ADDRS * 66 + 64] = "";
    size_t off = 0;
    for (int i = 0; i < s->quiet_naddr; i++)
        off += (size_t)snprintf(from + off, sizeof from - off, "%s%s",
                                i ? ", " : "", s->quiet_addr[i]);
    if (s->quiet_other)
        snprintf(from + off, sizeof from - off, " and %lld more",
                 s->quiet_other);
    dt_warn("rendezvous store: dropped or refused %lld more unauthenticated "
            "connection%s in the last %.0f s (%lld in all since the store "
            "started) from %s; they do not know the job token (a port "
            "scanner, or a client of another job?)",
            s->quiet, s->quiet == 1 ? "" : "s", now - s->quiet_since,
            s->strangers, from);
    s->quiet = 0;
    s->quiet_since = 0;
    s->quiet_naddr = 0;
    s->quiet_other = 0;
}

/* A connection dropped before it authenticated (or refused): log the
 * first few with their reason, count the rest by address. */
static void stranger(dt_store_server_t *s, const char *addr,
                     const char *what, const char *why)
{
    if (++s->strangers <= STRANGERS_LOGGED) {
        dt_warn("rendezvous store: %s %s: %s%s", what, addr, why,
                s->strangers == STRANGERS_LOGGED
                    ? " (further unauthenticated connections are summed "
                      "up in one line every 10 s)"
                    : "");
        return;
    }
    if (!s->quiet++)
        s->quiet_since = dt_clock_now();
    /* The address without its port: "10.0.0.7:51234" -> "10.0.0.7". */
    char host[64];
    snprintf(host, sizeof host, "%s", addr);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    for (int i = 0; i < s->quiet_naddr; i++)
        if (strcmp(s->quiet_addr[i], host) == 0)
            return;
    if (s->quiet_naddr < STRANGER_ADDRS)
        memcpy(s->quiet_addr[s->quiet_naddr++], host, sizeof host);
    else
        s->quiet_other++;
}

static void barrier_leave(dt_store_server_t *s, const char *name);
static void clear_pending(conn_t *c);

/* A connection is gone: a barrier it waits in no longer counts it at once
 * (not when it is reaped: a barrier filled in the same poll round would
 * have let everyone through without it). */
static void mark_dead(conn_t *c)
{
    if (c->pending == PEND_BARRIER && c->srv)
        barrier_leave(c->srv, c->pkey);
    if (c->pending != PEND_NONE)
        clear_pending(c);
    c->dead = 1;
}

static void drop(conn_t *c, dt_log_level_t level, const char *why)
{
    if (c->dead)
        return;
    if (level == DT_LOG_WARN && c->state != CS_READY && c->srv)
        stranger(c->srv, c->addr, "dropped connection from", why);
    else
        dt_log(level, "rendezvous store: dropped connection from %s: %s",
               c->addr, why);
    mark_dead(c);
}

static int queue(conn_t *c, const void *data, size_t len)
{
    if (c->out_len + len > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 256;
        while (cap < c->out_len + len)
            cap *= 2;
        uint8_t *n = realloc(c->out, cap);
        if (!n)
            return -1;
        c->out = n;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
    return 0;
}

/* Write what the socket takes now; the rest waits for POLLOUT. */
static void flush(conn_t *c)
{
    while (!c->dead && c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            c->out_off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else {
            drop(c, DT_LOG_DEBUG, "peer went away while being answered");
            return;
        }
    }
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
}

static void send_frame(conn_t *c, const uint8_t *body, size_t len,
                       const void *extra, size_t extra_len)
{
    uint8_t hdr[4];
    store_put_u32(hdr, (uint32_t)(len + extra_len));
    if (queue(c, hdr, 4) || queue(c, body, len) ||
        (extra_len && queue(c, extra, extra_len))) {
        drop(c, DT_LOG_ERROR, "out of memory queueing a reply");
        return;
    }
    flush(c);
}

static void reply(conn_t *c, dt_status_t st, const void *payload, size_t len)
{
    uint8_t body[5];
    body[0] = STORE_REPLY;
    store_put_u32(body + 1, (uint32_t)(int32_t)st);
    send_frame(c, body, sizeof body, payload, len);
}

static void clear_pending(conn_t *c)
{
    c->pending = PEND_NONE;
    free(c->pkey);
    c->pkey = NULL;
}

/* ---- barriers ---------------------------------------------------------- */

static barrier_t *barrier_find(dt_store_server_t *s, const char *name)
{
    for (barrier_t *b = s->barriers; b; b = b->next)
        if (strcmp(b->name, name) == 0)
            return b;
    return NULL;
}

static void barrier_remove(dt_store_server_t *s, barrier_t *b)
{
    for (barrier_t **p = &s->barriers; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            free(b->name);
            free(b);
            return;
        }
}

/* A waiter left (timeout or disconnect): it no longer counts. */
static void barrier_leave(dt_store_server_t *s, const char *name)
{
    barrier_t *b = barrier_find(s, name);
    if (b && b->arrived > 0 && --b->arrived == 0)
        barrier_remove(s, b);
}

/* ---- requests ------------------------------------------------------------ */

/* Key at body[off]: u16 length then bytes; NUL-free, 1..STORE_MAX_KEY.
 * Returns a malloc'd string, or NULL (malformed or no memory). */
static char *read_key(const uint8_t *body, size_t len, size_t off,
                      size_t *end)
{
    if (len < off + 2)
        return NULL;
    size_t klen = store_get_u16(body + off);
    if (klen == 0 || klen > STORE_MAX_KEY || len < off + 2 + klen ||
        memchr(body + off + 2, '\0', klen))
        return NULL;
    char *key = malloc(klen + 1);
    if (!key)
        return NULL;
    memcpy(key, body + off + 2, klen);
    key[klen] = '\0';
    *end = off + 2 + klen;
    return key;
}

static double deadline_from_ms(uint32_t ms)
{
    return ms == UINT32_MAX ? 0 : dt_clock_now() + ms / 1000.0;
}

/* A key was set: answer every GET waiting for it. */
static void wake_getters(dt_store_server_t *s, const char *key)
{
    const store_entry_t *e = store_table_find(&s->table, key);
    for (size_t i = 0; e && i < s->nconns; i++) {
        conn_t *c = s->conns[i];
        if (!c->dead && c->pending == PEND_GET && strcmp(c->pkey, key) == 0) {
            clear_pending(c);
            s->released = 1;
            reply(c, DT_OK, e->value, e->len);
        }
    }
}

static void handle_set(dt_store_server_t *s, conn_t *c, const uint8_t *b,
                       size_t len)
{
    size_t off;
    char *key = read_key(b, len, 1, &off);
    if (!key) {
        drop(c, DT_LOG_WARN, "malformed SET request");
        return;
    }
    if (len - off > STORE_MAX_VALUE) {
        free(key);
        drop(c, DT_LOG_WARN, "value larger than the store's limit");
        return;
    }
    dt_status_t st = store_table_set(&s->table, key, b + off, len - off);
    reply(c, st, NULL, 0);
    if (st == DT_OK)
        wake_getters(s, key);
    free(key);
}

static void handle_get(dt_store_server_t *s, conn_t *c, const uint8_t *b,
                       size_t len)
{
    size_t off;
    char *key = len >= 5 ? read_key(b, len, 5, &off) : NULL;
    if (!key || off != len) {
        free(key);
        drop(c, DT_LOG_WARN, "malformed GET request");
        return;
    }
    const store_entry_t *e = store_table_find(&s->table, key);
    uint32_t ms = store_get_u32(b + 1);
    if (e) {
        reply(c, DT_OK, e->value, e->len);
        free(key);
    } else if (ms == 0) {
        reply(c, DT_ERR_TIMEOUT, NULL, 0);
        free(key);
    } else {
        c->pending = PEND_GET;
        c->pkey = key;
        c->pdeadline = deadline_from_ms(ms);
    }
}

static void handle_add(dt_store_server_t *s, conn_t *c, const uint8_t *b,
                       size_t len)
{
    size_t off;
    char *key = len >= 9 ? read_key(b, len, 9, &off) : NULL;
    if (!key || off != len) {
        free(key);
        drop(c, DT_LOG_WARN, "malformed ADD request");
        return;
    }
    int64_t result = 0;
    dt_status_t st = store_table_add(&s->table, key,
                                     (int64_t)store_get_u64(b + 1), &result);
    uint8_t payload[8];
    store_put_u64(payload, (uint64_t)result);
    reply(c, st, payload, st == DT_OK ? sizeof payload : 0);
    if (st == DT_OK)
        wake_getters(s, key);
    free(key);
}

static void handle_barrier(dt_store_server_t *s, conn_t *c, const uint8_t *b,
                           size_t len)
{
    size_t off;
    char *name = len >= 9 ? read_key(b, len, 9, &off) : NULL;
    uint32_t n = len >= 9 ? store_get_u32(b + 1) : 0;
    if (!name || off != len || n == 0) {
        free(name);
        drop(c, DT_LOG_WARN, "malformed BARRIER request");
        return;
    }
    barrier_t *bar = barrier_find(s, name);
    if (!bar) {
        bar = calloc(1, sizeof *bar);
        if (!bar || !(bar->name = strdup(name))) {
            free(bar);
            free(name);
            reply(c, DT_ERR_NOMEM, NULL, 0);
            return;
        }
        bar->n = n;
        bar->next = s->barriers;
        s->barriers = bar;
    }
    if (bar->n != n) {
        dt_warn("rendezvous store: %s entered barrier '%s' for %u clients, "
                "but others entered it for %u; every rank must pass the same "
                "count",
                c->addr, name, n, bar->n);
        free(name);
        reply(c, DT_ERR_INVALID, NULL, 0);
        return;
    }
    if (++bar->arrived < n) {
        c->pending = PEND_BARRIER;
        c->pkey = name;
        c->pdeadline = deadline_from_ms(store_get_u32(b + 5));
        return;
    }
    /* Last one in: release everyone, and forget the barrier so the name
     * can be used again. */
    for (size_t i = 0; i < s->nconns; i++) {
        conn_t *o = s->conns[i];
        if (!o->dead && o->pending == PEND_BARRIER &&
            strcmp(o->pkey, name) == 0) {
            clear_pending(o);
            s->released = 1;
            reply(o, DT_OK, NULL, 0);
        }
    }
    barrier_remove(s, bar);
    free(name);
    reply(c, DT_OK, NULL, 0);
}

/* ---- handshake ----------------------------------------------------------- */

/* HELLO: "DTSTORE1" (dt before protocol versions: magic and nonce) or
 * "DTSTORE2" (who the client is). Both get the same CHALLENGE: a client
 * of another protocol is refused only once it proved the job token, so a
 * stranger can neither stop the job nor put words in dtctl's log. */
static void handle_hello(dt_store_server_t *s, conn_t *c, const uint8_t *b,
                         size_t len)
{
    int v1 = len == STORE_HELLO_V1_LEN && b[0] == STORE_HELLO &&
             memcmp(b + 1, STORE_MAGIC_V1, STORE_MAGIC_LEN) == 0;
    if (!v1) {
        c->hello = malloc(sizeof *c->hello);
        c->hello_raw = malloc(len);
        if (!c->hello || !c->hello_raw) {
            drop(c, DT_LOG_ERROR, "out of memory reading a greeting");
            return;
        }
        if (store_hello_decode(b, len, c->hello) != DT_OK) {
            drop(c, DT_LOG_WARN, "not a dt store client (bad greeting)");
            return;
        }
        memcpy(c->hello_raw, b, len);
        c->hello_len = len;
    }
    memcpy(c->nonce_c, b + 1 + STORE_MAGIC_LEN, STORE_NONCE_BYTES);
    uint8_t msg[1 + STORE_NONCE_BYTES + STORE_MAC_BYTES];
    msg[0] = STORE_CHALLENGE;
    if (RAND_bytes(c->nonce_s, STORE_NONCE_BYTES) != 1 ||
        store_proof(s->token, STORE_ROLE_SERVER, c->nonce_c, c->nonce_s,
                    msg + 1 + STORE_NONCE_BYTES) != DT_OK) {
        drop(c, DT_LOG_ERROR, "could not compute the handshake (libcrypto)");
        return;
    }
    memcpy(msg + 1, c->nonce_s, STORE_NONCE_BYTES);
    c->state = CS_PROOF;
    send_frame(c, msg, sizeof msg, NULL, 0);
}

/* A client of this job that speaks another protocol: said once here (the
 * whole story: dtctl stops the job on it), answered with this side's
 * protocol so the worker says it too, then closed. */
static void refuse(dt_store_server_t *s, conn_t *c)
{
    char why[2048];
    store_refusal_text(c->hello, c->addr, why, sizeof why);
    dt_error("rendezvous store: %s", why);
    __atomic_add_fetch(&s->refused, 1, __ATOMIC_SEQ_CST);
    if (c->hello) { /* a dt from before protocols takes no answer */
        uint8_t msg[3 + 2 * (STORE_TEXT_MAX + 1)];
        size_t off = 3;
        store_hello_t me;
        store_hello_self(&me);
        msg[0] = STORE_REFUSED;
        store_put_u16(msg + 1, DT_PROTOCOL_VERSION);
        store_text_put(msg, &off, me.version);
        store_text_put(msg, &off, me.program);
        send_frame(c, msg, off, NULL, 0);
    }
    mark_dead(c);
}

static void handle_proof(dt_store_server_t *s, conn_t *c, const uint8_t *b,
                         size_t len)
{
    if (len != 1 + STORE_MAC_BYTES || b[0] != STORE_PROOF) {
        drop(c, DT_LOG_WARN, "malformed handshake");
        return;
    }
    int ok = c->hello ? store_proof_hello_ok(s->token, c->nonce_s,
                                             c->hello_raw, c->hello_len,
                                             b + 1)
                      : store_proof_ok(s->token, STORE_ROLE_CLIENT,
                                       c->nonce_c, c->nonce_s, b + 1);
    if (!ok) {
        drop(c, DT_LOG_WARN,
             "it does not know the job token (authentication failed)");
        return;
    }
    if (!c->hello || c->hello->protocol != DT_PROTOCOL_VERSION) {
        refuse(s, c);
        return;
    }
    c->state = CS_READY;
    dt_trace("rendezvous store: %s authenticated", c->addr);
    uint8_t msg = STORE_WELCOME;
    send_frame(c, &msg, 1, NULL, 0);
}

static void handle_frame(dt_store_server_t *s, conn_t *c, const uint8_t *b,
                         size_t len)
{
    switch (c->state) {
    case CS_HELLO: handle_hello(s, c, b, len); return;
    case CS_PROOF: handle_proof(s, c, b, len); return;
    case CS_READY: break;
    }
    switch (b[0]) {
    case STORE_SET: handle_set(s, c, b, len); break;
    case STORE_GET: handle_get(s, c, b, len); break;
    case STORE_ADD: handle_add(s, c, b, len); break;
    case STORE_BARRIER: handle_barrier(s, c, b, len); break;
    default: drop(c, DT_LOG_WARN, "unknown request type"); break;
    }
}

/* Handle every complete frame in c->in, one at a time, while the client is
 * not waiting and is reading its replies. */
static void process_input(dt_store_server_t *s, conn_t *c)
{
    while (!c->dead && c->pending == PEND_NONE &&
           c->out_len - c->out_off < OUT_HIGH_WATER && c->in_len >= 4) {
        uint32_t len = store_get_u32(c->in);
        uint32_t limit = c->state == CS_READY ? STORE_MAX_FRAME
                                              : STORE_MAX_HANDSHAKE_FRAME;
        if (len == 0 || len > limit) {
            char why[128];
            snprintf(why, sizeof why,
                     "message of %u bytes is %s (limit %u bytes)", len,
                     len ? "too large" : "empty", limit);
            drop(c, DT_LOG_WARN, why);
            return;
        }
        if (c->in_len < 4 + (size_t)len) {
            if (c->in_cap < 4 + (size_t)len) {
                uint8_t *n = realloc(c->in, 4 + (size_t)len);
                if (!n) {
                    drop(c, DT_LOG_ERROR, "out of memory buffering a request");
                    return;
                }
                c->in = n;
                c->in_cap = 4 + (size_t)len;
            }
            return;
        }
        handle_frame(s, c, c->in + 4, len);
        memmove(c->in, c->in + 4 + len, c->in_len - 4 - len);
        c->in_len -= 4 + (size_t)len;
    }
}

static void read_input(conn_t *c)
{
    while (!c->dead && c->in_len < c->in_cap) {
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len,
                         MSG_DONTWAIT);
        if (r > 0) {
            c->in_len += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (c->state == CS_READY) {
            dt_trace("rendezvous store: %s disconnected", c->addr);
            mark_dead(c);
        }
        else if (c->state == CS_PROOF)
            drop(c, DT_LOG_WARN,
                 "closed during the handshake (a worker that died while it "
                 "connected, a client without this job's token, or not a "
                 "dt worker)");
        else
            drop(c, DT_LOG_WARN, "closed before authenticating");
        return;
    }
}

/* How many connections may be authenticating at once: a quarter of the
 * descriptors dtctl may open (16..1024). Silent connections from anyone
 * who finds the port would otherwise take every descriptor for the
 * handshake's 10 s, and dtctl's pipes and launches fail with EMFILE.
 * dtctl raises its limit to about 4 a worker, so a job's own workers
 * all fit while they connect at once. */
static size_t handshake_cap(void)
{
    struct rlimit rl;
    rlim_t cap = 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        cap = rl.rlim_cur / 4;
    return cap < 16 ? 16 : cap > 1024 ? 1024 : (size_t)cap;
}

/* At the cap, the oldest handshake goes (a worker's takes milliseconds;
 * a silent stranger's its whole deadline). 1 when one was dropped. */
static int make_handshake_room(dt_store_server_t *s)
{
    size_t n = 0;
    conn_t *oldest = NULL;
    for (size_t i = 0; i < s->nconns; i++) {
        conn_t *c = s->conns[i];
        if (c->dead || c->state == CS_READY)
            continue;
        n++;
        if (!oldest || c->hs_deadline < oldest->hs_deadline)
            oldest = c;
    }
    if (n < handshake_cap() || !oldest)
        return 0;
    drop(oldest, DT_LOG_WARN, "too many connections authenticating at once "
                              "(the oldest goes)");
    return 1;
}

static void accept_all(dt_store_server_t *s)
{
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t salen = sizeof sa;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &salen,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                /* The pending connection stays readable: pause accepting
                 * instead of spinning on it. */
                if (!s->fd_warned++)
                    dt_warn("rendezvous store: out of file descriptors with "
                            "%zu connections; new ones wait (raise ulimit "
                            "-n)",
                            s->nconns);
                s->accept_paused = dt_clock_now() + 0.1;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
                dt_warn("rendezvous store: accept failed: %s",
                        strerror(errno));
            }
            return;
        }
        char host[64] = "?", serv[16] = "?";
        getnameinfo((struct sockaddr *)&sa, salen, host, sizeof host, serv,
                    sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV);
        if (s->nconns >= MAX_CONNS) {
            char addr[96], why[64];
            snprintf(addr, sizeof addr,
                     strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, serv);
            snprintf(why, sizeof why, "already %d connections", MAX_CONNS);
            stranger(s, addr, "refused", why);
            close(fd);
            continue;
        }
        conn_t *c = calloc(1, sizeof *c);
        if (c)
            c->in = malloc(INITIAL_IN_CAP);
        if (c && c->in && s->nconns == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 64;
            conn_t **n = realloc(s->conns, cap * sizeof *n);
            if (n) {
                s->conns = n;
                s->cap = cap;
            }
        }
        if (!c || !c->in || s->nconns == s->cap) {
            dt_error("rendezvous store: out of memory accepting %s:%s", host,
                     serv);
            if (c)
                free(c->in);
            free(c);
            close(fd);
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s->fd_warned = 0;
        c->srv = s;
        c->fd = fd;
        c->in_cap = INITIAL_IN_CAP;
        c->hs_deadline = dt_clock_now() + s->hs_seconds;
        /* an IPv6 peer as [addr]:port, its port told apart */
        snprintf(c->addr, sizeof c->addr,
                 strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, serv);
        dt_trace("rendezvous store: connection from %s", c->addr);
        int evicted = make_handshake_room(s);
        s->conns[s->nconns++] = c;
        if (evicted)
            return; /* reap closes it before more are accepted */
    }
}

/* Drop handshakes and answer waits whose time is up. */
static void expire(dt_store_server_t *s, double now)
{
    for (size_t i = 0; i < s->nconns; i++) {
        conn_t *c = s->conns[i];
        if (c->dead)
            continue;
        if (c->state != CS_READY && now >= c->hs_deadline) {
            drop(c, DT_LOG_WARN, "did not authenticate in time");
            continue;
        }
        if (c->pending != PEND_NONE && c->pdeadline > 0 &&
            now >= c->pdeadline) {
            if (c->pending == PEND_BARRIER)
                barrier_leave(s, c->pkey);
            clear_pending(c);
            s->released = 1;
            reply(c, DT_ERR_TIMEOUT, NULL, 0);
        }
    }
}

/* The earliest handshake or wait deadline; 0 when there is none. */
static double next_deadline(const dt_store_server_t *s)
{
    double next = 0;
    for (size_t i = 0; i < s->nconns; i++) {
        const conn_t *c = s->conns[i];
        double d = c->state != CS_READY ? c->hs_deadline
                   : c->pending != PEND_NONE ? c->pdeadline
                                             : 0;
        if (d > 0 && (!next || d < next))
            next = d;
    }
    return next;
}

static void reap(dt_store_server_t *s)
{
    size_t j = 0;
    for (size_t i = 0; i < s->nconns; i++) {
        conn_t *c = s->conns[i];
        if (!c->dead) {
            s->conns[j++] = c;
            continue;
        }
        conn_free(c); /* out of its barrier already (mark_dead) */
    }
    s->nconns = j;
}

static void *server_main(void *arg)
{
    dt_store_server_t *s = arg;
    struct pollfd *pfd = NULL;
    size_t pfd_cap = 0;
    for (;;) {
        expire(s, dt_clock_now());
        if (s->quiet && dt_clock_now() >= s->quiet_since + STRANGERS_INTERVAL)
            strangers_summary(s, dt_clock_now());
        /* Answering one client can release others with queued requests. */
        do {
            s->released = 0;
            for (size_t i = 0; i < s->nconns; i++)
                process_input(s, s->conns[i]);
        } while (s->released);
        reap(s);
        double next = next_deadline(s);
        if (pfd_cap < s->nconns + 2) {
            size_t cap = s->nconns + 64;
            struct pollfd *n = realloc(pfd, cap * sizeof *n);
            if (!n) {
                dt_error("rendezvous store: out of memory; store stopped");
                break;
            }
            pfd = n;
            pfd_cap = cap;
        }
        pfd[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
        if (s->accept_paused && dt_clock_now() >= s->accept_paused)
            s->accept_paused = 0;
        if (s->accept_paused && (!next || s->accept_paused < next))
            next = s->accept_paused;
        if (s->quiet && (!next || s->quiet_since + STRANGERS_INTERVAL < next))
            next = s->quiet_since + STRANGERS_INTERVAL;
        pfd[1] = (struct pollfd){.fd = s->accept_paused ? -1 : s->listen_fd,
                                 .events = POLLIN};
        for (size_t i = 0; i < s->nconns; i++) {
            conn_t *c = s->conns[i];
            short ev = POLLRDHUP;
            if (c->in_len < c->in_cap)
                ev |= POLLIN;
            if (c->out_len > c->out_off)
                ev |= POLLOUT;
            pfd[i + 2] = (struct pollfd){.fd = c->fd, .events = ev};
        }
        int timeout = -1;
        if (next > 0) {
            double ms = (next - dt_clock_now()) * 1000.0 + 1;
            timeout = ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
        }
        int r = poll(pfd, s->nconns + 2, timeout);
        if (r < 0 && errno != EINTR) {
            dt_error("rendezvous store: poll failed: %s; store stopped",
                     strerror(errno));
            break;
        }
        if (r <= 0)
            continue;
        if (pfd[0].revents)
            break; /* dt_store_server_stop() */
        size_t n = s->nconns; /* accept_all appends: handle the old ones */
        for (size_t i = 0; i < n; i++) {
            conn_t *c = s->conns[i];
            short re = pfd[i + 2].revents;
            if (re & POLLIN)
                read_input(c);
            if (re & POLLOUT)
                flush(c);
            if (!c->dead && (re & (POLLERR | POLLNVAL)))
                drop(c, DT_LOG_DEBUG, "socket error");
            else if (!c->dead && (re & (POLLHUP | POLLRDHUP)) &&
                     !(re & POLLIN))
                /* Gone while its buffer is full (it is waiting or not
                 * reading): nobody is left to answer. */
                drop(c, c->state == CS_READY ? DT_LOG_TRACE : DT_LOG_WARN,
                     "peer closed the connection");
        }
        if (pfd[1].revents & POLLIN)
            accept_all(s);
    }
    free(pfd);
    return NULL;
}

/* ---- start/stop -------------------------------------------------------- */

dt_status_t dt_store_server_start(const char *bind_addr, int port,
                                  const uint8_t token[DT_TOKEN_BYTES],
                                  dt_store_server_t **out)
{
    dt_status_t st = DT_ERR_IO;
    struct addrinfo *ai = NULL;
    if (!bind_addr || !token || !out || port < 0 || port > 65535)
        return DT_ERR_INVALID;
    dt_store_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
    memcpy(s->token, token, DT_TOKEN_BYTES);
    snprintf(s->bind_addr, sizeof s->bind_addr, "%s", bind_addr);
    s->hs_seconds = STORE_HANDSHAKE_SECONDS;
    const char *hs = getenv("DT_STORE_HANDSHAKE_TIMEOUT");
    if (hs && *hs) {
        char *end;
        double v = strtod(hs, &end);
        if (*end || !(v > 0)) {
            dt_error("DT_STORE_HANDSHAKE_TIMEOUT='%s' is not a positive "
                     "number of seconds",
                     hs);
            st = DT_ERR_CONFIG;
            goto out;
        }
        s->hs_seconds = v;
    }
    if ((st = store_table_init(&s->table)) != DT_OK)
        goto out;
    st = DT_ERR_IO;

    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    int gai = getaddrinfo(bind_addr, portstr, &hints, &ai);
    if (gai) {
        dt_error("rendezvous store: cannot resolve the bind address '%s': "
                 "%s; check [cluster] interface",
                 bind_addr, gai_strerror(gai));
        goto out;
    }
    s->listen_fd = socket(ai->ai_family,
                          ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (s->listen_fd < 0 ||
        setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
                   sizeof one) ||
        bind(s->listen_fd, ai->ai_addr, ai->ai_addrlen) ||
        listen(s->listen_fd, 1024)) {
        dt_error("rendezvous store: cannot listen on %s port %d: %s; choose "
                 "another [cluster] interface or free the port",
                 bind_addr, port, strerror(errno));
        goto out;
    }
    struct sockaddr_storage sa;
    socklen_t salen = sizeof sa;
    if (getsockname(s->listen_fd, (struct sockaddr *)&sa, &salen)) {
        dt_error("rendezvous store: getsockname failed: %s", strerror(errno));
        goto out;
    }
    s->port = ntohs(sa.ss_family == AF_INET6
                        ? ((struct sockaddr_in6 *)&sa)->sin6_port
                        : ((struct sockaddr_in *)&sa)->sin_port);
    if (pipe2(s->wake, O_NONBLOCK | O_CLOEXEC)) {
        dt_error("rendezvous store: pipe failed: %s", strerror(errno));
        goto out;
    }
    /* Signals belong to dtctl's main thread, never to the store thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&s->thread, NULL, server_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        dt_error("rendezvous store: cannot start its thread: %s",
                 strerror(err));
        goto out;
    }
    dt_debug("rendezvous store listening on %s port %d", bind_addr, s->port);
    *out = s;
    s = NULL;
    st = DT_OK;
out:
    if (ai)
        freeaddrinfo(ai);
    if (s) {
        if (s->listen_fd >= 0)
            close(s->listen_fd);
        if (s->wake[0] >= 0) {
            close(s->wake[0]);
            close(s->wake[1]);
        }
        if (s->table.buckets)
            store_table_free(&s->table);
        OPENSSL_cleanse(s->token, sizeof s->token);
        free(s);
    }
    return st;
}

int dt_store_server_port(const dt_store_server_t *srv)
{
    return srv ? srv->port : -1;
}

int dt_store_server_refused(dt_store_server_t *srv)
{
    return srv ? __atomic_load_n(&srv->refused, __ATOMIC_SEQ_CST) : 0;
}

void dt_store_server_stop(dt_store_server_t *s)
{
    if (!s)
        return;
    char byte = 1;
    while (write(s->wake[1], &byte, 1) < 0 && errno == EINTR)
        ;
    pthread_join(s->thread, NULL);
    strangers_summary(s, dt_clock_now());
    for (size_t i = 0; i < s->nconns; i++)
        conn_free(s->conns[i]);
    free(s->conns);
    while (s->barriers)
        barrier_remove(s, s->barriers);
    store_table_free(&s->table);
    close(s->listen_fd);
    close(s->wake[0]);
    close(s->wake[1]);
    OPENSSL_cleanse(s->token, sizeof s->token);
    free(s);
}
