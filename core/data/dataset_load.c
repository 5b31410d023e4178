/* dataset_load.c — find and load the data set the [data] section names. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "dataset.h"

/* Where Debian's dataset-fashion-mnist package puts the files. */
#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* The first of dir/name{,.gz} and the dotted variant that exists. */
static dt_status_t find_file(const char *dir, const char *name, char *buf,
                             size_t len)
{
    static const char *const suffix[] = {"", ".gz"};
    char dotted[128];
    snprintf(dotted, sizeof dotted, "%s", name);
    char *dash = strrchr(dotted, '-');
    /* "train-images-idx3-ubyte" is also shipped as "train-images.idx3-ubyte" */
    dash = dash ? memrchr(dotted, '-', (size_t)(dash - dotted)) : NULL;
    if (dash)
        *dash = '.';
    const char *names[] = {name, dotted};
    for (size_t n = 0; n < 2; n++)
        for (size_t s = 0; s < 2; s++) {
            snprintf(buf, len, "%s/%s%s", dir, names[n], suffix[s]);
            if (access(buf, R_OK) == 0)
                return DT_OK;
        }
    dt_error("[data] path %s: no %s or %s.gz there; set [data] path to the "
             "directory holding the data set (Fashion-MNIST: apt-get install "
             "dataset-fashion-mnist, files in %s)", dir, name, name,
             FASHION_MNIST_DIR);
    return DT_ERR_NOT_FOUND;
}

static dt_status_t load_idx_split(const char *dir, dt_split_t split,
                                  dt_dataset_t *out)
{
    const char *prefix = split == DT_SPLIT_TRAIN ? "train" : "t10k";
    char name[64], images[4096], labels[4096];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    DT_CHECK(find_file(dir, name, images, sizeof images));
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    DT_CHECK(find_file(dir, name, labels, sizeof labels));
    return dt_dataset_load_idx(images, labels, 10, out);
}

static dt_status_t load_cifar_split(const char *dir, dt_split_t split,
                                    dt_dataset_t *out)
{
    char bufs[5][4096];
    const char *paths[5];
    size_t n = split == DT_SPLIT_TRAIN ? 5 : 1;
    /* The archive unpacks into cifar-10-batches-bin/; accept either. */
    const char *sub[] = {"", "/cifar-10-batches-bin"};
    for (size_t s = 0; s < 2; s++) {
        size_t found = 0;
        for (size_t i = 0; i < n; i++) {
            if (split == DT_SPLIT_TRAIN)
                snprintf(bufs[i], sizeof bufs[i], "%s%s/data_batch_%zu.bin",
                         dir, sub[s], i + 1);
            else
                snprintf(bufs[i], sizeof bufs[i], "%s%s/test_batch.bin", dir,
                         sub[s]);
            paths[i] = bufs[i];
            found += access(bufs[i], R_OK) == 0;
        }
        if (found == n)
            return dt_dataset_load_cifar10(paths, n, out);
        if (found > 0) {
            for (size_t i = 0; i < n; i++)
                if (access(bufs[i], R_OK) != 0)
                    dt_error("%s: missing (%s): the CIFAR-10 directory is "
                             "incomplete", bufs[i], strerror(errno));
            return DT_ERR_NOT_FOUND;
        }
    }
    dt_error("[data] path %s: no CIFAR-10 binary files (%s) there or in "
             "cifar-10-batches-bin/", dir,
             split == DT_SPLIT_TRAIN ? "data_batch_1.bin .. data_batch_5.bin"
                                     : "test_batch.bin");
    return DT_ERR_NOT_FOUND;
}

/* A list of floats from a [data] key. */
static dt_status_t get_floats(const dt_config_t *cfg, const char *key,
                              float *vals, size_t max, size_t *n)
{
    char **items = NULL;
    size_t count = 0;
    *n = 0;
    dt_status_t st = dt_config_get_list(cfg, "data", key, &items, &count);
    if (st == DT_ERR_NOT_FOUND)
        return DT_OK;
    if (st != DT_OK)
        return st;
    const char *where = "";
    dt_config_origin(cfg, "data", key, NULL, &where);
    st = DT_OK;
    if (count > max) {
        dt_error("%s: [data] %s has %zu values; at most %zu (one per "
                 "channel)", where, key, count, max);
        st = DT_ERR_CONFIG;
    }
    for (size_t i = 0; st == DT_OK && i < count; i++) {
        char *end;
        errno = 0;
        vals[i] = strtof(items[i], &end);
        if (errno || end == items[i] || *end) {
            dt_error("%s: [data] %s: '%s' is not a number", where, key,
                     items[i]);
            st = DT_ERR_CONFIG;
        }
    }
    if (st == DT_OK)
        *n = count;
    dt_strv_free(items);
    return st;
}

static dt_status_t apply_config(const dt_config_t *cfg, dt_split_t split,
                                dt_dataset_t *ds)
{
    float mean[DT_DATASET_MAX_CHANNELS], std[DT_DATASET_MAX_CHANNELS];
    size_t nmean, nstd;
    DT_CHECK(get_floats(cfg, "mean", mean, DT_DATASET_MAX_CHANNELS, &nmean));
    DT_CHECK(get_floats(cfg, "std", std, DT_DATASET_MAX_CHANNELS, &nstd));
    if (nmean == 0) {
        mean[0] = 0.0f;
        nmean = 1;
    }
    if (nstd == 0) {
        std[0] = 1.0f;
        nstd = 1;
    }
    DT_CHECK(dt_dataset_set_norm(ds, mean, nmean, std, nstd));
    long long limit = 0;
    const char *key = split == DT_SPLIT_TRAIN ? "train_samples"
                                              : "test_samples";
    dt_status_t st = dt_config_get_int(cfg, "data", key, &limit);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    if (limit < 0) {
        dt_error("[data] %s must be 0 (all) or a positive count, not %lld",
                 key, limit);
        return DT_ERR_CONFIG;
    }
    if (limit > 0)
        dt_dataset_truncate(ds, (size_t)limit);
    return DT_OK;
}

dt_status_t dt_dataset_load(const dt_config_t *cfg, dt_split_t split,
                            dt_dataset_t *out)
{
    const char *kind = "fashion-mnist", *dir = NULL;
    memset(out, 0, sizeof *out);
    dt_status_t st = dt_config_get_string(cfg, "data", "dataset", &kind);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    st = dt_config_get_string(cfg, "data", "path", &dir);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    int is_fashion = strcmp(kind, "fashion-mnist") == 0;
    if (!dir || !*dir) {
        if (!is_fashion) {
            dt_error("[data] path is not set: name the directory holding "
                     "the %s files", kind);
            return DT_ERR_CONFIG;
        }
        dir = FASHION_MNIST_DIR;
    }
    if (is_fashion || strcmp(kind, "mnist") == 0)
        st = load_idx_split(dir, split, out);
    else if (strcmp(kind, "cifar10") == 0)
        st = load_cifar_split(dir, split, out);
    else {
        dt_error("[data] dataset '%s' is not known; use fashion-mnist, mnist "
                 "or cifar10", kind);
        return DT_ERR_CONFIG;
    }
    if (st == DT_OK && (st = apply_config(cfg, split, out)) != DT_OK)
        dt_dataset_free(out);
    return st;
}
