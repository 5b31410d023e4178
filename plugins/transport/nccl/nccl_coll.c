/* nccl_coll.c — NCCL's own allreduce, broadcast, allgather and
 * reduce-scatter. CUDA buffers go to NCCL directly on the caller's stream
 * (or the transport's own); the caller orders that stream after the work
 * that wrote them (the trainer: an event per gradient bucket). Host
 * buffers are bounced through one pinned host buffer and one device
 * buffer, both grown geometrically: every copy is queued on the stream and
 * waited for under the deadline (nccl_sync), so a dead peer cannot hang a
 * rank inside a copy into pageable memory. Each call returns when its
 * result is in place. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "nccl_tp.h"

static dt_status_t map_type(dt_dtype_t t, ncclDataType_t *out)
{
    switch (t) {
    case DT_FLOAT32: *out = ncclFloat32; return DT_OK;
    case DT_FLOAT16: *out = ncclFloat16; return DT_OK;
    case DT_BFLOAT16: *out = ncclBfloat16; return DT_OK;
    case DT_FLOAT64: *out = ncclFloat64; return DT_OK;
    case DT_INT32: *out = ncclInt32; return DT_OK;
    default:
        dt_error("nccl: unknown element type %d", (int)t);
        return DT_ERR_INVALID;
    }
}

static dt_status_t map_op(dt_redop_t op, ncclRedOp_t *out)
{
    switch (op) {
    case DT_SUM: *out = ncclSum; return DT_OK;
    case DT_AVG: *out = ncclAvg; return DT_OK;
    case DT_MAX: *out = ncclMax; return DT_OK;
    case DT_MIN: *out = ncclMin; return DT_OK;
    default:
        dt_error("nccl: unknown reduction %d", (int)op);
        return DT_ERR_INVALID;
    }
}

/* Device pointers for send (sbytes) and recv (rbytes): the caller's own
 * for CUDA memory, else the staging buffer holding a copy of send. */
typedef struct call {
    nccl_ctx_t *c;
    cudaStream_t s;
    dt_mem_t mem;
    const void *send;
    void *recv, *dsend, *drecv;
    size_t sbytes, rbytes;
} call_t;

static dt_status_t begin(call_t *k, const char *what)
{
    nccl_ctx_t *c = k->c;
    DT_CHECK(nccl_enter(c));
    if (k->mem == DT_MEM_CUDA) {
        k->dsend = (void *)k->send;
        k->drecv = k->recv;
        return DT_OK;
    }
    /* Separate input and output regions: every in-place form works. */
    size_t need = k->sbytes + k->rbytes;
    DT_CHECK(nccl_grow_device(c, &c->stage, &c->stage_len, need,
                              "allocating device staging memory"));
    DT_CHECK(nccl_grow_pinned(c, &c->hstage, &c->hstage_len,
                              k->sbytes > k->rbytes ? k->sbytes : k->rbytes,
                              "allocating pinned staging memory"));
    k->dsend = c->stage;
    k->drecv = (char *)c->stage + k->sbytes;
    if (k->sbytes) {
        /* The previous call's copies finished (it waited): reuse. */
        memcpy(c->hstage, k->send, k->sbytes);
        DT_CHECK(nccl_cuda_check(
            c,
            cudaMemcpyAsync(k->dsend, c->hstage, k->sbytes,
                            cudaMemcpyHostToDevice, k->s),
            what));
    }
    return DT_OK;
}

static dt_status_t end(call_t *k, ncclResult_t r, const char *what)
{
    nccl_ctx_t *c = k->c;
    c->seq++;
    DT_CHECK(nccl_check(c, r, what));
    if (k->mem == DT_MEM_HOST && k->rbytes)
        DT_CHECK(nccl_cuda_check(
            c,
            cudaMemcpyAsync(c->hstage, k->drecv, k->rbytes,
                            cudaMemcpyDeviceToHost, k->s),
            what));
    DT_CHECK(nccl_sync(c, k->s, what));
    if (k->mem == DT_MEM_HOST && k->rbytes)
        memcpy(k->recv, c->hstage, k->rbytes);
    return DT_OK;
}

static call_t call(nccl_ctx_t *c, const void *send, size_t sbytes, void *recv,
                   size_t rbytes, dt_mem_t mem, void *stream)
{
    return (call_t){.c = c,
                    .s = stream ? (cudaStream_t)stream : c->stream,
                    .mem = mem,
                    .send = send,
                    .recv = recv,
                    .sbytes = sbytes,
                    .rbytes = rbytes};
}

