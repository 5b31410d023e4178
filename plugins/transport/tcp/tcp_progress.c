/* tcp_progress.c — non-blocking point-to-point over the connected sockets.
 *
 * Sending: each part joins its socket's queue; the queue is written with
 * sendmsg() gathering header and payload of several parts at once, straight
 * from the user's buffers; a short burst in calls of at most send_max
 * bytes. Receiving: a header is read, then the payload goes straight into
 * the matching posted receive; while the receive that waits next is
 * small, one recv reads ahead into a 16 KiB stage (header, payload and
 * maybe the next header: one syscall instead of two). A header with no
 * posted receive stays in the kernel (TCP flow control holds the sender
 * back) unless a receive for a later message on that socket is already
 * waiting: only then is the part copied into a temporary buffer.
 *
 * Waiting polls for at most [transport.tcp] spin (auto: 100 us bound to a
 * core, 30 us oversubscribed), yielding the CPU between polls, then sleeps
 * in poll(): nothing spins for long. A peer that closes or resets
 * fails the whole transport at once, naming the rank. So that every rank
 * reports the same culprit, the root cause goes into the store before any
 * connection closes (tcp_cause.c), and peers at a message boundary also
 * get an abort header naming it. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/log.h>
#include "tcp.h"

#define TCP_ABORT_MAGIC 0x44544142u /* "DTAB": tag holds the failed rank */
#define IOV_BATCH 64
/* tcp_wait looks at the clock at least every TCP_LOOK_MS; a look
 * TCP_AWAY_S later than due means this rank itself was stopped (a sleep
 * of the whole timeout could not tell a stop in it from silence). */
#define TCP_LOOK_MS 250
#define TCP_AWAY_S 1.0

struct dt_request {
    tcp_req_t r;
    tcp_tx_t tx[TCP_MAX_SOCKETS];
};

static int part_count(const tcp_ctx_t *c, size_t len)
{
    return c->nsock > 1 && len >= c->stripe_min ? c->nsock : 1;
}

static void part_span(size_t len, int nparts, int j, size_t *off,
                      size_t *plen)
{
    size_t base = len / (size_t)nparts, rem = len % (size_t)nparts;
    *off = (size_t)j * base + ((size_t)j < rem ? (size_t)j : rem);
    *plen = base + ((size_t)j < rem ? 1 : 0);
}

/* ---- requests ---------------------------------------------------------- */

static dt_request_t *req_new(tcp_ctx_t *c)
{
    dt_request_t *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->r.next_all = c->all;
    if (c->all)
        c->all->prev_all = &q->r;
    c->all = &q->r;
    return q;
}

static void unlink_posted(tcp_ctx_t *c, tcp_req_t *r)
{
    if (!r->is_recv)
        return;
    for (tcp_req_t **pp = &c->peers[r->peer].posted; *pp;
         pp = &(*pp)->next_posted)
        if (*pp == r) {
            *pp = r->next_posted;
            return;
        }
}

static void req_free(tcp_ctx_t *c, dt_request_t *q)
{
    tcp_req_t *r = &q->r;
    unlink_posted(c, r);
    /* A part copied aside and claimed by this request: drop the claim. */
    for (int j = 0; r->is_recv && j < c->nsock; j++)
        for (tcp_unexp_t *u = c->peers[r->peer].socks[j].unexp; u;
             u = u->next)
            if (u->claimed == r)
                u->claimed = NULL;
    if (r->prev_all)
        r->prev_all->next_all = r->next_all;
    else
        c->all = r->next_all;
    if (r->next_all)
        r->next_all->prev_all = r->prev_all;
    free(q);
}

static void part_done(tcp_ctx_t *c, tcp_req_t *r)
{
    if (++r->parts_done == r->nparts) {
        r->complete = 1;
        unlink_posted(c, r);
    }
}

void tcp_free_requests(tcp_ctx_t *c)
{
    while (c->all)
        req_free(c, (dt_request_t *)c->all);
    for (int p = 0; c->peers && p < c->size; p++)
        for (int j = 0; j < c->nsock; j++) {
            tcp_sock_t *s = &c->peers[p].socks[j];
            for (tcp_unexp_t *u = s->unexp, *next; u; u = next) {
                next = u->next;
                free(u->data);
                free(u);
            }
            s->unexp = NULL;
            s->tx_head = NULL;
            free(s->stage);
            s->stage = NULL;
            s->stage_off = s->stage_len = 0;
        }
}

