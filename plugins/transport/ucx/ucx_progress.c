/* ucx_progress.c — non-blocking point-to-point over UCP tagged messages.
 *
 * Each dt request wraps one UCP request. UCP calls back when it finishes
 * (possibly inside the posting call); the callback releases UCP's request
 * at once, so a dt request only keeps a pointer while UCP still works on
 * it. A caller may let go of a request UCP has not finished (after a
 * failure, or at fini): it becomes an orphan, is cancelled where UCP can
 * cancel it (receives) and is freed by its callback or at fini.
 *
 * Waiting: progress the worker while it does work; when a round does
 * nothing, arm the worker's event fd and sleep in poll() until the network
 * or a local peer wakes us. Nothing spins, so ranks may outnumber cores. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "ucx.h"

/* The part of struct dt_request UCP's callbacks touch lives there too. */
typedef struct dt_request req_t;

static int ms_until(double deadline)
{
    double left = deadline - dt_clock_now();
    if (left <= 0)
        return 0;
    return left > 3600 ? 3600 * 1000 : (int)(left * 1000) + 1;
}

/* ---- requests ---------------------------------------------------------- */

static req_t *req_new(ucx_ctx_t *c)
{
    req_t *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->ctx = c;
    q->next = c->all;
    if (c->all)
        c->all->prev = q;
    c->all = q;
    return q;
}

static void req_unlink(req_t *q)
{
    ucx_ctx_t *c = q->ctx;
    if (q->prev)
        q->prev->next = q->next;
    else
        c->all = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
}

/* The caller is done with q. If UCP still owns its buffer, q waits for
 * UCP's callback (an orphan): receives are cancelled, sends finish or fail
 * with their endpoint. */
static void req_release(req_t *q)
{
    if (q->ucp_req) {
        q->orphan = 1;
        if (q->is_recv)
            ucp_request_cancel(q->ctx->worker, q->ucp_req);
        return;
    }
    req_unlink(q);
    free(q);
}

int ucx_ucp_busy(const ucx_ctx_t *c)
{
    for (const req_t *q = c->all; q; q = q->next)
        if (q->ucp_req)
            return 1;
    return 0;
}

void ucx_free_requests(ucx_ctx_t *c)
{
    /* Only after the worker is gone: UCP calls nobody back any more. */
    while (c->all) {
        req_t *q = c->all;
        req_unlink(q);
        free(q);
    }
}

static dt_status_t from_ucs(ucs_status_t s)
{
    switch (s) {
    case UCS_OK:
        return DT_OK;
    case UCS_ERR_CANCELED:
        return DT_ERR_INTERRUPTED;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return DT_ERR_INVALID;
    case UCS_ERR_NO_MEMORY:
        return DT_ERR_NOMEM;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_TIMED_OUT:
        return DT_ERR_PEER;
    default:
        return DT_ERR_IO;
    }
}

/* The operation behind q ended with s (got: bytes received). */
static void record(req_t *q, ucs_status_t s, size_t got)
{
    ucx_ctx_t *c = q->ctx;
    c->completions++;
    if (q->complete) /* already failed by ucx_fail */
        return;
    q->complete = 1;
    q->st = from_ucs(s);
    if (s == UCS_OK && q->is_recv && got != q->len) {
        dt_error("ucx: rank %d: rank %d sent %zu bytes with tag %d where "
                 "this rank expected %zu: the ranks called different "
                 "collectives or counts",
                 c->rank, q->peer, got, q->tag, q->len);
        q->st = DT_ERR_INVALID;
    } else if (s == UCS_ERR_MESSAGE_TRUNCATED) {
        dt_error("ucx: rank %d: rank %d sent more than the %zu bytes this "
                 "rank expected with tag %d: the ranks called different "
                 "collectives or counts",
                 c->rank, q->peer, q->len, q->tag);
    } else if (s != UCS_OK && s != UCS_ERR_CANCELED && !c->failed) {
        char why[256];
        snprintf(why, sizeof why, "%s rank %d failed: %s",
                 q->is_recv ? "a receive from" : "a send to", q->peer,
                 ucs_status_string(s));
        ucx_fail(c, q->peer, q->st, why);
    }
}

