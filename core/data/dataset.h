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
    /* The image folder's sources (NULL for the other data sets): the file
     * each sample was decoded from (npaths of them, in sample order; kept
     * when the set is truncated) and the class names, labels 0.. in order.
     * For decoding again (dt_image_decode, data/image_decode.h), e.g. in
     * loader threads. dt_dataset_free frees them. */
    char **paths;
    size_t npaths;
    char **class_names;       /* nclasses of them                          */
    /* decode = loader: pixels is NULL and every gather decodes its samples
     * from paths (dt_dataset_sample); nothing is decoded when loading. */
    int decode_on_gather;
    /* Samples stored class by class (an image folder): a subset
     * (dt_dataset_truncate) is spread over the list, not its head. */
    int by_class;
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

/* CIFAR-100 binary files (train.bin, test.bin): records of 2 label bytes
 * (coarse 0..19, fine 0..99) + 3072 pixel bytes. `coarse` picks the 20
 * superclasses as labels instead of the 100 fine classes. */
dt_status_t dt_dataset_load_cifar100(const char *const *paths, size_t npaths,
                                     int coarse, dt_dataset_t *out);

/* STL-10 binary files (train_X.bin + train_y.bin, test_X.bin +
 * test_y.bin): images of 3 x 96 x 96 bytes, each channel stored
 * column-major (pixel (c, y, x) at c*9216 + x*96 + y), turned into the
 * usual row-major CHW here; labels one byte 1..10, stored here as 0..9. */
dt_status_t dt_dataset_load_stl10(const char *images_path,
                                  const char *labels_path, dt_dataset_t *out);

/* What an image folder's samples become (data/image_decode.h). */
typedef struct dt_folder_opts {
    int channels;      /* 1 or 3                                         */
    int height, width; /* every image is center-cropped and resized to it */
    int skip_bad;      /* unreadable/corrupt images: 1 skip, 0 error     */
    int lazy;          /* 1: list the files only; gathers decode them
                        * (decode = loader; needs skip_bad = 0)          */
} dt_folder_opts_t;

/* An image folder: dir/train/<class>/<image> or dir/test/<class>/<image>
 * (.png, .jpg, .jpeg). Classes are train/'s subfolders sorted by name
 * (bytewise), labels 0.. in that order, for both splits; test/ may lack a
 * class but has no class of its own. Every image is decoded now (the
 * decoded cache: out->pixels), or with opts->lazy only listed (pixels
 * NULL, decode_on_gather set: each gather decodes its samples, in the
 * loader threads for training); out->paths keeps where each came from. An
 * empty class folder, a broken link (or link loop) among the class
 * folders, a folder without images and (with skip_bad = 0) an unreadable
 * image, a named pipe included, are errors naming the path (with lazy:
 * when a gather meets it). */
dt_status_t dt_dataset_load_folder(const char *dir, dt_split_t split,
                                   const dt_folder_opts_t *opts,
                                   dt_dataset_t *out);

/* The split of the data set the configuration names: [data] dataset
 * (fashion-mnist, mnist, cifar10, cifar100, stl10, folder), path
 * (directory), mean/std, train_samples/test_samples (keep only N: the
 * first N, or for a folder N spread over its classes; 0: all), and per data set cifar100_labels (fine, coarse), channels,
 * image_size, bad_images and decode (load, loader) (folder). Files are found under path by their
 * usual names, plain or .gz. Errors are logged: DT_ERR_INVALID for data
 * found but wrong (a format, a layout, a content every reading meets
 * again), DT_ERR_CONFIG for a wrong key, DT_ERR_NOT_FOUND and DT_ERR_IO
 * for data missing or unreadable (storage not mounted yet: may pass). */
dt_status_t dt_dataset_load(const dt_config_t *cfg, dt_split_t split,
                            dt_dataset_t *out);

/* [data] mean, std, train_samples and test_samples, channels, and a
 * folder's image_size, bad_images and decode as the workers will read
 * them, each error with its file:line: what dtctl checks before any
 * worker starts (dt_train_check_config). The channel count of a built-in
 * data set, or of a folder's [data] channels, bounds mean and std. */
dt_status_t dt_dataset_check_config(const dt_config_t *cfg);

/* The images' shape (C, H, W) the configuration gives: a built-in data
 * set's own, a folder's [data] channels and image_size. DT_ERR_NOT_FOUND
 * when it does not say (another dataset, image_size unset or invalid);
 * logs nothing. */
dt_status_t dt_dataset_config_shape(const dt_config_t *cfg, int shape[3]);

/* Normalization constants: one value for every channel, or one per
 * channel. Errors name what is wrong (std must be > 0). */
dt_status_t dt_dataset_set_norm(dt_dataset_t *ds, const float *mean,
                                size_t nmean, const float *std, size_t nstd);

/* Keep only n samples (n >= ds->n: no change): the first n, or, for a
 * set stored class by class (by_class), samples floor(k * ds->n / n) for
 * k = 0..n-1, so that every class keeps its share; labels, pixels and
 * paths stay together. */
void dt_dataset_truncate(dt_dataset_t *ds, size_t n);

/* Sample i's pixels (sample_len bytes, CHW): *px points into the decoded
 * cache, or (decode_on_gather) at buf, which receives the image decoded
 * from its file. A file that cannot be decoded is logged with its path:
 * DT_ERR_BAD_DATA when its bytes are wrong (every reading meets them
 * again), DT_ERR_IO or DT_ERR_NOT_FOUND when the system failed the read
 * or the file is gone (may pass), ... Thread-safe. */
dt_status_t dt_dataset_sample(const dt_dataset_t *ds, size_t i, uint8_t *buf,
                              const uint8_t **px);

/* Gather samples idx[0..count) normalized into x (count * sample_len
 * floats) and their labels into y. Fails only when decoding on gather
 * (an unreadable image, named in the log; dt_dataset_sample's status). */
dt_status_t dt_dataset_gather(const dt_dataset_t *ds, const size_t *idx,
                              size_t count, float *x, int32_t *y);

/* One sample's pixels (sample_len bytes, CHW) normalized into x
 * (sample_len floats): what dt_dataset_gather does per sample. */
void dt_dataset_normalize(const dt_dataset_t *ds, const uint8_t *pixels,
                          float *x);

/* A 64-bit digest (FNV-1a) of what must agree across ranks beyond the
 * counts: n, nclasses, the labels in sample order and, for an image
 * folder, the class names and the files' names (not their directories),
 * chained onto h (0: start afresh). Not the pixels (reading them all
 * would cost real time at start). */
uint64_t dt_dataset_digest(const dt_dataset_t *ds, uint64_t h);

/* An image folder's class-to-label mapping for the log, e.g. "labels are
 * train/'s class folders in byte order: 0 'Zebra', 1 'apple'; no test
 * samples of 1 of them (not evaluated): 1 'apple'" (test may be NULL).
 * NULL for a data set without class names or out of memory; free() it. */
char *dt_dataset_class_list(const dt_dataset_t *train,
                            const dt_dataset_t *test);

void dt_dataset_free(dt_dataset_t *ds);

/* The directory a worker reads for the data set path p ([data] path, or
 * DT_DATA_PATH from dtctl: staging's destination, which may hold "{host}",
 * [storage.rsync] dst = /x/{host}): "{host}" replaced by $DT_HOST, and an
 * interrupted copy (its in-progress mark) refused with the path named.
 * malloc'd into *path (staging.c). */
dt_status_t dt_data_dir_resolve(const char *p, char **path);

#endif /* DT_DATA_DATASET_H */