/* ---- failure ----------------------------------------------------------- */

/* Tell every other peer which rank failed, where their stream is at a
 * message boundary (best effort, never blocks), then shut our sending side
 * so that nobody waits on us (fini closes the sockets). */
static void broadcast_abort(tcp_ctx_t *c, int failed_rank)
{
    tcp_hdr_t h = {TCP_ABORT_MAGIC, failed_rank, 0};
    for (int p = 0; p < c->size; p++) {
        tcp_sock_t *s = &c->peers[p].socks[0];
        if (p == c->rank || s->eof)
            continue;
        if (s->fd >= 0 && !s->tx_head && p != failed_rank) {
            ssize_t n = send(s->fd, &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)n;
        }
    }
    for (int p = 0; p < c->size; p++)
        for (int j = 0; j < c->nsock; j++)
            if (c->peers[p].socks[j].fd >= 0)
                shutdown(c->peers[p].socks[j].fd, SHUT_WR);
}

/* Every message names the failed rank first ("rank 2 ..."), so each rank
 * of the job reports the same culprit in the same words. */
static void fail(tcp_ctx_t *c, int peer, dt_status_t st, const char *why)
{
    if (c->failed != DT_OK)
        return;
    c->failed = st;
    c->failed_rank = peer;
    dt_error("tcp: rank %d: %s; the job cannot continue (every later "
             "collective fails)",
             c->rank, why);
    for (tcp_req_t *r = c->all; r; r = r->next_all)
        if (!r->complete) {
            r->st = st;
            r->complete = 1;
        }
    broadcast_abort(c, peer);
}

/* Another rank found that the ranks' calls do not match: fail as it did
 * (no rank died; the program has a bug), sending peers to its message. */
static void fail_mismatch_found(tcp_ctx_t *c, int detector)
{
    char why[200];
    snprintf(why, sizeof why,
             "rank %d found that the ranks called different collectives, "
             "counts or types (see rank %d's message)",
             detector, detector);
    fail(c, detector, DT_ERR_INVALID, why);
}

/* This rank saw `peer` fail (did: what it did, for the message), or
 * (DT_ERR_INVALID) found that its calls and this rank's do not match.
 * Before anything is closed, the store must hold the root cause: either
 * an earlier one (then `peer` most likely closed because it learned of
 * it, and the message names that rank, or says that the calls did not
 * match) or `peer`, recorded here. A mismatch this rank found itself is
 * reported as it saw it: it names both calls. */
static void fail_seen(tcp_ctx_t *c, int peer, dt_status_t st,
                      const char *why, const char *did)
{
    int q = -1, d = -1;
    char rec[TCP_HOW_MAX] = "";
    if (c->failed != DT_OK)
        return;
    const char *how = st == DT_ERR_TIMEOUT   ? "hung"
                      : st == DT_ERR_PEER    ? "exited"
                      : st == DT_ERR_INVALID ? TCP_HOW_MISMATCH
                                             : "error";
    int known = tcp_cause_resolve(c, peer, how, &q, &d, rec);
    if (known && st != DT_ERR_INVALID &&
        strcmp(rec, TCP_HOW_MISMATCH) == 0) {
        fail_mismatch_found(c, d);
        return;
    }
    if (known && st != DT_ERR_INVALID && q != peer) {
        char msg[400];
        if (d == peer)
            snprintf(msg, sizeof msg,
                     "rank %d failed (rank %d detected it, then %s; see "
                     "rank %d's messages)",
                     q, d, did, q);
        else
            snprintf(msg, sizeof msg,
                     "rank %d failed (rank %d detected it; rank %d %s after "
                     "learning it; see rank %d's messages)",
                     q, d, peer, did, q);
        fail(c, q, DT_ERR_PEER, msg);
        return;
    }
    fail(c, peer, st, why);
}

/* A peer that failed because of a third rank sends an abort header and
 * closes; its reset may overtake our reading it. Look for that header on
 * sockets where it would be next (a message boundary): -1 if none. */
