/* transport_call.h — the transport plugin's ops on a communicator, each
 * call marked as in flight (plugin/plugin_crash.h), so that a rank that
 * crashes inside one says "crashed in transport plugin 'x', in its op
 * isend()" instead of dying unnamed. isend, irecv and test run once per
 * message: the mark is two thread-local stores around the call, no
 * syscall. A comm without a plugin (c->plugin NULL: tests, the
 * hierarchy's group when made by hand) marks "none". Internal to libdt. */
#ifndef DT_COLL_TRANSPORT_CALL_H
#define DT_COLL_TRANSPORT_CALL_H

#include "coll.h"
#include "plugin/plugin_crash.h"

static inline dt_status_t dt_transport_isend(dt_comm_t *c, int peer,
                                             const void *buf, size_t len,
                                             dt_mem_t mem, int tag,
                                             dt_request_t **req)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "isend");
    dt_status_t st = c->ops->isend(c->ctx, peer, buf, len, mem, tag, req);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_transport_irecv(dt_comm_t *c, int peer,
                                             void *buf, size_t len,
                                             dt_mem_t mem, int tag,
                                             dt_request_t **req)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "irecv");
    dt_status_t st = c->ops->irecv(c->ctx, peer, buf, len, mem, tag, req);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_transport_test(dt_comm_t *c, dt_request_t *req,
                                            int *done)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "test");
    dt_status_t st = c->ops->test(c->ctx, req, done);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_transport_wait(dt_comm_t *c,
                                            dt_request_t **reqs, size_t n,
                                            int timeout_ms)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "wait");
    dt_status_t st = c->ops->wait(c->ctx, reqs, n, timeout_ms);
    dt_plugin_call_end(was);
    return st;
}

static inline uint32_t dt_transport_caps(dt_comm_t *c)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "caps");
    uint32_t caps = c->ops->caps(c->ctx);
    dt_plugin_call_end(was);
    return caps;
}

/* The native collectives (only where the ops table has them). */
static inline dt_status_t dt_transport_allreduce(dt_comm_t *c,
                                                 const void *send, void *recv,
                                                 size_t count, dt_dtype_t t,
                                                 dt_redop_t op, dt_mem_t mem,
                                                 void *stream)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "allreduce");
    dt_status_t st =
        c->ops->allreduce(c->ctx, send, recv, count, t, op, mem, stream);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_transport_broadcast(dt_comm_t *c, void *buf,
                                                 size_t count, dt_dtype_t t,
                                                 int root)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "broadcast");
    dt_status_t st =
        c->ops->broadcast(c->ctx, buf, count, t, root, DT_MEM_HOST, NULL);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_transport_allgather(dt_comm_t *c,
                                                 const void *send, void *recv,
                                                 size_t count_per_rank,
                                                 dt_dtype_t t)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "allgather");
    dt_status_t st = c->ops->allgather(c->ctx, send, recv, count_per_rank, t,
                                       DT_MEM_HOST, NULL);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_transport_reduce_scatter(
    dt_comm_t *c, const void *send, void *recv, size_t count_per_rank,
    dt_dtype_t t, dt_redop_t op)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "reduce_scatter");
    dt_status_t st = c->ops->reduce_scatter(c->ctx, send, recv,
                                            count_per_rank, t, op,
                                            DT_MEM_HOST, NULL);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_transport_barrier(dt_comm_t *c)
{
    dt_plugin_call_t was = dt_plugin_call_begin(c->plugin, "barrier");
    dt_status_t st = c->ops->barrier(c->ctx);
    dt_plugin_call_end(was);
    return st;
}

#endif /* DT_COLL_TRANSPORT_CALL_H */
