/* shm_coll.h — collectives through one shared-memory segment for a job
 * whose ranks all run on one host (internal to libdt and the in-tree
 * transports; the ucx transport uses it, [transport.ucx] shm).
 *
 * Why: on one host the bytes need not go through a transport at all. Each
 * rank copies its input, a chunk at a time, into its own slots of a segment
 * every rank maps; each reduces its share of the chunk from all slots and
 * publishes the result; each copies the others' results out. Chunks are
 * small enough to stay in cache, and no system call is on the data path
 * (UCX's rendezvous pins pages and enters the kernel per message). The
 * idea is that of UCC's tl/shm and Open MPI's coll/sm.
 *
 * Every rank calls each function in the same order with the same count,
 * type, op and root. A rank that does not fails every rank with
 * DT_ERR_INVALID, each naming the two calls that differ, before any rank
 * reads another's data (and so does every later call: the job cannot
 * continue). A rank that waits on a peer polls for a short while, then
 * sleeps on a futex; a peer whose process is gone, or that stays silent
 * for the timeout, is an error naming it. */
#ifndef DT_SHM_COLL_H
#define DT_SHM_COLL_H

#include <stddef.h>
#include <dt/status.h>
#include <dt/store.h>
#include <dt/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dt_shm dt_shm_t;

typedef struct dt_shm_args {
    const char *name;    /* the transport using it, for messages ("ucx") */
    dt_store_t *store;   /* the job's store: the segment's name travels here */
    const char *prefix;  /* store keys start with it ("ucx/shm")             */
    int rank, size;      /* every rank of the job is on this host            */
    double timeout;      /* seconds a peer may stay silent                   */
    size_t chunk;        /* bytes per rank and round (0: the default)        */
    double spin;         /* seconds a wait polls before it sleeps            */
    const int *global;   /* the job's rank of each of the size ranks here
                            (a host's ranks in a job across hosts); NULL:
                            the same numbers                               */
} dt_shm_args_t;

#define DT_SHM_DEFAULT_CHUNK ((size_t)256 * 1024)
/* Slots per rank: rounds that may be under way at once. */
#define DT_SHM_SLOTS 4

/* Collective over all ranks. DT_OK with *out NULL when shared memory
 * cannot be used here (no /dev/shm, no space, ranks that cannot see each
 * other's processes): every rank then gets NULL, and says why at -v.
 * Errors are for the store (a rank that never came). */
dt_status_t dt_shm_open(const dt_shm_args_t *a, dt_shm_t **out);
void dt_shm_close(dt_shm_t *s);

dt_status_t dt_shm_allreduce(dt_shm_t *s, const void *send, void *recv,
                             size_t count, dt_dtype_t t, dt_redop_t op);
/* send holds size * count_per_rank elements; recv gets this rank's block. */
dt_status_t dt_shm_reduce_scatter(dt_shm_t *s, const void *send, void *recv,
                                  size_t count_per_rank, dt_dtype_t t,
                                  dt_redop_t op);
/* recv holds size * count_per_rank elements, rank r's block at r. */
dt_status_t dt_shm_allgather(dt_shm_t *s, const void *send, void *recv,
                             size_t count_per_rank, dt_dtype_t t);
dt_status_t dt_shm_broadcast(dt_shm_t *s, void *buf, size_t count,
                             dt_dtype_t t, int root);

/* The two halves of a hierarchical allreduce (ranks of one host here,
 * hosts through a transport in between). The vector of count elements is
 * cut into blocks as the core's ring cuts it (dt_block_off over this
 * group's ranks). reduce_blocks leaves block r of the reduction (DT_AVG:
 * the sum; pass the caller's op, so that avg and sum do not agree) at its
 * place in recv; allgather_blocks copies each rank's block of buf to the
 * others' buf. */
dt_status_t dt_shm_reduce_blocks(dt_shm_t *s, const void *send, void *recv,
                                 size_t count, dt_dtype_t t, dt_redop_t op);
dt_status_t dt_shm_allgather_blocks(dt_shm_t *s, void *buf, size_t count,
                                    dt_dtype_t t);
dt_status_t dt_shm_barrier(dt_shm_t *s);

#ifdef __cplusplus
}
#endif
#endif /* DT_SHM_COLL_H */
