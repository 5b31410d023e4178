/* nccl_coll.c — NCCL's own allreduce, broadcast, allgather and
 * reduce-scatter. CUDA buffers go to NCCL directly on the caller's stream
 * (or the worker's); host buffers are staged through one device buffer
 * that grows as needed. Each call returns when its result is in place. */
#include <stdio.h>

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
    if (c->failed != DT_OK)
        return c->failed;
    if (k->mem == DT_MEM_CUDA) {
        k->dsend = (void *)k->send;
        k->drecv = k->recv;
        return DT_OK;
    }
    /* Separate input and output regions: every in-place form works. */
    size_t need = k->sbytes + k->rbytes;
    if (need > c->stage_len) {
        if (c->stage)
            cudaFree(c->stage);
        c->stage = NULL;
        c->stage_len = 0;
        DT_CHECK(nccl_cuda_check(c, cudaMalloc(&c->stage, need),
                                 "allocating device staging memory"));
        c->stage_len = need;
    }
    k->dsend = c->stage;
    k->drecv = (char *)c->stage + k->sbytes;
    if (k->sbytes)
        DT_CHECK(nccl_cuda_check(
            c,
            cudaMemcpyAsync(k->dsend, k->send, k->sbytes,
                            cudaMemcpyHostToDevice, k->s),
            what));
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
            cudaMemcpyAsync(k->recv, k->drecv, k->rbytes,
                            cudaMemcpyDeviceToHost, k->s),
            what));
    return nccl_sync(c, k->s, what);
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

dt_status_t nccl_allreduce(void *ctx, const void *send, void *recv,
                           size_t count, dt_dtype_t t, dt_redop_t op,
                           dt_mem_t mem, void *stream)
{
    nccl_ctx_t *c = ctx;
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
