/* ucx_collectives.c — the ucx transport's native collectives: through a
 * shared-memory segment (core/shm_coll.c) when every rank of the job is on
 * this host, host memory and [transport.ucx] shm = auto; otherwise they
 * decline and the core runs its ring and halving over UCX's tagged
 * messages. Why not UCX on one host: its rendezvous pins pages and enters
 * the kernel (CMA) for every message, and the ring passes each byte
 * 2(n-1)/n times through it; the segment costs one copy in and one out,
 * in cache-sized rounds (1-4 MiB allreduce at N = 2: 2.5-3x faster). */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "coll_internal.h"
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

dt_status_t ucx_shm_setup(ucx_ctx_t *c, const dt_transport_args_t *a)
{
    const char *tls = c->tls[0] ? c->tls : getenv("UCX_TLS");
    const char *why = !c->shm_mode             ? "[transport.ucx] shm = off"
                      : a->local_size != a->size ? "ranks on more than one host"
                      : !tls_allows_shm(tls) ? "UCX_TLS leaves out shared memory"
                      : !a->store            ? "no rendezvous store"
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
    return dt_shm_open(&sa, &c->shm);
}

/* The segment takes host memory of a job on one host; anything else goes
 * to the core (every rank declines alike: same layout, same memory kind). */
static int use_shm(const ucx_ctx_t *c, dt_mem_t mem)
{
    return c->shm && mem == DT_MEM_HOST;
}

dt_status_t ucx_allreduce(void *ctx, const void *send, void *recv,
                          size_t count, dt_dtype_t t, dt_redop_t op,
                          dt_mem_t mem, void *stream)
{
    ucx_ctx_t *c = ctx;
    (void)stream;
    if (!use_shm(c, mem) || !dt_coll_reducible(t, op))
        return DT_DECLINED;
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
    if (!c->shm)
        return DT_DECLINED;
    return dt_shm_barrier(c->shm);
}
