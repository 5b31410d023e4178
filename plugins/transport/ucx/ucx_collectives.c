/* ucx_collectives.c — the ucx transport's native collectives: through a
 * shared-memory segment (core/coll/shm/shm_coll.c) when every rank of the job is on
 * this host, host memory and [transport.ucx] shm = auto; a hierarchical
 * allreduce when the job spans hosts with the same number of ranks on
 * each (ucx_hosts.c); otherwise they decline and the core runs its ring
 * and halving over UCX's tagged messages. Why not UCX on one host: its rendezvous pins pages and enters
 * the kernel (CMA) for every message, and the ring passes each byte
 * 2(n-1)/n times through it; the segment costs one copy in and one out,
 * in cache-sized rounds (1-4 MiB allreduce at N = 2: 2.5-3x faster). */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "coll/coll_internal.h"
#include "ucx.h"

/* Whether a UCX_TLS list lets data go through shared memory: a list that
 * leaves it out (tls = tcp) asks for the bytes to cross that transport
 * (benchmarks of UCX over TCP, say), so the segment is not used either. */
static int tls_allows_shm(const char *tls)
{
    static const char *const shm_tls[] = {"all", "sm", "shm", "posix",
                                          "sysv", "xpmem", "cma", "knem"};
    if (!tls || !*tls)
        return 1;
    int exclude = tls[0] == '^', named = 0;
    for (const char *p = tls + exclude; *p;) {
        size_t n = strcspn(p, ",");
        for (size_t i = 0; i < sizeof shm_tls / sizeof *shm_tls; i++)
            if (strlen(shm_tls[i]) == n && strncmp(p, shm_tls[i], n) == 0)
                named = 1;
        p += n + (p[n] == ',');
    }
    return exclude ? !named : named;
}

/* The segment takes host memory of a job on one host; anything else goes
 * to the core (every rank declines alike: same layout, same memory kind).
 * Across hosts the segment is only this host's: allreduce alone uses it. */
static int use_shm(const ucx_ctx_t *c, dt_mem_t mem)
{
    return c->shm && !c->hier && mem == DT_MEM_HOST;
}

/* The cross-host group's point-to-point calls: its rank h is global rank
 * cross_ranks[h]. No native collectives, so the core runs its own. */
static dt_status_t cross_isend(void *ctx, int peer, const void *buf,
                               size_t len, dt_mem_t mem, int tag,
                               dt_request_t **req)
{
    ucx_ctx_t *c = ctx;
    return ucx_isend(c, c->cross_ranks[peer], buf, len, mem, tag, req);
}

static dt_status_t cross_irecv(void *ctx, int peer, void *buf, size_t len,
                               dt_mem_t mem, int tag, dt_request_t **req)
{
    ucx_ctx_t *c = ctx;
    return ucx_irecv(c, c->cross_ranks[peer], buf, len, mem, tag, req);
}

static const dt_transport_ops_t cross_ops = {
    .size = sizeof(dt_transport_ops_t),
    .isend = cross_isend,
    .irecv = cross_irecv,
    .test = ucx_test,
    .wait = ucx_wait,
};

/* Within the host, across hosts, within the host again (ucx_hosts.c). An
 * average is summed throughout and scaled once, by the whole job's size. */
static dt_status_t hier_allreduce(ucx_ctx_t *c, const void *send, void *recv,
                                  size_t count, dt_dtype_t t, dt_redop_t op)
{
    dt_redop_t sum = op == DT_AVG ? DT_SUM : op;
    size_t es = dt_dtype_size(t);
    size_t off = dt_block_off(count, c->local_count, c->local_index);
    size_t len = dt_block_len(count, c->local_count, c->local_index);
    char *mine = (char *)recv + off * es;
    DT_CHECK(dt_shm_reduce_blocks(c->shm, send, recv, count, t, sum));
    if (len)
        DT_CHECK(dt_coll_allreduce(&c->cross, mine, mine, len, t, sum));
    if (len && op == DT_AVG)
        DT_CHECK(dt_reduce_scale(mine, len, t, 1.0 / c->size));
    return dt_shm_allgather_blocks(c->shm, recv, count, t);
}

dt_status_t ucx_shm_setup(ucx_ctx_t *c, const dt_transport_args_t *a)
{
    const char *tls = c->tls[0] ? c->tls : getenv("UCX_TLS");
    const char *why = !c->shm_mode             ? "[transport.ucx] shm = off"
                      : !tls_allows_shm(tls) ? "UCX_TLS leaves out shared memory"
                      : !a->store            ? "no rendezvous store"
                      : a->local_size != a->size &&
                              (!a->bind_addr || !*a->bind_addr)
                          ? "ranks on more than one host"
                          : NULL;
    if (a->size < 2)
        return DT_OK;
    if (why) {
        dt_debug("ucx: rank %d: collectives over UCX (%s)", c->rank, why);
        return DT_OK;
    }
    dt_shm_args_t sa = {.name = "ucx",
                        .store = a->store,
                        .prefix = "ucx/shm",
                        .rank = a->rank,
                        .size = a->size,
                        .timeout = c->timeout,
                        .chunk = c->shm_chunk,
                        .spin = c->shm_spin};
    if (a->local_size == a->size)
        return dt_shm_open(&sa, &c->shm);
    DT_CHECK(ucx_hier_setup(c, a, &sa));
    c->cross.ops = &cross_ops;
    c->cross.ctx = c;
    return DT_OK;
}

dt_status_t ucx_allreduce(void *ctx, const void *send, void *recv,
                          size_t count, dt_dtype_t t, dt_redop_t op,
                          dt_mem_t mem, void *stream)
{
    ucx_ctx_t *c = ctx;
    (void)stream;
    if (!c->shm || mem != DT_MEM_HOST || !dt_coll_reducible(t, op))
        return DT_DECLINED;
    if (c->hier)
        return count ? hier_allreduce(c, send, recv, count, t, op) : DT_OK;
    return dt_shm_allreduce(c->shm, send, recv, count, t, op);
}

dt_status_t ucx_reduce_scatter(void *ctx, const void *send, void *recv,
                               size_t count_per_rank, dt_dtype_t t,
                               dt_redop_t op, dt_mem_t mem, void *stream)
{
    ucx_ctx_t *c = ctx;
    (void)stream;
    if (!use_shm(c, mem) || !dt_coll_reducible(t, op))
        return DT_DECLINED;
    return dt_shm_reduce_scatter(c->shm, send, recv, count_per_rank, t, op);
}

dt_status_t ucx_allgather(void *ctx, const void *send, void *recv,
                          size_t count_per_rank, dt_dtype_t t, dt_mem_t mem,
                          void *stream)
{
    ucx_ctx_t *c = ctx;
    (void)stream;
    if (!use_shm(c, mem))
        return DT_DECLINED;
    return dt_shm_allgather(c->shm, send, recv,
                            count_per_rank * dt_dtype_size(t));
}

dt_status_t ucx_broadcast(void *ctx, void *buf, size_t count, dt_dtype_t t,
                          int root, dt_mem_t mem, void *stream)
{
    ucx_ctx_t *c = ctx;
    (void)stream;
    if (!use_shm(c, mem))
        return DT_DECLINED;
    return dt_shm_broadcast(c->shm, buf, count * dt_dtype_size(t), root);
}

dt_status_t ucx_barrier(void *ctx)
{
    ucx_ctx_t *c = ctx;
    if (!c->shm || c->hier)
        return DT_DECLINED;
    return dt_shm_barrier(c->shm);
}