/* UCP finished with q's buffer: release UCP's request, record how. */
static void finished(req_t *q, void *ucp_req, ucs_status_t s, size_t got)
{
    ucp_request_free(ucp_req);
    q->ucp_req = NULL;
    if (q->orphan) {
        q->ctx->completions++;
        req_unlink(q);
        free(q);
        return;
    }
    record(q, s, got);
}

static void send_cb(void *ucp_req, ucs_status_t s, void *user_data)
{
    finished(user_data, ucp_req, s, 0);
}

static void recv_cb(void *ucp_req, ucs_status_t s,
                    const ucp_tag_recv_info_t *info, void *user_data)
{
    finished(user_data, ucp_req, s, info ? info->length : 0);
}

/* ---- failure ----------------------------------------------------------- */

void ucx_fail(ucx_ctx_t *c, int peer, dt_status_t st, const char *why)
{
    if (c->failed != DT_OK)
        return;
    c->failed = st;
    c->failed_rank = peer;
    dt_error("ucx: rank %d: %s; the job cannot continue (every later "
             "collective fails)",
             c->rank, why);
    for (req_t *q = c->all; q; q = q->next)
        if (!q->complete) {
            q->complete = 1;
            q->st = st;
        }
}

/* ---- posting ----------------------------------------------------------- */

static dt_status_t check_args(ucx_ctx_t *c, int peer, dt_mem_t mem,
                              const char *op)
{
    if (c->failed != DT_OK)
        return c->failed == DT_ERR_TIMEOUT ? DT_ERR_PEER : c->failed;
    if (peer < 0 || peer >= c->size || peer == c->rank) {
        dt_error("ucx: rank %d: %s with rank %d: not another rank of 0..%d",
                 c->rank, op, peer, c->size - 1);
        return DT_ERR_INVALID;
    }
    if (mem == DT_MEM_CUDA && !c->cuda) {
        dt_error("ucx: rank %d: %s of CUDA memory, but this UCX cannot move "
                 "it (no DT_CAP_CUDA_MEM): stage through host memory",
                 c->rank, op);
        return DT_ERR_UNSUPPORTED;
    }
    if (mem != DT_MEM_HOST && mem != DT_MEM_CUDA) {
        dt_error("ucx: rank %d: %s: unknown memory kind %d", c->rank, op,
                 (int)mem);
        return DT_ERR_INVALID;
    }
    if (c->peers[peer].failed) {
        dt_error("ucx: rank %d: %s with rank %d, whose endpoint failed",
                 c->rank, op, peer);
        return DT_ERR_PEER;
    }
    return DT_OK;
}

dt_status_t ucx_post(ucx_ctx_t *c, int is_recv, int peer, void *buf,
                     size_t len, dt_mem_t mem, uint64_t tag, int user_tag,
                     dt_request_t **out)
{
    req_t *q = req_new(c);
    if (!q)
        return DT_ERR_NOMEM;
    q->is_recv = is_recv;
    q->peer = peer;
    q->tag = user_tag;
    q->len = len;
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_MEMORY_TYPE,
        .user_data = q,
        /* Saying what the memory is spares UCX a memory-type lookup. */
        .memory_type = mem == DT_MEM_CUDA ? UCS_MEMORY_TYPE_CUDA
                                          : UCS_MEMORY_TYPE_HOST,
    };
    ucs_status_ptr_t sp;
    if (is_recv) {
        /* A message already here would complete at once without telling
         * its length (UCX 1.13 leaves recv_info empty then): ask for the
         * callback always, which may run before ucp_tag_recv_nbx returns. */
        p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        p.cb.recv = recv_cb;
        sp = ucp_tag_recv_nbx(c->worker, buf, len, tag, UCX_TAG_MASK_ALL, &p);
    } else {
        p.cb.send = send_cb;
        sp = ucp_tag_send_nbx(c->peers[peer].ep, buf, len, tag, &p);
    }
    if (UCS_PTR_IS_ERR(sp)) {
        ucs_status_t s = UCS_PTR_STATUS(sp);
        dt_error("ucx: rank %d: cannot %s %zu bytes %s rank %d: %s", c->rank,
                 is_recv ? "receive" : "send", len, is_recv ? "from" : "to",
                 peer, ucs_status_string(s));
        req_unlink(q);
        free(q);
        return from_ucs(s);
    }
    if (sp == NULL)           /* a send done at once (eager) */
        record(q, UCS_OK, 0);
    else if (!q->complete)    /* else the callback already ran and freed it */
        q->ucp_req = sp;
    *out = q;
    return DT_OK;
}

