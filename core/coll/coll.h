/* coll.h — collective algorithms over a transport's point-to-point calls
 * (internal to libdt). When the transport offers a native collective
 * (a non-NULL entry in its ops table) these functions use it instead.
 *
 * All ranks call each collective in the same order with the same count,
 * type and op. Counts may be 0, not divisible by size, or smaller than size.
 * send == recv means in place. Buffers are host memory (DT_MEM_HOST), except
 * for dt_coll_allreduce_mem, which takes device memory too and hands it to
 * the transport only when its caps say it can take it (coll_mem.c). */
#ifndef DT_COLL_H
#define DT_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <dt/plugin.h>

typedef struct dt_coll_host dt_coll_host_t; /* coll_host.h */

typedef struct dt_comm {
    const dt_transport_ops_t *ops;
    void *ctx;              /* the transport instance                       */
    const dt_plugin_t *plugin; /* ops' plugin, named by a crash in one of
                               them (transport_call.h); NULL: none       */
    int rank, size;
    size_t small_bytes;     /* allreduce below this: latency-optimal algo   */
    size_t ring_bytes;      /* allreduce from this on: the ring; between:
                               halving/doubling; 0: by size (measured)     */
    size_t chunk_bytes;     /* ring pipelining chunk                        */
    size_t hier_bytes;      /* across hosts: hierarchical from this size on */
    int timeout_ms;         /* per wait; -1: the transport's own timeout    */
    void *scratch;          /* reusable temporary buffer owned by the comm  */
    size_t scratch_len;
    dt_coll_host_t *host;   /* this host's ranks through shared memory
                               (dt_comm_setup_hosts); NULL: none            */
    uint32_t caps;          /* the transport's caps(), asked once at setup
                               (dt_comm_query_caps); 0: host memory only   */
    int caps_asked;         /* caps holds the answer                        */
    void *stage;            /* host copy of device buffers for a transport
                               that cannot read them; reused, grows        */
    size_t stage_len;
    dt_dtype_t wire;        /* [collectives] compression: DT_FLOAT32 (none),
                               DT_BFLOAT16 or DT_FLOAT16: float32 sum/avg
                               allreduce over the transport in 16 bits    */
    int feedback;           /* compression_feedback: error feedback        */
    struct dt_coll_ef *ef;  /* its residuals, by buffer (coll_half.c)      */
    unsigned call;          /* what the running collective said (type, op,
                               root: DT_COLL_TAG_DETAIL), in its tags      */
    char path[192];         /* which way host-memory collectives go, and
                               why, for people (dt_collectives_path);
                               set by dt_comm_setup_hosts                  */
} dt_comm_t;

/* Ask the transport's caps once (0 when it has no caps op), keep them in
 * c->caps and log them at debug level, naming the transport. */
void dt_comm_query_caps(dt_comm_t *c, const char *transport);

/* The worker's communicator after dt_init (comm/worker.c), for the
 * core's own point-to-point users (the parameter servers, train/ps_*.c);
 * NULL before dt_init or in a job of one. */
dt_comm_t *dt_worker_comm(void);
/* The job's failure record (dt/store.h): `rank` failed (how: "error"),
 * as this rank learned from it (a verdict it broadcast), so that dtctl
 * names it rather than whichever rank exited first. First record wins;
 * without a store (a job of one), or on a store error, nothing. */
void dt_worker_record_failure(int rank, const char *how);

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
/* Frees scratch, stage and the host's segment; not the transport. */
void dt_comm_release(dt_comm_t *c);

/* How an allreduce on memory of kind mem runs (coll_mem.c). */
typedef enum dt_mem_path {
    DT_PATH_HOST,   /* host buffers: dt_coll_allreduce as ever            */
    DT_PATH_DEVICE, /* device buffers straight to the transport's native
                       allreduce (it reports DT_CAP_CUDA_MEM); staged if
                       it declines the call                              */
    DT_PATH_STAGE   /* device buffers copied to host memory, reduced by
                       dt_coll_allreduce, copied back                    */
} dt_mem_path_t;
/* The decision alone, from the cached caps and whether the transport has
 * a native allreduce. */
dt_mem_path_t dt_coll_mem_path(uint32_t caps, int native_allreduce,
                               dt_mem_t mem);
/* The path a DT_MEM_CUDA allreduce takes on comm c (NULL: no comm, a job
 * of one): DT_PATH_DEVICE when c's transport reads device memory. */
dt_mem_path_t dt_comm_device_path(const dt_comm_t *c);
/* Allreduce on buffers of kind mem, ordered after the work queued on
 * stream (a cudaStream_t for DT_MEM_CUDA; NULL: the default stream).
 * Returns when recv holds the result. */
dt_status_t dt_coll_allreduce_mem(dt_comm_t *c, const void *send,
                                  void *recv, size_t count, dt_dtype_t t,
                                  dt_redop_t op, dt_mem_t mem, void *stream);

/* Section [collectives] (coll_config.c): allreduce_small, allreduce_ring,
 * ring_chunk. */
extern const dt_key_spec_t dt_coll_keys[];
/* Set small_bytes, ring_bytes and chunk_bytes from [collectives] (a core section:
 * every dt_config_t knows it). */
dt_status_t dt_comm_configure(dt_comm_t *c, const dt_config_t *cfg);
/* Every [collectives] value a worker's dt_init would refuse, said with
 * its origin, without a communicator (dt_train_check_config: dtctl says
 * them before any worker starts). */
dt_status_t dt_coll_check_config(const dt_config_t *cfg);
/* [collectives] compression's text to the wire type (DT_FLOAT32: none);
 * DT_ERR_CONFIG, logged, for anything else. */
dt_status_t dt_coll_parse_compression(const char *s, dt_dtype_t *out);

/* Where the ranks are, for the collectives within a host (coll_hosts.c). */
typedef struct dt_comm_hosts_args {
    dt_store_t *store;      /* the job's store                              */
    const char *bind_addr;  /* this rank's transport address: ranks with
                               the same one are on one host                 */
    int local_size;         /* ranks on this host, from the launcher        */
    double timeout;         /* seconds a peer may stay silent               */
    const char *transport;  /* its plugin's name, for c->path; may be NULL  */
} dt_comm_hosts_args_t;
/* Collective over all ranks, after dt_comm_configure. With [collectives]
 * shm = auto and a transport without DT_CAP_NO_SHM: a job on one host runs
 * its host-memory collectives through a shared segment; a job on H >= 2
 * hosts of L >= 2 ranks each runs allreduce hierarchically. Otherwise (or
 * when a rank cannot map the segment) the comm stays on the transport.
 * c->path says which, in words. */
dt_status_t dt_comm_setup_hosts(dt_comm_t *c, const dt_config_t *cfg,
                                const dt_comm_hosts_args_t *a);
void dt_comm_release_hosts(dt_comm_t *c);

/* dst[i] = op(dst[i], src[i]) for n elements (DT_AVG reduces as a sum; the
 * caller scales once at the end with dt_reduce_scale). Vectorized loops. */
dt_status_t dt_reduce_local(void *dst, const void *src, size_t n,
                            dt_dtype_t t, dt_redop_t op);
dt_status_t dt_reduce_scale(void *buf, size_t n, dt_dtype_t t, double f);

#endif /* DT_COLL_H */
