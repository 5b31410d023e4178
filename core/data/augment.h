/* augment.h — random crop and horizontal flip of training images
 * (internal).
 *
 * Deterministic per sample: the random choices of sample `index` in epoch
 * `epoch` are a counter-based hash (splitmix64) of (seed, epoch, index),
 * so a run is reproducible, and any number of workers, loader threads or
 * ranks sees the same augmented pixels for the same sample and epoch.
 *
 * Applied to the uint8 pixels (CHW) before normalization, as torchvision's
 * RandomCrop(padding=P) + RandomHorizontalFlip before ToTensor/Normalize:
 * padding pixels are 0 (and so normalize to -mean/std). */
#ifndef DT_DATA_AUGMENT_H
#define DT_DATA_AUGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/status.h>

#include "dataset.h"

typedef struct dt_augment {
    int crop_pad;      /* random_crop = P: pad by P, crop back (0: off)    */
    bool hflip;        /* flip left-right with probability 1/2             */
    uint64_t seed;
} dt_augment_t;

/* The choices for one sample: crop offset (0..2P each) and the flip. */
typedef struct dt_augment_draw {
    int dy, dx;
    bool flip;
} dt_augment_draw_t;

static inline bool dt_augment_enabled(const dt_augment_t *a)
{
    return a && (a->crop_pad > 0 || a->hflip);
}

/* [data] random_crop and hflip for the training set ds (its C,H,W);
 * errors name the job file's line. Both off: *out disabled. ds NULL: the
 * values only (before the data is loaded). */
dt_status_t dt_augment_from_config(const dt_config_t *cfg,
                                   const dt_dataset_t *ds, uint64_t seed,
                                   dt_augment_t *out);

/* [data] random_crop and hflip against the images' shape the job file
 * gives (C, H, W; NULL: the values only): what dtctl checks before any
 * worker starts, with the same messages and lines as
 * dt_augment_from_config. */
dt_status_t dt_augment_check_config(const dt_config_t *cfg,
                                    const int shape[3]);

dt_augment_draw_t dt_augment_draw(const dt_augment_t *a, uint64_t epoch,
                                  size_t index);

/* One sample: src -> dst (both channels x height x width bytes, distinct
 * buffers), the crop at (dy, dx) of the zero-padded image, then the flip. */
void dt_augment_apply(const dt_augment_draw_t *d, int pad, int channels,
                      int height, int width, const uint8_t *src,
                      uint8_t *dst);

/* dt_dataset_gather with augmentation of every sample (a NULL or disabled
 * aug: exactly dt_dataset_gather). scratch: ds->sample_len bytes. Fails
 * only when the data set decodes on gather and an image cannot be read. */
dt_status_t dt_augment_gather(const dt_dataset_t *ds, const dt_augment_t *aug,
                              uint64_t epoch, const size_t *idx,
                              size_t count, uint8_t *scratch, float *x,
                              int32_t *y);

#endif /* DT_DATA_AUGMENT_H */
