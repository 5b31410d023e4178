/* nccl_tp.h — the nccl transport's internal state (not installed; not
 * named nccl.h, which is NCCL's own header).
 *
 * One NCCL communicator per job, created without blocking from the
 * ncclUniqueId rank 0 publishes in the rendezvous store; one CUDA stream
 * per worker. Every wait polls the stream and ncclCommGetAsyncError with a
 * deadline and sleeps between polls, so a dead peer becomes an error (the
 * store tells which rank stopped answering) instead of a hang. */
#ifndef DT_NCCL_TP_H
#define DT_NCCL_TP_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dt/plugin.h>
#include <dt/store.h>
#include <dt/clock.h>

typedef struct nccl_ctx nccl_ctx_t;

/* A point-to-point operation; posted ones start together (one NCCL group)
 * at the next test or wait, so any order of isend/irecv is safe. */
/* A device buffer and a pinned host bounce buffer of cap bytes, for a
 * point-to-point request on host memory; kept in the ctx's free list and
 * reused (cudaMalloc/cudaFree synchronize the device). */
typedef struct nccl_buf {
    void *dev, *host;
    size_t cap;
    struct nccl_buf *next;
} nccl_buf_t;

struct dt_request {
    int is_recv, peer, launched;
    void *user;          /* caller's buffer                               */
    void *dev;           /* device buffer NCCL uses (staging for host)    */
    nccl_buf_t *buf;     /* host memory: the staging pair (dev, host)     */
    size_t len;
    dt_mem_t mem;
    cudaEvent_t done;    /* recorded after the operation (and its copy)   */
    struct dt_request *next; /* posted, not yet launched                  */
};

struct nccl_ctx {
    int rank, size, device;
    double timeout;
    dt_store_t *store;
    long long epoch;
    unsigned long long seq;  /* collectives issued: names a hang's place  */
    ncclComm_t comm;
    cudaStream_t stream;
    void *stage;             /* device staging for host buffers (grows
                                geometrically, never per call)           */
    size_t stage_len;
    void *hstage;            /* pinned bounce for host buffers: copies
                                device to host land here and are waited
                                for under the deadline (a copy into
                                pageable memory blocks inside CUDA)       */
    size_t hstage_len;
    nccl_buf_t *free_bufs;   /* p2p staging pairs, reusable              */
    struct dt_request *posted, **posted_tail;
    dt_status_t failed;      /* sticky */
    int bf16;                /* [collectives] compression = bf16         */
    int warned_fp16, warned_cuda; /* said once: fp16 / no kernels        */
    uint16_t *hhalf;         /* host bf16 image (host buffers), pinned   */
    size_t hhalf_len;
    void *dhalf;             /* device bf16 buffer                        */
    size_t dhalf_len;
};

/* nccl_half.cu (DT_NCCL_KERNELS): round-to-nearest-even conversions on
 * the stream. */
cudaError_t nccl_f32_to_bf16(const float *src, void *dst, size_t n,
                             cudaStream_t s);
cudaError_t nccl_bf16_to_f32(const void *src, float *dst, size_t n,
                             cudaStream_t s);

/* nccl_env.c: [transport.nccl] keys to NCCL_* variables. */
dt_status_t nccl_apply_env(const dt_config_t *cfg,
                           const dt_transport_args_t *a);

/* nccl_comm.c: communicator setup, bounded waits, failure naming. */
dt_status_t nccl_comm_open(nccl_ctx_t *c, const dt_transport_args_t *a);
/* Teardown: ncclCommFinalize, polled under the deadline, then
 * ncclCommDestroy; ncclCommAbort after a failure or on timeout. */
void nccl_comm_close(nccl_ctx_t *c);
/* Every entry point that may run on another thread (the trainer's
 * gradient thread) starts here: cudaSetDevice is per thread, and without
 * it the calls would run on GPU 0. Returns c->failed or a CUDA error. */
dt_status_t nccl_enter(nccl_ctx_t *c);
/* At least need bytes of device memory (grown geometrically), or of
 * pinned host memory; *buf and *len updated. */
dt_status_t nccl_grow_device(nccl_ctx_t *c, void **buf, size_t *len,
                             size_t need, const char *what);
dt_status_t nccl_grow_pinned(nccl_ctx_t *c, void **buf, size_t *len,
                             size_t need, const char *what);
/* Wait for everything on the stream; on error or timeout (seconds of no
 * completion) abort the communicator and name the ranks that stopped. */
dt_status_t nccl_sync(nccl_ctx_t *c, cudaStream_t s, const char *what);
/* Abort the communicator after r (an error, or ncclSuccess/ncclInProgress
 * for "no progress within the timeout"), naming the ranks that stopped. */
dt_status_t nccl_give_up(nccl_ctx_t *c, const char *what, const char *phase,
                         ncclResult_t r);
/* A call returned r: ncclInProgress waits for it like nccl_sync. */
dt_status_t nccl_check(nccl_ctx_t *c, ncclResult_t r, const char *what);
dt_status_t nccl_cuda_check(nccl_ctx_t *c, cudaError_t e, const char *what);
void nccl_nap(int *round);

/* nccl_coll.c: native collectives (host buffers staged through device). */
dt_status_t nccl_allreduce(void *ctx, const void *send, void *recv,
                           size_t count, dt_dtype_t t, dt_redop_t op,
                           dt_mem_t mem, void *stream);
dt_status_t nccl_broadcast(void *ctx, void *buf, size_t count, dt_dtype_t t,
                           int root, dt_mem_t mem, void *stream);
dt_status_t nccl_allgather(void *ctx, const void *send, void *recv,
                           size_t count_per_rank, dt_dtype_t t, dt_mem_t mem,
                           void *stream);
dt_status_t nccl_reduce_scatter(void *ctx, const void *send, void *recv,
                                size_t count_per_rank, dt_dtype_t t,
                                dt_redop_t op, dt_mem_t mem, void *stream);
dt_status_t nccl_barrier(void *ctx);

/* nccl_p2p.c: isend/irecv/test/wait. */
dt_status_t nccl_isend(void *ctx, int peer, const void *buf, size_t len,
                       dt_mem_t mem, int tag, dt_request_t **req);
dt_status_t nccl_irecv(void *ctx, int peer, void *buf, size_t len,
                       dt_mem_t mem, int tag, dt_request_t **req);
dt_status_t nccl_test(void *ctx, dt_request_t *req, int *done);
dt_status_t nccl_wait(void *ctx, dt_request_t **reqs, size_t n,
                      int timeout_ms);
void nccl_free_posted(nccl_ctx_t *c);
/* Frees the p2p staging pairs (fini). */
void nccl_free_bufs(nccl_ctx_t *c);

#endif /* DT_NCCL_TP_H */