static int abort_sent_by(tcp_peer_t *pe, int nsock)
{
    for (int j = 0; j < nsock; j++) {
        tcp_sock_t *s = &pe->socks[j];
        tcp_hdr_t h;
        if (s->fd < 0 || s->rx_state != RX_HDR || s->rx_hdr_got)
            continue;
        if (s->stage_len - s->stage_off >= sizeof h) {
            memcpy(&h, s->stage + s->stage_off, sizeof h);
            if (h.magic == TCP_ABORT_MAGIC)
                return h.tag;
            continue;
        }
        if (s->stage_len > s->stage_off)
            continue;
        if (recv(s->fd, &h, sizeof h, MSG_DONTWAIT | MSG_PEEK) ==
                (ssize_t)sizeof h &&
            h.magic == TCP_ABORT_MAGIC)
            return h.tag;
    }
    return -1;
}

static void fail_reported(tcp_ctx_t *c, int reporter, int culprit)
{
    int q = -1, d = -1;
    char rec[TCP_HOW_MAX] = "";
    /* The reporter recorded the cause before it sent the abort. */
    if (tcp_cause_resolve(c, -1, NULL, &q, &d, rec) &&
        strcmp(rec, TCP_HOW_MISMATCH) == 0) {
        fail_mismatch_found(c, d);
        return;
    }
    char why[200];
    snprintf(why, sizeof why,
             "rank %d failed (rank %d reports it; see rank %d's messages)",
             culprit, reporter, culprit);
    fail(c, culprit, DT_ERR_PEER, why);
}

static void fail_peer_io(tcp_ctx_t *c, tcp_sock_t *s, const char *what,
                         int err)
{
    char why[400];
    int p = s->peer->rank, culprit = abort_sent_by(s->peer, c->nsock);
    if (culprit >= 0 && culprit < c->size) {
        fail_reported(c, p, culprit);
        return;
    }
    if (err == 0)
        snprintf(why, sizeof why,
                 "rank %d (%s) closed the connection %s: it exited or "
                 "crashed",
                 p, s->peer->addr, what);
    else
        snprintf(why, sizeof why, "rank %d (%s): connection failed %s: %s",
                 p, s->peer->addr, what, strerror(err));
    fail_seen(c, p, DT_ERR_PEER, why,
              err == 0 ? "closed its connection" : "broke its connection");
}

/* Does anything still expect data on this socket (a receive part, a
 * queued send, a message half read)? */
static int sock_busy(const tcp_sock_t *s)
{
    if (s->tx_head || s->rx_state != RX_HDR || s->rx_hdr_got ||
        s->stage_len > s->stage_off)
        return 1;
    for (const tcp_req_t *r = s->peer->posted; r; r = r->next_posted)
        if (r->nparts > s->index && !(r->matched & (1u << s->index)))
            return 1;
    return 0;
}

/* ---- sending ----------------------------------------------------------- */

static void tx_progress(tcp_ctx_t *c, tcp_sock_t *s)
{
    while (s->tx_head && c->failed == DT_OK) {
        struct iovec iov[IOV_BATCH];
        int n = 0;
        size_t asked = 0;
        for (tcp_tx_t *t = s->tx_head; t && n + 2 <= IOV_BATCH; t = t->next) {
            size_t d = t->done;
            if (d < sizeof t->hdr) {
                iov[n].iov_base = (char *)&t->hdr + d;
                iov[n++].iov_len = sizeof t->hdr - d;
                d = 0;
            } else {
                d -= sizeof t->hdr;
            }
            if (t->len > d) {
                iov[n].iov_base = (char *)t->data + d;
                iov[n++].iov_len = t->len - d;
            }
        }
        for (int i = 0; i < n; i++)
            asked += iov[i].iov_len;
        /* A short burst goes out in writes of at most send_max bytes; a
         * long queue is written whole (why: TCP_ONE_HOST_SEND_MAX). */
        if (c->send_max && asked > c->send_max &&
            asked <= TCP_SEND_MAX_BURST) {
            asked = 0;
            for (int i = 0; i < n; i++) {
                if (asked + iov[i].iov_len > c->send_max) {
                    iov[i].iov_len = c->send_max - asked;
                    n = iov[i].iov_len ? i + 1 : i;
                }
                asked += iov[i].iov_len;
            }
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                fail_peer_io(c, s, "while sending", errno);
            return;
        }
        c->last_activity = dt_clock_now();
        size_t left = (size_t)w;
        while (s->tx_head) {
            tcp_tx_t *t = s->tx_head;
            size_t need = sizeof t->hdr + t->len - t->done;
            if (left < need) {
                t->done += left;
                break;
            }
            left -= need;
            t->done += need;
            s->tx_head = t->next;
            if (!s->tx_head)
                s->tx_tail = &s->tx_head;
            part_done(c, t->req);
        }
        if ((size_t)w < asked)
            return; /* socket buffer full: wait for POLLOUT */
    }
}

