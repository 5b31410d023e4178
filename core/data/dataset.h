/* dataset.h — an image classification data set in memory (internal).
 *
 * Samples are kept as the uint8 pixels of the files (a quarter of the
 * memory of floats) and normalized when a batch is gathered:
 *   x = (pixel / 255 - mean[c]) / std[c]
 * Layout of one sample: channels x height x width (CHW), like the files. */
#ifndef DT_DATA_DATASET_H
#define DT_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/status.h>

#define DT_DATASET_MAX_CHANNELS 4

typedef struct dt_dataset {
    size_t n;                 /* number of samples                         */
    int channels, height, width;
    size_t sample_len;        /* channels * height * width                 */
    int nclasses;
    uint8_t *pixels;          /* n * sample_len                            */
    uint8_t *labels;          /* n, each < nclasses                        */
    float mean[DT_DATASET_MAX_CHANNELS];
    float std[DT_DATASET_MAX_CHANNELS];
} dt_dataset_t;

/* Which part of a data set. */
typedef enum dt_split { DT_SPLIT_TRAIN = 0, DT_SPLIT_TEST = 1 } dt_split_t;

/* An images file and a labels file in IDX format (MNIST, Fashion-MNIST):
 * images U8 n x h x w, labels U8 n, each label < nclasses. */
dt_status_t dt_dataset_load_idx(const char *images_path,
                                const char *labels_path, int nclasses,
                                dt_dataset_t *out);

/* CIFAR-10 binary batch files: records of 1 label byte + 3072 pixel bytes
 * (3 x 32 x 32). The files are concatenated in order. */
dt_status_t dt_dataset_load_cifar10(const char *const *paths, size_t npaths,
                                    dt_dataset_t *out);

/* The split of the data set the configuration names: [data] dataset
 * (fashion-mnist, mnist, cifar10), path (directory), mean/std, and
 * train_samples/test_samples (keep only the first N; 0: all). Files are
 * found under path by their usual names, plain or .gz. */
dt_status_t dt_dataset_load(const dt_config_t *cfg, dt_split_t split,
                            dt_dataset_t *out);

/* Normalization constants: one value for every channel, or one per
 * channel. Errors name what is wrong (std must be > 0). */
dt_status_t dt_dataset_set_norm(dt_dataset_t *ds, const float *mean,
                                size_t nmean, const float *std, size_t nstd);

/* Keep only the first n samples (n >= ds->n: no change). */
void dt_dataset_truncate(dt_dataset_t *ds, size_t n);

/* Gather samples idx[0..count) normalized into x (count * sample_len
 * floats) and their labels into y. */
void dt_dataset_gather(const dt_dataset_t *ds, const size_t *idx,
                       size_t count, float *x, int32_t *y);

void dt_dataset_free(dt_dataset_t *ds);

#endif /* DT_DATA_DATASET_H */