/* ---- [collectives] compression = bf16: float32 sum/avg as ncclBfloat16.
 * NCCL widens each bf16 value it receives, adds in float32 and rounds to
 * bf16 for the next hop, the same scheme as the core's compressed
 * algorithms, so the wire (NVLink, PCIe, the network) carries half the
 * bytes. Host buffers: rounded on the CPU (nearest even), so the upload
 * and download are halved too; CUDA buffers: nccl_half.cu's kernels on
 * the stream. The result is the widened bf16 value on every rank.
 * Written without a GPU at hand: compiled, not run. */

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static dt_status_t grow_device(nccl_ctx_t *c, size_t need)
{
    return nccl_grow_device(c, &c->dhalf, &c->dhalf_len, need,
                            "allocating the bf16 buffer");
}

/* DT_DECLINED: not for bf16 (the caller goes on in float32). */
static dt_status_t allreduce_bf16(nccl_ctx_t *c, const void *send,
                                  void *recv, size_t count, dt_redop_t op,
                                  dt_mem_t mem, void *stream)
{
    const char *what = "allreduce (bf16)";
    cudaStream_t s = stream ? (cudaStream_t)stream : c->stream;
    size_t hbytes = count * sizeof(uint16_t);
    ncclRedOp_t no = op == DT_AVG ? ncclAvg : ncclSum;
    DT_CHECK(nccl_enter(c));
    if (mem == DT_MEM_CUDA) {
#ifdef DT_NCCL_KERNELS
        DT_CHECK(grow_device(c, hbytes));
        DT_CHECK(nccl_cuda_check(c, nccl_f32_to_bf16(send, c->dhalf, count,
                                                     s),
                                 what));
        c->seq++;
        DT_CHECK(nccl_check(c,
                            ncclAllReduce(c->dhalf, c->dhalf, count,
                                          ncclBfloat16, no, c->comm, s),
                            what));
        DT_CHECK(nccl_cuda_check(c, nccl_bf16_to_f32(c->dhalf, recv, count,
                                                     s),
                                 what));
        return nccl_sync(c, s, what);
#else
        if (!c->warned_cuda && c->rank == 0)
            dt_warn("nccl: compression = bf16 on CUDA buffers needs the "
                    "conversion kernels (built with nvcc): float32");
        c->warned_cuda = 1;
        return DT_DECLINED;
#endif
    }
    /* Pinned: the copy back is waited for under the deadline. */
    void *hh = c->hhalf;
    dt_status_t gst = nccl_grow_pinned(c, &hh, &c->hhalf_len, hbytes,
                                       "allocating the pinned bf16 buffer");
    c->hhalf = hh;
    if (gst != DT_OK)
        return gst;
    const float *in = send;
    for (size_t i = 0; i < count; i++)
        c->hhalf[i] = f32_to_bf16(in[i]);
    DT_CHECK(grow_device(c, hbytes));
    DT_CHECK(nccl_cuda_check(c,
                             cudaMemcpyAsync(c->dhalf, c->hhalf, hbytes,
                                             cudaMemcpyHostToDevice, s),
                             what));
    c->seq++;
    DT_CHECK(nccl_check(c,
                        ncclAllReduce(c->dhalf, c->dhalf, count, ncclBfloat16,
                                      no, c->comm, s),
                        what));
    DT_CHECK(nccl_cuda_check(c,
                             cudaMemcpyAsync(c->hhalf, c->dhalf, hbytes,
                                             cudaMemcpyDeviceToHost, s),
                             what));
    DT_CHECK(nccl_sync(c, s, what));
    float *out = recv;
    for (size_t i = 0; i < count; i++) {
        uint32_t u = (uint32_t)c->hhalf[i] << 16;
        memcpy(&out[i], &u, sizeof u);
    }
    return DT_OK;
}