static uint64_t user_tag(int src, int tag)
{
    return ((uint64_t)(uint32_t)src << 32) | (uint32_t)tag;
}

dt_status_t ucx_isend(void *ctx, int peer, const void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req)
{
    ucx_ctx_t *c = ctx;
    DT_CHECK(check_args(c, peer, mem, "send"));
    return ucx_post(c, 0, peer, (void *)buf, len, mem, user_tag(c->rank, tag),
                    tag, req);
}

dt_status_t ucx_irecv(void *ctx, int peer, void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req)
{
    ucx_ctx_t *c = ctx;
    DT_CHECK(check_args(c, peer, mem, "receive"));
    return ucx_post(c, 1, peer, buf, len, mem, user_tag(peer, tag), tag, req);
}

/* ---- completion -------------------------------------------------------- */

dt_status_t ucx_test(void *ctx, dt_request_t *req, int *done)
{
    ucx_ctx_t *c = ctx;
    *done = 0;
    if (!req->complete && c->failed == DT_OK)
        ucp_worker_progress(c->worker);
    if (!req->complete)
        return c->failed == DT_OK ? DT_OK : c->failed;
    dt_status_t st = req->st;
    *done = 1;
    req_release(req);
    return st;
}

static int all_complete(dt_request_t **reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!reqs[i]->complete)
            return 0;
    return 1;
}

/* The longest a wait sleeps without progressing the worker. UCX raises no
 * wake-up event when send resources free up (a send parked on UCX's
 * pending queue because a shared-memory FIFO was full moves only when
 * somebody calls progress), and it runs its keepalive (which finds a peer
 * process gone over CMA or shared memory, where no fd reports it) only
 * inside ucp_worker_progress. Waking every few ms costs nothing measurable
 * and is still no spin. */
#define NAP_MAX_MS 5

/* Sleep until the worker has something to do or ms pass. */
static void sleep_on_worker(ucx_ctx_t *c, int ms)
{
    if (ms < 0 || ms > NAP_MAX_MS)
        ms = NAP_MAX_MS;
    ucs_status_t s = ucp_worker_arm(c->worker);
    if (s == UCS_ERR_BUSY)
        return; /* events arrived meanwhile: progress again */
    struct pollfd p = {.fd = c->efd, .events = POLLIN};
    if (s != UCS_OK) {
        /* Cannot arm: still never spin, nap briefly instead. */
        poll(NULL, 0, ms < 1 ? ms : 1);
        return;
    }
    poll(&p, 1, ms);
}

/* Two looks this far apart (a nap is at most NAP_MAX_MS) mean this rank
 * itself was stopped (progress_until). */
#define UCX_AWAY_S 1.0

/* Progress until every request completed, the transport failed, or the
 * deadline passed (idle: no request finished for c->timeout). Activity is
 * counted in finished requests, not in ucp_worker_progress's return: UCX's
 * own timers (keepalive) make that non-zero even when a peer is hung. The
 * core cuts large collectives into chunks, so completions come often. */