/* ---- receiving --------------------------------------------------------- */

/* What every rank must do, after the message naming the calls. */
#define SAME_CALLS                                                         \
    "every rank must call the same collectives in the same order with "  \
    "the same count, type, op and root"

/* A message of `peer` with `len` bytes and tag `got` where this rank
 * expected `want` bytes with tag `tag`: the calls differ. */
static void fail_mismatch(tcp_ctx_t *c, int peer, int got, size_t len,
                          int tag, size_t want)
{
    const char *theirs = dt_coll_tag_name(got), *mine = dt_coll_tag_name(tag);
    char why[500], ttext[80], mtext[80];
    dt_coll_tag_text(got, ttext, sizeof ttext);
    dt_coll_tag_text(tag, mtext, sizeof mtext);
    if (theirs && mine && got != tag)
        snprintf(why, sizeof why,
                 "rank %d called %s where this rank called %s (its "
                 "message came where this rank waits for its own data): "
                 SAME_CALLS,
                 peer, ttext, mtext);
    else if (mine)
        snprintf(why, sizeof why,
                 "rank %d sent %zu bytes in its %s where this rank expected "
                 "%zu: the ranks called %s with different counts or types; "
                 SAME_CALLS,
                 peer, len, mine, want, mine);
    else
        snprintf(why, sizeof why,
                 "rank %d sent %zu bytes with tag %d where this rank "
                 "expected %zu: the ranks called different collectives or "
                 "counts",
                 peer, len, tag, want);
    fail_seen(c, peer, DT_ERR_INVALID, why, "sent an unexpected message");
}

/* Place the payload announced by s->rx_hdr: into the first posted receive
 * that expects a part on this socket with this tag, or aside when a later
 * receive is already waiting. 0: leave it in the kernel for now. */
static int rx_place(tcp_ctx_t *c, tcp_sock_t *s)
{
    tcp_peer_t *pe = s->peer;
    const int j = s->index;
    const uint32_t bit = 1u << j;
    const int core = dt_coll_tag_name(s->rx_hdr.tag) != NULL;
    int someone_waits = 0;
    for (tcp_req_t *r = pe->posted; r; r = r->next_posted) {
        if (r->nparts <= j || (r->matched & bit))
            continue;
        someone_waits = 1;
        /* The core's collectives come in the order of the calls
         * (dt/plugin.h): another one where one waits is a mismatch. */
        if (core && r->tag != s->rx_hdr.tag && dt_coll_tag_name(r->tag)) {
            fail_mismatch(c, pe->rank, s->rx_hdr.tag, s->rx_hdr.len, r->tag,
                          0);
            return 0;
        }
        if (r->tag != s->rx_hdr.tag)
            continue;
        size_t off, plen;
        part_span(r->len, r->nparts, j, &off, &plen);
        if (plen != s->rx_hdr.len) {
            fail_mismatch(c, pe->rank, s->rx_hdr.tag, s->rx_hdr.len, r->tag,
                          plen);
            return 0;
        }
        r->matched |= bit;
        s->rx_req = r;
        s->rx_unexp = NULL;
        s->rx_dst = r->buf + off;
        s->rx_left = plen;
        s->rx_state = RX_BODY;
        return 1;
    }
    if (!someone_waits)
        return 0;
    tcp_unexp_t *u = calloc(1, sizeof *u);
    if (!u || !(u->data = malloc(s->rx_hdr.len ? s->rx_hdr.len : 1))) {
        free(u);
        char why[200];
        snprintf(why, sizeof why,
                 "rank %d (this rank) ran out of memory for a message that "
                 "arrived early from rank %d",
                 c->rank, pe->rank);
        fail_seen(c, c->rank, DT_ERR_NOMEM, why, "ran out of memory");
        return 0;
    }
    u->tag = s->rx_hdr.tag;
    u->len = s->rx_hdr.len;
    *s->unexp_tail = u;
    s->unexp_tail = &u->next;
    s->rx_req = NULL;
    s->rx_unexp = u;
    s->rx_dst = u->data;
    s->rx_left = u->len;
    s->rx_state = RX_BODY;
    return 1;
}

