/* coll_gather_scatter.c — allgather and reduce-scatter: the two halves of
 * the pipelined ring (coll_ring.c) on their own.
 *
 * In place, as in MPI: allgather with send == recv finds this rank's block
 * already at its place in recv; reduce-scatter with send == recv reads the
 * whole input from recv and leaves the result at its start. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_host.h"
#include "coll_internal.h"
#include "transport_call.h"

dt_status_t dt_coll_allgather(dt_comm_t *c, const void *send, void *recv,
                              size_t count_per_rank, dt_dtype_t t)
{
    dt_coll_begin(c, t, DT_SUM, 0);
    size_t es = dt_dtype_size(t);
    if (es == 0) {
        dt_error("allgather: rank %d: invalid element type %d", c->rank,
                 (int)t);
        return DT_ERR_INVALID;
    }
    if (DT_OPS_HAS(c->ops, dt_transport_ops_t, allgather)) {
        dt_status_t st =
            dt_transport_allgather(c, send, recv, count_per_rank, t);
        if (st != DT_DECLINED)
            return st;
    }
    if (dt_coll_host_whole(c))
        return dt_shm_allgather(c->host->shm, send, recv, count_per_rank,
                                t);
    char *mine = (char *)recv + (size_t)c->rank * count_per_rank * es;
    if (send != recv && send != mine && count_per_rank)
        memcpy(mine, send, count_per_rank * es);
    dt_ring_args_t a = {.src = recv, .work = recv,
                        .count = count_per_rank * (size_t)c->size, .t = t,
                        .op = DT_SUM, .rs = 0, .ag = 1,
                        .tag = DT_TAG_ALLGATHER};
    return dt_coll_ring(c, &a);
}

dt_status_t dt_coll_reduce_scatter(dt_comm_t *c, const void *send,
                                   void *recv, size_t count_per_rank,
                                   dt_dtype_t t, dt_redop_t op)
{
    dt_coll_begin(c, t, op, 0);
    if (DT_OPS_HAS(c->ops, dt_transport_ops_t, reduce_scatter)) {
        dt_status_t st = dt_transport_reduce_scatter(c, send, recv,
                                                     count_per_rank, t, op);
        if (st != DT_DECLINED)
            return st;
    }
    if (!dt_coll_reducible(t, op)) {
        dt_error("reduce-scatter: rank %d: %s with op %d is not supported "
                 "(float32, float64, int32; sum, avg, max, min)",
                 c->rank, dt_dtype_name(t), (int)op);
        return DT_ERR_UNSUPPORTED;
    }
    if (dt_coll_host_whole(c))
        return dt_shm_reduce_scatter(c->host->shm, send, recv, count_per_rank,
                                     t, op);
    size_t es = dt_dtype_size(t), bytes = count_per_rank * es;
    const char *mine = (const char *)send + (size_t)c->rank * bytes;
    if (c->size == 1 || bytes == 0) {
        if (bytes && recv != (const void *)mine)
            memmove(recv, mine, bytes);
        return DT_OK;
    }
    /* The ring reduces into a full-size work buffer (intermediate blocks
     * pass through it), then this rank's block is copied out. */
    char *work = malloc(bytes * (size_t)c->size);
    if (!work) {
        dt_error("reduce-scatter: rank %d: cannot allocate %zu bytes",
                 c->rank, bytes * (size_t)c->size);
        return DT_ERR_NOMEM;
    }
    dt_ring_args_t a = {.src = send, .work = work,
                        .count = count_per_rank * (size_t)c->size, .t = t,
                        .op = op, .rs = 1, .ag = 0,
                        .tag = DT_TAG_REDUCE_SCATTER};
    dt_status_t st = dt_coll_ring(c, &a);
    if (st == DT_OK)
        memcpy(recv, work + (size_t)c->rank * bytes, bytes);
    free(work);
    return st;
}
