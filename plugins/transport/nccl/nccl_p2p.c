/* nccl_p2p.c — point-to-point over ncclSend/ncclRecv. NCCL matches sends
 * and receives in the order they are issued on a stream, so a send posted
 * before its matching receive on the other side would block both ranks;
 * therefore isend/irecv only queue, and the next test or wait issues every
 * queued operation as one NCCL group. Host buffers go through a staging
 * pair per request (a device buffer and a pinned host bounce buffer,
 * taken from a free list and given back, never cudaFree'd per request);
 * a receive lands in the pinned buffer and is copied to the caller's
 * memory once its event has happened, so no copy into pageable memory can
 * block inside CUDA. Completion is a CUDA event polled with naps, under
 * the deadline. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "nccl_tp.h"

/* A staging pair of at least len bytes: from the free list, or new. */
static dt_status_t take_buf(nccl_ctx_t *c, size_t len, nccl_buf_t **out)
{
    for (nccl_buf_t **p = &c->free_bufs; *p; p = &(*p)->next)
        if ((*p)->cap >= len) {
            *out = *p;
            *p = (*p)->next;
            (*out)->next = NULL;
            return DT_OK;
        }
    nccl_buf_t *b = calloc(1, sizeof *b);
    if (!b)
        return DT_ERR_NOMEM;
    size_t cap = 4096;
    while (cap < len)
        cap *= 2;
    b->cap = cap;
    dt_status_t st = nccl_cuda_check(c, cudaMalloc(&b->dev, cap),
                                     "allocating device staging memory");
    if (st == DT_OK)
        st = nccl_cuda_check(c, cudaMallocHost(&b->host, cap),
                             "allocating pinned staging memory");
    if (st != DT_OK) {
        if (b->dev)
            cudaFree(b->dev);
        free(b);
        return st;
    }
    *out = b;
    return DT_OK;
}

void nccl_free_bufs(nccl_ctx_t *c)
{
    while (c->free_bufs) {
        nccl_buf_t *b = c->free_bufs;
        c->free_bufs = b->next;
        cudaFree(b->dev);
        cudaFreeHost(b->host);
        free(b);
    }
}

/* The request's staging pair goes back to ctx's free list. */
static void req_free(nccl_ctx_t *c, dt_request_t *q)
{
    if (q->done)
        cudaEventDestroy(q->done);
    if (q->buf) {
        q->buf->next = c->free_bufs;
        c->free_bufs = q->buf;
    }
    free(q);
}

/* A finished request: a host receive is copied out of the pinned buffer. */
static void req_done(nccl_ctx_t *c, dt_request_t *q)
{
    if (q->is_recv && q->buf && q->len)
        memcpy(q->user, q->buf->host, q->len);
    req_free(c, q);
}

static dt_status_t post(nccl_ctx_t *c, int is_recv, int peer, void *buf,
                        size_t len, dt_mem_t mem, dt_request_t **out)
{
    DT_CHECK(nccl_enter(c));
    if (peer < 0 || peer >= c->size || peer == c->rank) {
        dt_error("nccl: rank %d: %s with rank %d: not another rank of 0..%d",
                 c->rank, is_recv ? "receive" : "send", peer, c->size - 1);
        return DT_ERR_INVALID;
    }
    dt_request_t *q = calloc(1, sizeof *q);
    if (!q)
        return DT_ERR_NOMEM;
    *q = (dt_request_t){.is_recv = is_recv, .peer = peer, .user = buf,
                        .dev = buf, .len = len, .mem = mem};
    dt_status_t st = nccl_cuda_check(
        c, cudaEventCreateWithFlags(&q->done, cudaEventDisableTiming),
        "creating a completion event");
    if (st == DT_OK && mem == DT_MEM_HOST) {
        st = take_buf(c, len ? len : 1, &q->buf);
        q->dev = st == DT_OK ? q->buf->dev : NULL;
    }
    if (st != DT_OK) {
        req_free(c, q);
        return st;
    }
    *c->posted_tail = q;
    c->posted_tail = &q->next;
    *out = q;
    return DT_OK;
}

dt_status_t nccl_isend(void *ctx, int peer, const void *buf, size_t len,
                       dt_mem_t mem, int tag, dt_request_t **req)
{
    (void)tag; /* NCCL matches by order; the core keeps tags in order too */
    return post(ctx, 0, peer, (void *)buf, len, mem, req);
}

dt_status_t nccl_irecv(void *ctx, int peer, void *buf, size_t len,
                       dt_mem_t mem, int tag, dt_request_t **req)
{
    (void)tag;
    return post(ctx, 1, peer, buf, len, mem, req);
}