static void unexp_remove(tcp_sock_t *s, tcp_unexp_t *u)
{
    for (tcp_unexp_t **pp = &s->unexp; *pp; pp = &(*pp)->next)
        if (*pp == u) {
            *pp = u->next;
            if (!*pp)
                s->unexp_tail = pp;
            break;
        }
    free(u->data);
    free(u);
}

static void rx_finish(tcp_ctx_t *c, tcp_sock_t *s)
{
    s->rx_state = RX_HDR;
    if (s->rx_req) {
        part_done(c, s->rx_req);
    } else if (s->rx_unexp) {
        tcp_unexp_t *u = s->rx_unexp;
        u->got = u->len;
        if (u->claimed) {
            tcp_req_t *r = u->claimed;
            size_t off, plen;
            part_span(r->len, r->nparts, u->claimed_part, &off, &plen);
            memcpy(r->buf + off, u->data, plen);
            unexp_remove(s, u);
            part_done(c, r);
        }
    }
    s->rx_req = NULL;
    s->rx_unexp = NULL;
}

/* Is the next part this socket must deliver small (the first posted
 * receive still waiting for a part here)? Then read ahead into the stage:
 * header and payload come in one recv. Nothing posted: read only the
 * header, so that an unexpected payload stays in the kernel. */
static int small_expected(const tcp_sock_t *s)
{
    for (const tcp_req_t *r = s->peer->posted; r; r = r->next_posted) {
        if (r->nparts <= s->index || (r->matched & (1u << s->index)))
            continue;
        size_t off, plen;
        part_span(r->len, r->nparts, s->index, &off, &plen);
        return plen <= TCP_STAGE_SMALL;
    }
    return 0;
}

static int stage_ready(tcp_sock_t *s)
{
    if (!s->stage)
        s->stage = malloc(TCP_STAGE_BYTES);
    return s->stage != NULL; /* without one: header and payload apart */
}

/* Returns after one part completed (the caller re-checks its requests) or
 * when the socket has nothing more to give now. */
static void rx_progress(tcp_ctx_t *c, tcp_sock_t *s)
{
    while (c->failed == DT_OK && !s->eof) {
        if (s->rx_state == RX_WAIT_POST) {
            if (!rx_place(c, s))
                return;
            continue;
        }
        if (s->rx_state == RX_BODY && s->rx_left == 0) {
            rx_finish(c, s);
            return;
        }
        char *dst = s->rx_state == RX_HDR
                        ? (char *)&s->rx_hdr + s->rx_hdr_got
                        : s->rx_dst;
        size_t want = s->rx_state == RX_HDR ? sizeof s->rx_hdr - s->rx_hdr_got
                                            : s->rx_left;
        ssize_t n;
        if (s->stage_len > s->stage_off) {
            size_t have = s->stage_len - s->stage_off;
            n = (ssize_t)(want < have ? want : have);
            memcpy(dst, s->stage + s->stage_off, (size_t)n);
            s->stage_off += (size_t)n;
        } else if (s->rx_state == RX_HDR && s->rx_hdr_got == 0 &&
                   small_expected(s) && stage_ready(s)) {
            n = recv(s->fd, s->stage, TCP_STAGE_BYTES, MSG_DONTWAIT);
            if (n > 0) {
                s->stage_off = 0;
                s->stage_len = (size_t)n;
                c->last_activity = dt_clock_now();
                continue;
            }
        } else {
            n = recv(s->fd, dst, want, MSG_DONTWAIT);
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                fail_peer_io(c, s, "while receiving", errno);
            return;
        }
        if (n == 0) {
            /* All its data came before the FIN: nothing more will. */
            if (sock_busy(s)) {
                fail_peer_io(c, s, "in the middle of a transfer", 0);
            } else {
                dt_debug("tcp: rank %d: rank %d closed connection %d",
                         c->rank, s->peer->rank, s->index);
                s->eof = 1;
            }
            return;
        }
        c->last_activity = dt_clock_now();
        if (s->rx_state == RX_BODY) {
            s->rx_dst += n;
            s->rx_left -= (size_t)n;
            continue;
        }
        s->rx_hdr_got += (size_t)n;
        if (s->rx_hdr_got < sizeof s->rx_hdr)
            continue;
        s->rx_hdr_got = 0;
        if (s->rx_hdr.magic == TCP_ABORT_MAGIC && s->rx_hdr.tag >= 0 &&
            s->rx_hdr.tag < c->size) {
            fail_reported(c, s->peer->rank, s->rx_hdr.tag);
            return;
        }
        if (s->rx_hdr.magic != TCP_MSG_MAGIC) {
            fail_peer_io(c, s, "with a corrupt message header", EPROTO);
            return;
        }
        s->rx_state = RX_WAIT_POST;
    }
}

