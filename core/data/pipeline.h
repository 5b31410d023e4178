/* pipeline.h — the training input pipeline (internal): loader threads
 * prepare the next batches (gather the sampler's next indices, augment,
 * normalize) while the current step computes.
 *
 * Batches come in the order of the synchronous loop: epoch by epoch, step
 * by step, batch `s` of an epoch holding this rank's shard positions
 * [s * batch, s * batch + batch) of dt_sampler's order for that epoch; the
 * last batch of an epoch may be smaller. The loaders run ahead across
 * epoch boundaries. The contents depend only on (epoch, step) (and the
 * augmentation's per-sample draws), never on timing or the number of
 * loader threads.
 *
 * Ring: `prefetch` batches may be ready ahead of the one the step uses
 * (prefetch + 1 buffers); the batch handed out stays valid until the next
 * dt_pipeline_next or dt_pipeline_seek. threads = 0: no thread, each batch
 * is gathered inside dt_pipeline_next (the synchronous path). */
#ifndef DT_DATA_PIPELINE_H
#define DT_DATA_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/nn.h>
#include <dt/status.h>

#include "augment.h"
#include "dataset.h"

typedef struct dt_pipeline dt_pipeline_t;

typedef struct dt_pipeline_opts {
    size_t batch;            /* samples per batch (this rank)              */
    int rank, world;         /* the sampler's shard                        */
    uint64_t seed;           /* the sampler's shuffle                      */
    uint64_t end_epoch;      /* no batch of this epoch or later (0: none)  */
    int threads;             /* loader threads (0: synchronous)            */
    int prefetch;            /* batches ready ahead (>= 1)                 */
    dt_augment_t aug;        /* disabled: plain gather                     */
    /* Unequal shares ([cluster] work_load): world weights (copied; NULL:
     * equal shares) and the largest batch a rank may get (buffers; 0:
     * batch). Batches then hold this rank's share of each global batch
     * of world x batch samples (data/sampler.h). */
    const double *weights;
    size_t max_batch;
} dt_pipeline_opts_t;

/* One batch: x (count * sample_len floats), y (count labels). */
typedef struct dt_batch {
    const float *x;
    const int32_t *y;
    size_t count;
    size_t global;           /* samples of this step over all ranks        */
    uint64_t epoch, step;
} dt_batch_t;

/* ds is read by the loader threads: it must not change while the pipeline
 * lives. Nothing is loaded before the first dt_pipeline_seek. */
dt_status_t dt_pipeline_new(const dt_dataset_t *ds,
                            const dt_pipeline_opts_t *opts,
                            dt_pipeline_t **out);
/* Start (again) at batch `step` of `epoch`: batches prepared for another
 * position are dropped (after the loaders finish the one in hand). */
dt_status_t dt_pipeline_seek(dt_pipeline_t *p, uint64_t epoch,
                             uint64_t step);
/* The same, where `epoch` starts at position `start` of its order (a job
 * resumed at another world size, data/sampler.h): that epoch has
 * dt_pipeline_steps_from(p, start) batches of this rank's share of the
 * remaining positions; the epochs after it are whole. */
dt_status_t dt_pipeline_seek_from(dt_pipeline_t *p, uint64_t epoch,
                                  size_t start, uint64_t step);
uint64_t dt_pipeline_steps_from(const dt_pipeline_t *p, size_t start);
/* The next batch, waiting for it when it is not ready; *wait_seconds (if
 * not NULL) gets the time waited. An error of a loader is returned here. */
dt_status_t dt_pipeline_next(dt_pipeline_t *p, dt_batch_t *batch,
                             double *wait_seconds);
/* New weights (world entries; NULL: equal shares) from the next seek on,
 * which must follow: batches prepared meanwhile are dropped. Weights with
 * a share above max_batch are DT_ERR_INVALID. */
dt_status_t dt_pipeline_set_shares(dt_pipeline_t *p, const double *weights);
/* Batches per epoch for this rank. */
uint64_t dt_pipeline_steps(const dt_pipeline_t *p);
/* Before the first seek: put the batch buffers in dev's pinned host memory
 * (dt_device_host_alloc), so that the copy of each batch to the device is
 * a DMA rather than a copy out of pageable memory. No-op on cpu. dev must
 * outlive the pipeline (dt_pipeline_free releases the buffers with it). */
dt_status_t dt_pipeline_pin(dt_pipeline_t *p, dt_device_t *dev);
/* Stop and join the threads (a loader in the middle of a batch finishes
 * it first), free everything. NULL: nothing. */
void dt_pipeline_free(dt_pipeline_t *p);

/* [data] loader_threads and prefetch, checked (file:line errors). */
dt_status_t dt_pipeline_opts_from_config(const dt_config_t *cfg,
                                         dt_pipeline_opts_t *opts);

#endif /* DT_DATA_PIPELINE_H */