/* Issue everything queued as one group. */
static dt_status_t launch(nccl_ctx_t *c)
{
    dt_request_t *q, *list = c->posted;
    if (!list || c->failed != DT_OK)
        return c->failed;
    /* From here the requests belong to their callers' test/wait alone. */
    c->posted = NULL;
    c->posted_tail = &c->posted;
    for (q = list; q; q = q->next)
        if (!q->is_recv && q->mem == DT_MEM_HOST && q->len) {
            memcpy(q->buf->host, q->user, q->len);
            DT_CHECK(nccl_cuda_check(
                c,
                cudaMemcpyAsync(q->dev, q->buf->host, q->len,
                                cudaMemcpyHostToDevice, c->stream),
                "copying a send to the GPU"));
        }
    ncclResult_t gr = ncclGroupStart();
    if (gr != ncclSuccess)
        return nccl_give_up(c, "starting a point-to-point group", "stuck",
                            gr);
    for (q = list; q; q = q->next) {
        ncclResult_t r = q->is_recv ? ncclRecv(q->dev, q->len, ncclInt8,
                                               q->peer, c->comm, c->stream)
                                    : ncclSend(q->dev, q->len, ncclInt8,
                                               q->peer, c->comm, c->stream);
        if (r != ncclSuccess && r != ncclInProgress) {
            ncclGroupEnd();
            return nccl_give_up(c, "posting point-to-point", "stuck", r);
        }
    }
    DT_CHECK(nccl_check(c, ncclGroupEnd(), "point-to-point"));
    for (q = list; q; q = q->next) {
        if (q->is_recv && q->mem == DT_MEM_HOST && q->len)
            DT_CHECK(nccl_cuda_check(
                c,
                cudaMemcpyAsync(q->buf->host, q->dev, q->len,
                                cudaMemcpyDeviceToHost, c->stream),
                "copying a receive from the GPU"));
        DT_CHECK(nccl_cuda_check(c, cudaEventRecord(q->done, c->stream),
                                 "recording completion"));
        q->launched = 1;
    }
    return DT_OK;
}

dt_status_t nccl_test(void *ctx, dt_request_t *req, int *done)
{
    nccl_ctx_t *c = ctx;
    *done = 0;
    DT_CHECK(nccl_enter(c));
    DT_CHECK(launch(c));
    cudaError_t e = cudaEventQuery(req->done);
    if (e == cudaErrorNotReady) {
        /* Not done: an asynchronous NCCL error ends it (the caller's
         * test loop bounds the time). */
        ncclResult_t r = ncclSuccess;
        ncclCommGetAsyncError(c->comm, &r);
        if (r != ncclSuccess && r != ncclInProgress)
            return nccl_give_up(c, "point-to-point", "stuck", r);
        return DT_OK;
    }
    *done = 1;
    if (e == cudaSuccess) {
        req_done(c, req);
        return DT_OK;
    }
    req_free(c, req);
    return nccl_cuda_check(c, e, "point-to-point");
}

dt_status_t nccl_wait(void *ctx, dt_request_t **reqs, size_t n,
                      int timeout_ms)
{
    nccl_ctx_t *c = ctx;
    dt_status_t st = nccl_enter(c);
    if (st == DT_OK)
        st = launch(c);
    double start = dt_clock_now(), last = start;
    int round = 0;
    for (size_t i = 0; i < n && st == DT_OK;) {
        cudaError_t e = cudaEventQuery(reqs[i]->done);
        if (e == cudaSuccess) {
            i++;
            last = dt_clock_now();
            continue;
        }
        if (e != cudaErrorNotReady) {
            st = nccl_cuda_check(c, e, "point-to-point");
            break;
        }
        ncclResult_t r = ncclSuccess;
        ncclCommGetAsyncError(c->comm, &r);
        if (r != ncclSuccess && r != ncclInProgress) {
            st = nccl_give_up(c, "point-to-point", "stuck", r);
            break;
        }
        if (timeout_ms >= 0 && dt_clock_now() > start + timeout_ms / 1000.0)
            return DT_ERR_TIMEOUT; /* requests stay valid */
        if (timeout_ms < 0 && dt_clock_now() > last + c->timeout) {
            st = nccl_give_up(c, "point-to-point", "stuck", r);
            break;
        }
        nccl_nap(&round);
    }
    for (size_t i = 0; i < n; i++) {
        if (st == DT_OK)
            req_done(c, reqs[i]);
        else
            req_free(c, reqs[i]);
    }
    return st;
}

void nccl_free_posted(nccl_ctx_t *c)
{
    while (c->posted) {
        dt_request_t *q = c->posted;
        c->posted = q->next;
        req_free(c, q);
    }
    c->posted_tail = &c->posted;
}