/* ---- the ops ----------------------------------------------------------- */

static dt_status_t check_args(tcp_ctx_t *c, int peer, dt_mem_t mem,
                              size_t len, const char *op)
{
    if (c->failed != DT_OK)
        return c->failed == DT_ERR_TIMEOUT ? DT_ERR_PEER : c->failed;
    if (peer < 0 || peer >= c->size || peer == c->rank) {
        dt_error("tcp: rank %d: %s with rank %d: not another rank of 0..%d",
                 c->rank, op, peer, c->size - 1);
        return DT_ERR_INVALID;
    }
    if (mem != DT_MEM_HOST) {
        dt_error("tcp: rank %d: %s of device memory: the tcp transport "
                 "moves host memory only (use nccl for CUDA buffers)",
                 c->rank, op);
        return DT_ERR_UNSUPPORTED;
    }
    /* A socket closed at a message boundary carries nothing more. */
    for (int j = 0; j < part_count(c, len); j++)
        if (c->peers[peer].socks[j].eof) {
            char why[200];
            snprintf(why, sizeof why,
                     "rank %d closed its connection (it exited) before this "
                     "rank's %s with it",
                     peer, op);
            fail_seen(c, peer, DT_ERR_PEER, why, "closed its connection");
            return DT_ERR_PEER;
        }
    return DT_OK;
}

dt_status_t tcp_isend(void *ctx, int peer, const void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req)
{
    tcp_ctx_t *c = ctx;
    DT_CHECK(check_args(c, peer, mem, len, "send"));
    dt_request_t *q = req_new(c);
    if (!q)
        return DT_ERR_NOMEM;
    tcp_req_t *r = &q->r;
    r->peer = peer;
    r->tag = tag;
    r->len = len;
    r->nparts = part_count(c, len);
    for (int j = 0; j < r->nparts; j++) {
        tcp_tx_t *t = &q->tx[j];
        size_t off, plen;
        part_span(len, r->nparts, j, &off, &plen);
        t->req = r;
        t->hdr = (tcp_hdr_t){TCP_MSG_MAGIC, tag, plen};
        t->data = (const char *)buf + off;
        t->len = plen;
        tcp_sock_t *s = &c->peers[peer].socks[j];
        int was_empty = s->tx_head == NULL;
        *s->tx_tail = t;
        s->tx_tail = &t->next;
        if (was_empty)
            tx_progress(c, s); /* small messages leave right here */
    }
    *req = q;
    return DT_OK;
}

dt_status_t tcp_irecv(void *ctx, int peer, void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req)
{
    tcp_ctx_t *c = ctx;
    DT_CHECK(check_args(c, peer, mem, len, "receive"));
    dt_request_t *q = req_new(c);
    if (!q)
        return DT_ERR_NOMEM;
    tcp_req_t *r = &q->r;
    r->is_recv = 1;
    r->peer = peer;
    r->tag = tag;
    r->buf = buf;
    r->len = len;
    r->nparts = part_count(c, len);
    tcp_peer_t *pe = &c->peers[peer];
    /* Parts that arrived early, oldest first. */
    for (int j = 0; j < r->nparts; j++) {
        tcp_sock_t *s = &pe->socks[j];
        for (tcp_unexp_t *u = s->unexp; u; u = u->next) {
            if (u->claimed || u->tag != tag)
                continue;
            size_t off, plen;
            part_span(len, r->nparts, j, &off, &plen);
            if (u->len != plen) {
                req_free(c, q);
                fail_mismatch(c, peer, tag, u->len, tag, plen);
                return c->failed;
            }
            r->matched |= 1u << j;
            if (u->got == u->len) {
                memcpy(r->buf + off, u->data, plen);
                unexp_remove(s, u);
                r->parts_done++;
            } else {
                u->claimed = r;
                u->claimed_part = j;
            }
            break;
        }
    }
    if (r->parts_done == r->nparts) {
        r->complete = 1;
    } else if (r->matched != (1u << r->nparts) - 1) {
        tcp_req_t **pp = &pe->posted;
        while (*pp)
            pp = &(*pp)->next_posted;
        *pp = r;
        /* A header may be sitting there waiting for exactly this. */
        for (int j = 0; j < r->nparts; j++)
            if (pe->socks[j].rx_state == RX_WAIT_POST)
                rx_progress(c, &pe->socks[j]);
    }
    *req = q;
    return DT_OK;
}

