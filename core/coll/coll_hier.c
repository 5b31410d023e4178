/* coll_hier.c — the hierarchical allreduce (coll_host.h): within the host
 * through the shared segment, across hosts over the job's transport among
 * the ranks of the same local index, within the host again. Any transport
 * gets it: the cross-host step is the core's own allreduce over the
 * transport's point-to-point calls, renumbered to the group. */
#include <dt/log.h>
#include "coll_host.h"
#include "coll_internal.h"

static dt_status_t group_isend(void *ctx, int peer, const void *buf,
                               size_t len, dt_mem_t mem, int tag,
                               dt_request_t **req)
{
    dt_coll_group_t *g = ctx;
    return g->ops->isend(g->ctx, g->ranks[peer], buf, len, mem, tag, req);
}

static dt_status_t group_irecv(void *ctx, int peer, void *buf, size_t len,
                               dt_mem_t mem, int tag, dt_request_t **req)
{
    dt_coll_group_t *g = ctx;
    return g->ops->irecv(g->ctx, g->ranks[peer], buf, len, mem, tag, req);
}

static dt_status_t group_test(void *ctx, dt_request_t *req, int *done)
{
    dt_coll_group_t *g = ctx;
    return g->ops->test(g->ctx, req, done);
}

static dt_status_t group_wait(void *ctx, dt_request_t **reqs, size_t n,
                              int timeout_ms)
{
    dt_coll_group_t *g = ctx;
    return g->ops->wait(g->ctx, reqs, n, timeout_ms);
}

/* No native collectives: the transport's would span the whole job. */
const dt_transport_ops_t dt_coll_group_ops = {
    .size = sizeof(dt_transport_ops_t),
    .isend = group_isend,
    .irecv = group_irecv,
    .test = group_test,
    .wait = group_wait,
};

/* An average is summed throughout and scaled once, by the whole job's
 * size. The blocks are cut as the ring cuts them, over the host's ranks. */
dt_status_t dt_coll_hier_allreduce(dt_comm_t *c, const void *send,
                                   void *recv, size_t count, dt_dtype_t t,
                                   dt_redop_t op)
{
    dt_coll_host_t *h = c->host;
    dt_redop_t sum = op == DT_AVG ? DT_SUM : op;
    size_t es = dt_dtype_size(t);
    size_t off = dt_block_off(count, h->local_count, h->local_index);
    size_t len = dt_block_len(count, h->local_count, h->local_index);
    char *mine = (char *)recv + off * es;
    if (count == 0)
        return DT_OK;
    DT_CHECK(dt_shm_reduce_blocks(h->shm, send, recv, count, t, op));
    if (len)
        DT_CHECK(dt_coll_allreduce(&h->cross, mine, mine, len, t, sum));
    if (len && op == DT_AVG)
        DT_CHECK(dt_reduce_scale(mine, len, t, 1.0 / c->size));
    return dt_shm_allgather_blocks(h->shm, recv, count, t);
}
