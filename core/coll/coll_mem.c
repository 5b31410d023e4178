/* coll_mem.c — allreduce on device memory, as the transport's caps allow:
 * a transport that reads CUDA memory (DT_CAP_CUDA_MEM) and has a native
 * allreduce (nccl) gets the device buffers and the stream; every other
 * transport, and one that declines the call, gets host memory: the core
 * copies the data device to host into a staging buffer the comm keeps,
 * runs its host allreduce (the transport's native one on host memory, or
 * the core's algorithms) and copies the result back (dt/device.h). The
 * core's own algorithms never see device memory: their reductions run
 * on the CPU. */
#include <stdlib.h>

#include <dt/device.h>
#include <dt/log.h>
#include "coll.h"
#include "coll_internal.h"
#include "transport_call.h"

dt_mem_path_t dt_coll_mem_path(uint32_t caps, int native_allreduce,
                               dt_mem_t mem)
{
    if (mem == DT_MEM_HOST)
        return DT_PATH_HOST;
    if ((caps & DT_CAP_CUDA_MEM) && native_allreduce)
        return DT_PATH_DEVICE;
    return DT_PATH_STAGE;
}

dt_mem_path_t dt_comm_device_path(const dt_comm_t *c)
{
    if (!c || !c->ops)
        return DT_PATH_STAGE;
    return dt_coll_mem_path(c->caps,
                            DT_OPS_HAS(c->ops, dt_transport_ops_t, allreduce),
                            DT_MEM_CUDA);
}

/* The comm's staging buffer, at least len bytes (kept for the next call). */
static dt_status_t stage_buffer(dt_comm_t *c, size_t len, void **out)
{
    if (len > c->stage_len || !c->stage) {
        void *p = realloc(c->stage, len ? len : 1);
        if (!p) {
            dt_error("allreduce: rank %d: cannot allocate %zu bytes of host "
                     "memory to stage device buffers", c->rank, len);
            return DT_ERR_NOMEM;
        }
        c->stage = p;
        c->stage_len = len;
    }
    *out = c->stage;
    return DT_OK;
}

dt_status_t dt_coll_allreduce_mem(dt_comm_t *c, const void *send,
                                  void *recv, size_t count, dt_dtype_t t,
                                  dt_redop_t op, dt_mem_t mem, void *stream)
{
    int native = DT_OPS_HAS(c->ops, dt_transport_ops_t, allreduce);
    switch (dt_coll_mem_path(c->caps, native, mem)) {
    case DT_PATH_HOST:
        return dt_coll_allreduce(c, send, recv, count, t, op);
    case DT_PATH_DEVICE: {
        dt_status_t st = dt_transport_allreduce(c, send, recv, count, t, op,
                                                mem, stream);
        if (st != DT_DECLINED)
            return st;
        break; /* it touched nothing: stage */
    }
    case DT_PATH_STAGE:
        break;
    }
    size_t bytes = count * dt_dtype_size(t);
    void *host;
    DT_CHECK(stage_buffer(c, bytes, &host));
    DT_CHECK(dt_gpu_copy(host, DT_MEM_HOST, send, mem, bytes, stream));
    DT_CHECK(dt_coll_allreduce(c, host, host, count, t, op));
    return dt_gpu_copy(recv, mem, host, DT_MEM_HOST, bytes, stream);
}