/* One round of poll() over every live socket; ms < 0 blocks. Returns the
 * number of sockets that were ready. */
static int poll_round(tcp_ctx_t *c, int ms)
{
    int n = 0, staged = 0;
    /* Bytes read ahead are ready without the kernel saying so. */
    for (int p = 0; p < c->size && c->failed == DT_OK; p++)
        for (int j = 0; p != c->rank && j < c->nsock; j++) {
            tcp_sock_t *s = &c->peers[p].socks[j];
            if (s->stage_len > s->stage_off && s->rx_state != RX_WAIT_POST) {
                rx_progress(c, s);
                staged++;
            }
        }
    if (staged)
        ms = 0;
    for (int p = 0; p < c->size; p++) {
        tcp_peer_t *pe = &c->peers[p];
        if (p == c->rank)
            continue;
        for (int j = 0; j < c->nsock; j++) {
            tcp_sock_t *s = &pe->socks[j];
            short ev = 0;
            if (s->eof)
                continue;
            if (s->rx_state != RX_WAIT_POST)
                ev |= POLLIN;
            if (s->tx_head)
                ev |= POLLOUT;
            if (!ev || s->fd < 0)
                continue;
            c->pfds[n] = (struct pollfd){.fd = s->fd, .events = ev};
            c->pfd_sock[n++] = s;
        }
    }
    if (n == 0) {
        if (ms != 0)
            poll(NULL, 0, ms < 0 ? 1000 : ms); /* nothing can happen */
        return staged;
    }
    int rc = poll(c->pfds, (nfds_t)n, ms);
    if (rc <= 0)
        return staged;
    for (int i = 0; i < n && c->failed == DT_OK; i++) {
        short re = c->pfds[i].revents;
        if (!re)
            continue;
        tcp_sock_t *s = c->pfd_sock[i];
        if (re & (POLLOUT | POLLERR | POLLHUP))
            tx_progress(c, s);
        if (re & (POLLIN | POLLERR | POLLHUP))
            rx_progress(c, s);
    }
    return rc;
}

dt_status_t tcp_test(void *ctx, dt_request_t *req, int *done)
{
    tcp_ctx_t *c = ctx;
    *done = 0;
    if (!req->r.complete && c->failed == DT_OK)
        poll_round(c, 0);
    if (!req->r.complete)
        return c->failed == DT_OK ? DT_OK : c->failed;
    dt_status_t st = req->r.st;
    *done = 1;
    req_free(c, req);
    return st;
}

static int all_complete(dt_request_t **reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!reqs[i]->r.complete)
            return 0;
    return 1;
}

static void report_timeout(tcp_ctx_t *c, dt_request_t **reqs, size_t n)
{
    char ranks[256] = "";
    size_t off = 0;
    for (size_t i = 0; i < n && off < 200; i++) {
        int seen = 0;
        for (size_t k = 0; k < i; k++)
            seen |= !reqs[k]->r.complete && reqs[k]->r.peer == reqs[i]->r.peer;
        if (!reqs[i]->r.complete && !seen)
            off += (size_t)snprintf(ranks + off, sizeof ranks - off, " %d",
                                    reqs[i]->r.peer);
    }
    char why[1024], chain[256]; /* fits ranks and chain whole */
    int peer = c->rank;
    for (size_t i = 0; i < n; i++)
        if (!reqs[i]->r.complete) {
            peer = reqs[i]->r.peer;
            break;
        }
    /* The rank waited on may itself wait on another: name the rank at the
     * end of the chain, the one that went silent first. */
    int root = tcp_silent_root(c, peer, chain, sizeof chain);
    int cut; /* kept: gcc -O0's -Wformat-truncation (tcp_wireup.c) */
    if (root != peer)
        cut = snprintf(why, sizeof why,
                 "rank %d went silent: nothing moved for %.0f s (the "
                 "[transport.tcp] timeout) while this rank waited on "
                 "rank(s)%s, which wait on it in turn (%s): it is hung, "
                 "stopped or unreachable",
                 root, c->timeout, ranks, chain);
    else
        cut = snprintf(why, sizeof why,
                 "rank %d went silent: nothing moved for %.0f s (the "
                 "[transport.tcp] timeout) while waiting on rank(s)%s: they "
                 "are hung, stopped or unreachable",
                 peer, c->timeout, ranks);
    (void)cut;
    fail_seen(c, root, DT_ERR_TIMEOUT, why, "went silent");
}