static dt_status_t progress_until(ucx_ctx_t *c, dt_request_t **reqs, size_t n,
                                  double deadline, int idle)
{
    double last = dt_clock_now(), start = last;
    unsigned long seen = c->completions;
    int spinning = c->spin.spin > 0;
    double looked = start; /* the clock at the last look */
    while (!all_complete(reqs, n) && c->failed == DT_OK) {
        /* Long since the last look: this rank itself did not run (the
         * whole job stopped, Ctrl-Z or kill -STOP of every rank, and
         * continued); that time is not the peers' silence. */
        double now = dt_clock_now();
        if (idle && now - looked > UCX_AWAY_S)
            last += now - looked;
        looked = now;
        unsigned moved = ucp_worker_progress(c->worker);
        if (idle && c->completions != seen) {
            seen = c->completions;
            last = dt_clock_now();
        }
        if (moved)
            continue;
        if (all_complete(reqs, n) || c->failed != DT_OK)
            break;
        /* Poll a little before sleeping ([transport.ucx] spin; why:
         * core/comm/wait_spin.c). */
        if (spinning && dt_wait_spin_again(&c->spin, start))
            continue;
        spinning = 0;
        int ms = ms_until(idle ? last + c->timeout : deadline);
        if (ms == 0)
            return DT_ERR_TIMEOUT;
        sleep_on_worker(c, ms);
    }
    if (spinning)
        dt_wait_spin_paid(&c->spin);
    return DT_OK;
}

static void report_timeout(ucx_ctx_t *c, dt_request_t **reqs, size_t n)
{
    char ranks[256] = "";
    size_t off = 0;
    for (size_t i = 0; i < n && off < 200; i++) {
        int seen = 0;
        for (size_t k = 0; k < i; k++)
            seen |= !reqs[k]->complete && reqs[k]->peer == reqs[i]->peer;
        if (!reqs[i]->complete && !seen)
            off += (size_t)snprintf(ranks + off, sizeof ranks - off, " %d",
                                    reqs[i]->peer);
    }
    char why[400];
    snprintf(why, sizeof why,
             "nothing moved for %.0f s (the [transport.ucx] timeout) while "
             "waiting on rank(s)%s: they are hung, stopped or unreachable",
             c->timeout, ranks);
    ucx_fail(c, n ? reqs[0]->peer : -1, DT_ERR_TIMEOUT, why);
}

static dt_status_t collect(ucx_ctx_t *c, dt_request_t **reqs, size_t n)
{
    dt_status_t st = DT_OK;
    for (size_t i = 0; i < n; i++) {
        if (reqs[i]->st != DT_OK && st == DT_OK)
            st = reqs[i]->st;
        req_release(reqs[i]);
    }
    if (st == DT_OK && c->failed != DT_OK)
        st = c->failed;
    return st;
}

dt_status_t ucx_wait(void *ctx, dt_request_t **reqs, size_t n,
                     int timeout_ms)
{
    ucx_ctx_t *c = ctx;
    if (timeout_ms >= 0) {
        if (progress_until(c, reqs, n, dt_clock_now() + timeout_ms / 1000.0, 0) ==
            DT_ERR_TIMEOUT)
            return DT_ERR_TIMEOUT; /* requests stay valid */
    } else if (progress_until(c, reqs, n, 0, 1) == DT_ERR_TIMEOUT) {
        report_timeout(c, reqs, n);
    }
    return collect(c, reqs, n);
}

dt_status_t ucx_wait_until(ucx_ctx_t *c, dt_request_t **reqs, size_t n,
                           double deadline)
{
    if (progress_until(c, reqs, n, deadline, 0) == DT_ERR_TIMEOUT) {
        for (size_t i = 0; i < n; i++)
            if (!reqs[i]->complete) {
                reqs[i]->complete = 1;
                reqs[i]->st = DT_ERR_TIMEOUT;
            }
    }
    return collect(c, reqs, n);
}
