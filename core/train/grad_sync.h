/* grad_sync.h — bucketed gradient averaging that overlaps backward
 * (internal to the trainer).
 *
 * The model reports finished gradient ranges during backward, from the end
 * of the flat buffer towards its start. Ranges are gathered into buckets
 * of at least `bucket_bytes`; each full bucket is handed at once to a
 * communication thread that averages it over all ranks (dt_allreduce
 * DT_AVG) while backward goes on with earlier layers. Bucket boundaries
 * follow the layers, so they are the same on every rank and every step:
 * collectives stay matched.
 *
 * Gradients in device memory (cuda) take one of two paths, chosen once
 * from the transport's caps (dt_allreduce_mem, coll_mem.c):
 * - the transport reads device memory (nccl): each bucket is reduced in
 *   place in device memory. When a bucket is final, an event is recorded
 *   on the compute stream (after the kernels that wrote it, and the
 *   unequal-shares scaling); the collectives' own stream waits for that
 *   event (cudaStreamWaitEvent, no host wait) and the transport reduces
 *   on it. No gradient byte crosses to the host (dt_grad_sync_d2h_copies
 *   is 0). At the end the compute stream waits for the reductions.
 * - otherwise (tcp, ucx, ...): each bucket, once final, is copied device
 *   to pinned host memory on a copy stream, overlapped with the rest of
 *   backward; the communication thread waits for that copy's event,
 *   averages the bucket on the host and the whole buffer goes back to the
 *   device once, queued on the compute stream. One device-to-host copy
 *   per bucket.
 * The model does not synchronize the device per layer: the event is the
 * only ordering (dt_grad_ready_fn, dt/nn.h).
 *
 * Only the communication thread calls collectives between the first
 * dt_grad_sync_ready() of a step and dt_grad_sync_finish(); batchnorm's
 * sync_bn sums go through it too (dt_grad_sync_sum). */
#ifndef DT_GRAD_SYNC_H
#define DT_GRAD_SYNC_H

#include <stddef.h>
#include <dt/nn.h>
#include <dt/status.h>
#include <dt/types.h>

typedef struct dt_grad_sync dt_grad_sync_t;

/* grads: n floats on dev (NULL dev or host memory: in place). world 1:
 * nothing is communicated and no thread is started. */
dt_status_t dt_grad_sync_new(float *grads, size_t n, dt_device_t *dev,
                             size_t bucket_bytes, int world,
                             dt_grad_sync_t **out);

/* Who reduces the buckets: dt_grad_sync_new uses the job's transport
 * (dt_allreduce_mem); tests hand in their own. */
typedef struct dt_grad_sync_comm {
    /* dt_allreduce_mem with an argument: returns once recv holds the
     * result; for DT_MEM_CUDA ordered after the work queued on stream. */
    dt_status_t (*allreduce)(void *arg, const void *send, void *recv,
                             size_t count, dt_dtype_t t, dt_redop_t op,
                             dt_mem_t mem, void *stream);
    void *arg;
    /* 1: allreduce takes device memory in place (the transport's caps
     * report DT_CAP_CUDA_MEM and it has a native allreduce). */
    int device_mem;
} dt_grad_sync_comm_t;

dt_status_t dt_grad_sync_new_comm(float *grads, size_t n, dt_device_t *dev,
                                  size_t bucket_bytes, int world,
                                  const dt_grad_sync_comm_t *comm,
                                  dt_grad_sync_t **out);

/* A dt_grad_ready_fn: arg is the dt_grad_sync_t. */
dt_status_t dt_grad_sync_ready(void *arg, size_t offset, size_t len);

/* A dt_model_allreduce_fn (sync_bn): sum n doubles at buf in place over
 * every rank, through the communication thread's queue, after the buckets
 * queued before it (so every rank issues the same collectives in the same
 * order even while backward hands over buckets); returns once buf holds
 * the sums. arg is the dt_grad_sync_t. world 1: nothing to do. */
dt_status_t dt_grad_sync_sum(void *arg, double *buf, size_t n);

/* End of backward: send what is left, wait for every bucket, and leave
 * the averaged gradients in the gradient buffer. *wait_seconds: time spent
 * waiting here (communication not hidden behind backward). */
dt_status_t dt_grad_sync_finish(dt_grad_sync_t *s, double *wait_seconds);
/* Unequal shares ([cluster] work_load): from the next step on, each rank's
 * gradient (the mean over its own b_r samples) is multiplied by scale =
 * b_r / B (B: the step's samples over all ranks) and summed over the ranks
 * (DT_SUM instead of DT_AVG), which gives the mean over the global batch.
 * scale <= 0: the plain average (equal shares; the default). Before the
 * step's first dt_grad_sync_ready. */
void dt_grad_sync_set_scale(dt_grad_sync_t *s, double scale);

/* Number of buckets the last step used (for logs and tests). */
size_t dt_grad_sync_buckets(const dt_grad_sync_t *s);
/* Gradient copies device to host in the last step: 0 on cpu and for a
 * transport that reads device memory; one per bucket otherwise. */
size_t dt_grad_sync_d2h_copies(const dt_grad_sync_t *s);
/* Which path the gradients take, in words (for the log). */
const char *dt_grad_sync_path(const dt_grad_sync_t *s);

void dt_grad_sync_free(dt_grad_sync_t *s);

#endif /* DT_GRAD_SYNC_H */
