/* coll.h — collective algorithms over a transport's point-to-point calls
 * (internal to libdt). When the transport offers a native collective
 * (a non-NULL entry in its ops table) these functions use it instead.
 *
 * All ranks call each collective in the same order with the same count,
 * type and op. Counts may be 0, not divisible by size, or smaller than size.
 * send == recv means in place. Buffers are host memory (DT_MEM_HOST) unless
 * the transport reports DT_CAP_CUDA_MEM. */
#ifndef DT_COLL_H
#define DT_COLL_H

#include <stddef.h>
#include <dt/plugin.h>

typedef struct dt_comm {
    const dt_transport_ops_t *ops;
    void *ctx;              /* the transport instance                       */
    int rank, size;
    size_t small_bytes;     /* allreduce below this: latency-optimal algo   */
    size_t ring_bytes;      /* allreduce from this on: the ring; between:
                               halving/doubling; 0: by size (measured)     */
    size_t chunk_bytes;     /* ring pipelining chunk                        */
    int timeout_ms;         /* per wait; -1: the transport's own timeout    */
    void *scratch;          /* reusable temporary buffer owned by the comm  */
    size_t scratch_len;
} dt_comm_t;

dt_status_t dt_coll_allreduce(dt_comm_t *c, const void *send, void *recv,
                              size_t count, dt_dtype_t t, dt_redop_t op);
dt_status_t dt_coll_broadcast(dt_comm_t *c, void *buf, size_t count,
                              dt_dtype_t t, int root);
/* recv holds size * count_per_rank elements, rank r's block at r. */
dt_status_t dt_coll_allgather(dt_comm_t *c, const void *send, void *recv,
                              size_t count_per_rank, dt_dtype_t t);
/* send holds size * count_per_rank elements; recv gets this rank's block
 * of the reduction. */
dt_status_t dt_coll_reduce_scatter(dt_comm_t *c, const void *send,
                                   void *recv, size_t count_per_rank,
                                   dt_dtype_t t, dt_redop_t op);
dt_status_t dt_coll_barrier(dt_comm_t *c);
void dt_comm_release(dt_comm_t *c); /* frees scratch; not the transport */

/* Section [collectives] (coll_config.c): allreduce_small, allreduce_ring,
 * ring_chunk. */
extern const dt_key_spec_t dt_coll_keys[];
/* Set small_bytes, ring_bytes and chunk_bytes from [collectives] (a core section:
 * every dt_config_t knows it). */
dt_status_t dt_comm_configure(dt_comm_t *c, const dt_config_t *cfg);

/* dst[i] = op(dst[i], src[i]) for n elements (DT_AVG reduces as a sum; the
 * caller scales once at the end with dt_reduce_scale). Vectorized loops. */
dt_status_t dt_reduce_local(void *dst, const void *src, size_t n,
                            dt_dtype_t t, dt_redop_t op);
dt_status_t dt_reduce_scale(void *buf, size_t n, dt_dtype_t t, double f);

#endif /* DT_COLL_H */