dt_status_t nccl_allreduce(void *ctx, const void *send, void *recv,
                           size_t count, dt_dtype_t t, dt_redop_t op,
                           dt_mem_t mem, void *stream)
{
    nccl_ctx_t *c = ctx;
    /* ncclAvg of integers truncates the sum's quotient; dt.h promises
     * round to nearest (as the core's own reduction does): the core runs
     * it over this transport's isend/irecv instead, staging CUDA memory.
     * Every rank declines alike (it depends on type and op alone). */
    if (t == DT_INT32 && op == DT_AVG)
        return DT_DECLINED;
    if (c->bf16 && t == DT_FLOAT32 && (op == DT_SUM || op == DT_AVG) &&
        count > 0 && c->size > 1) {
        dt_status_t st =
            allreduce_bf16(c, send, recv, count, op, mem, stream);
        if (st != DT_DECLINED)
            return st;
    }
    ncclDataType_t nt;
    ncclRedOp_t no;
    DT_CHECK(map_type(t, &nt));
    DT_CHECK(map_op(op, &no));
    size_t bytes = count * dt_dtype_size(t);
    call_t k = call(c, send, bytes, recv, bytes, mem, stream);
    DT_CHECK(begin(&k, "allreduce"));
    return end(&k,
               ncclAllReduce(k.dsend, k.drecv, count, nt, no, c->comm, k.s),
               "allreduce");
}

dt_status_t nccl_broadcast(void *ctx, void *buf, size_t count, dt_dtype_t t,
                           int root, dt_mem_t mem, void *stream)
{
    nccl_ctx_t *c = ctx;
    ncclDataType_t nt;
    DT_CHECK(map_type(t, &nt));
    size_t bytes = count * dt_dtype_size(t);
    /* Only the root's data matters: others skip the upload. */
    call_t k = call(c, buf, c->rank == root ? bytes : 0, buf, bytes, mem,
                    stream);
    DT_CHECK(begin(&k, "broadcast"));
    return end(&k,
               ncclBroadcast(k.dsend, k.drecv, count, nt, root, c->comm, k.s),
               "broadcast");
}

dt_status_t nccl_allgather(void *ctx, const void *send, void *recv,
                           size_t count_per_rank, dt_dtype_t t, dt_mem_t mem,
                           void *stream)
{
    nccl_ctx_t *c = ctx;
    ncclDataType_t nt;
    DT_CHECK(map_type(t, &nt));
    size_t bytes = count_per_rank * dt_dtype_size(t);
    call_t k = call(c, send, bytes, recv, bytes * (size_t)c->size, mem,
                    stream);
    /* In place: this rank's block already sits at its place in recv. */
    if (send == recv)
        k.send = (char *)recv + (size_t)c->rank * bytes;
    DT_CHECK(begin(&k, "allgather"));
    return end(&k,
               ncclAllGather(k.dsend, k.drecv, count_per_rank, nt, c->comm,
                             k.s),
               "allgather");
}

dt_status_t nccl_reduce_scatter(void *ctx, const void *send, void *recv,
                                size_t count_per_rank, dt_dtype_t t,
                                dt_redop_t op, dt_mem_t mem, void *stream)
{
    nccl_ctx_t *c = ctx;
    ncclDataType_t nt;
    ncclRedOp_t no;
    DT_CHECK(map_type(t, &nt));
    DT_CHECK(map_op(op, &no));
    size_t bytes = count_per_rank * dt_dtype_size(t);
    call_t k = call(c, send, bytes * (size_t)c->size, recv, bytes, mem,
                    stream);
    DT_CHECK(begin(&k, "reduce_scatter"));
    int cuda_in_place = mem == DT_MEM_CUDA && send == recv;
    if (cuda_in_place) /* NCCL's in-place form, then move to the start */
        k.drecv = (char *)recv + (size_t)c->rank * bytes;
    DT_CHECK(end(&k,
                 ncclReduceScatter(k.dsend, k.drecv, count_per_rank, nt, no,
                                   c->comm, k.s),
                 "reduce_scatter"));
    if (cuda_in_place && c->rank != 0 && bytes) {
        DT_CHECK(nccl_cuda_check(c,
                                 cudaMemcpyAsync(recv, k.drecv, bytes,
                                                 cudaMemcpyDeviceToDevice,
                                                 k.s),
                                 "reduce_scatter"));
        return nccl_sync(c, k.s, "reduce_scatter");
    }
    return DT_OK;
}

dt_status_t nccl_barrier(void *ctx)
{
    int one = 1;
    return nccl_allreduce(ctx, &one, &one, 1, DT_INT32, DT_SUM, DT_MEM_HOST,
                          NULL);
}