/* Poll a little before sleeping ([transport.tcp] spin; why and how long:
 * core/comm/wait_spin.c). Data that keeps arriving is read as it comes. */
static void spin_before_sleep(tcp_ctx_t *c, dt_request_t **reqs, size_t n,
                              double start)
{
    if (c->spin.spin <= 0)
        return;
    while (!all_complete(reqs, n) && c->failed == DT_OK) {
        if (poll_round(c, 0) > 0) {
            if (dt_clock_now() >= start + c->spin.spin)
                return;
            continue;
        }
        if (!dt_wait_spin_again(&c->spin, start))
            return;
    }
    dt_wait_spin_paid(&c->spin);
}

dt_status_t tcp_wait(void *ctx, dt_request_t **reqs, size_t n,
                     int timeout_ms)
{
    tcp_ctx_t *c = ctx;
    double start = dt_clock_now();
    c->last_activity = start;
    /* The awaited data has often arrived already: read it before paying
     * for a poll() (one recv that may say EAGAIN costs less). */
    for (size_t i = 0; i < n && c->failed == DT_OK; i++) {
        tcp_req_t *r = &reqs[i]->r;
        if (r->is_recv && !r->complete && r->nparts == 1 &&
            c->peers[r->peer].socks[0].rx_state == RX_HDR)
            rx_progress(c, &c->peers[r->peer].socks[0]);
    }
    spin_before_sleep(c, reqs, n, start);
    double note_at = start + c->wait_note_after;
    double due = start; /* when this rank expected to look again */
    while (!all_complete(reqs, n) && c->failed == DT_OK) {
        /* Looking much later than due: this rank itself did not run (the
         * whole job stopped, Ctrl-Z or kill -STOP of every rank, and
         * continued). That time is not the peers' silence: a rank that
         * resumed first named a peer not yet continued as hung. */
        double late = dt_clock_now() - due;
        if (late > TCP_AWAY_S)
            c->last_activity += late;
        /* -1: a peer is silent for the whole timeout; else a hard limit. */
        double deadline = timeout_ms < 0 ? c->last_activity + c->timeout
                                         : start + timeout_ms / 1000.0;
        int ms = tcp_ms_until(deadline);
        if (ms == 0) {
            if (timeout_ms >= 0)
                return DT_ERR_TIMEOUT; /* requests stay valid */
            report_timeout(c, reqs, n);
            break;
        }
        /* Blocked for a while: say whom this rank waits on, and keep
         * saying it (a live waiter's record moves; tcp_cause.c). */
        if (timeout_ms < 0 && c->wait_note_after > 0) {
            if (dt_clock_now() >= note_at) {
                for (size_t i = 0; i < n; i++)
                    if (!reqs[i]->r.complete) {
                        tcp_wait_note(c, reqs[i]->r.peer);
                        break;
                    }
                note_at = dt_clock_now() + c->wait_note_after;
            }
            int until = tcp_ms_until(note_at);
            if (until < ms)
                ms = until > 0 ? until : 1;
        }
        if (ms > TCP_LOOK_MS)
            ms = TCP_LOOK_MS;
        due = dt_clock_now() + ms / 1000.0;
        poll_round(c, ms);
    }
    if (c->failed == DT_OK)
        tcp_wait_clear(c); /* a failed rank's record stays: it did wait */
    dt_status_t st = DT_OK;
    for (size_t i = 0; i < n; i++) {
        if (reqs[i]->r.st != DT_OK && st == DT_OK)
            st = reqs[i]->r.st;
        req_free(c, reqs[i]);
    }
    if (st == DT_OK && c->failed != DT_OK)
        st = c->failed;
    return st;
}
