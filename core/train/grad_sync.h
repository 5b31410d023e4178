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
 * Gradients in device memory (cuda) are copied into a pinned host buffer
 * as each range becomes ready, averaged there, and copied back once at the
 * end: the transport only reads host memory.
 *
 * Only the communication thread calls collectives between the first
 * dt_grad_sync_ready() of a step and dt_grad_sync_finish(); batchnorm's
 * sync_bn sums go through it too (dt_grad_sync_sum). */
#ifndef DT_GRAD_SYNC_H
#define DT_GRAD_SYNC_H

#include <stddef.h>
#include <dt/nn.h>
#include <dt/status.h>

typedef struct dt_grad_sync dt_grad_sync_t;

/* grads: n floats on dev (NULL dev or host memory: in place). world 1:
 * nothing is communicated and no thread is started. */
dt_status_t dt_grad_sync_new(float *grads, size_t n, dt_device_t *dev,
                             size_t bucket_bytes, int world,
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

void dt_grad_sync_free(dt_grad_sync_t *s);

#endif /* DT_GRAD_SYNC_H */
