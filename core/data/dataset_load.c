/* dataset_load.c — find and load the data set the [data] section names. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
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

/* dir/name, else dir/name.gz (into buf); 0 when neither exists (buf then
 * holds the plain name, for the message). */
static int find_plain_or_gz(const char *dir, const char *name, char *buf,
                            size_t len)
{
    snprintf(buf, len, "%s/%s.gz", dir, name);
    int gz = access(buf, R_OK) == 0;
    snprintf(buf, len, "%s/%s", dir, name);
    if (access(buf, R_OK) == 0)
        return 1;
    if (gz)
        snprintf(buf, len, "%s/%s.gz", dir, name);
    return gz;
}

static dt_status_t load_cifar_split(const char *dir, dt_split_t split,
                                    dt_dataset_t *out)
{
    char bufs[5][4096], base[4032], name[32]; /* base/name.gz fits */
    const char *paths[5];
    size_t n = split == DT_SPLIT_TRAIN ? 5 : 1;
    /* The archive unpacks into cifar-10-batches-bin/; accept either. */
    const char *sub[] = {"", "/cifar-10-batches-bin"};
    for (size_t s = 0; s < 2; s++) {
        size_t found = 0;
        int have[5];
        snprintf(base, sizeof base, "%s%s", dir, sub[s]);
        for (size_t i = 0; i < n; i++) {
            if (split == DT_SPLIT_TRAIN)
                snprintf(name, sizeof name, "data_batch_%zu.bin", i + 1);
            else
                snprintf(name, sizeof name, "test_batch.bin");
            have[i] = find_plain_or_gz(base, name, bufs[i], sizeof bufs[i]);
            paths[i] = bufs[i];
            found += (size_t)have[i];
        }
        if (found == n)
            return dt_dataset_load_cifar10(paths, n, out);
        if (found > 0) {
            for (size_t i = 0; i < n; i++)
                if (!have[i])
                    dt_error("%s (or .gz): missing: the CIFAR-10 "
                             "directory is incomplete", bufs[i]);
            return DT_ERR_NOT_FOUND;
        }
    }
    dt_error("[data] path %s: no CIFAR-10 binary files (%s, plain or .gz) "
             "there or in cifar-10-batches-bin/", dir,
             split == DT_SPLIT_TRAIN ? "data_batch_1.bin .. data_batch_5.bin"
                                     : "test_batch.bin");
    return DT_ERR_NOT_FOUND;
}

/* dir/name or dir/sub/name, whichever exists (plain or .gz); NULL in
 * buf when neither. */
static int find_in(const char *dir, const char *sub, const char *name,
                   char *buf, size_t len)
{
    const char *subs[] = {"", sub};
    static const char *const suffix[] = {"", ".gz"};
    for (size_t s = 0; s < 2; s++)
        for (size_t z = 0; z < 2; z++) {
            snprintf(buf, len, "%s%s%s/%s%s", dir, s ? "/" : "", subs[s],
                     name, suffix[z]);
            if (access(buf, R_OK) == 0)
                return 1;
        }
    buf[0] = 0;
    return 0;
}

static dt_status_t load_cifar100_split(const dt_config_t *cfg,
                                       const char *dir, dt_split_t split,
                                       dt_dataset_t *out)
{
    const char *which = "fine";
    dt_status_t st = dt_config_get_string(cfg, "data", "cifar100_labels",
                                          &which);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    if (strcmp(which, "fine") != 0 && strcmp(which, "coarse") != 0) {
        dt_error("[data] cifar100_labels = '%s': use fine (100 classes) or "
                 "coarse (20 superclasses)", which);
        return DT_ERR_CONFIG;
    }
    const char *name = split == DT_SPLIT_TRAIN ? "train.bin" : "test.bin";
    char path[4096];
    if (!find_in(dir, "cifar-100-binary", name, path, sizeof path)) {
        dt_error("[data] path %s: no CIFAR-100 binary file %s there or in "
                 "cifar-100-binary/", dir, name);
        return DT_ERR_NOT_FOUND;
    }
    const char *paths[1] = {path};
    return dt_dataset_load_cifar100(paths, 1, strcmp(which, "coarse") == 0,
                                    out);
}

static dt_status_t load_stl10_split(const char *dir, dt_split_t split,
                                    dt_dataset_t *out)
{
    const char *pre = split == DT_SPLIT_TRAIN ? "train" : "test";
    char xname[32], yname[32], x[4096], y[4096];
    snprintf(xname, sizeof xname, "%s_X.bin", pre);
    snprintf(yname, sizeof yname, "%s_y.bin", pre);
    int hx = find_in(dir, "stl10_binary", xname, x, sizeof x);
    int hy = find_in(dir, "stl10_binary", yname, y, sizeof y);
    if (!hx || !hy) {
        dt_error("[data] path %s: no STL-10 binary file %s there or in "
                 "stl10_binary/", dir, !hx ? xname : yname);
        return DT_ERR_NOT_FOUND;
    }
    return dt_dataset_load_stl10(x, y, out);
}

static const char *origin(const dt_config_t *cfg, const char *key)
{
    const char *where = "default";
    dt_config_origin(cfg, "data", key, NULL, &where);
    return where;
}

/* "N" (N x N) or "HxW", each 1..16384; 0 when it is neither. */
static int parse_image_size(const char *v, int *h, int *w)
{
    char *end;
    errno = 0;
    long a = strtol(v, &end, 10), b = a;
    if (!errno && end != v && (*end == 'x' || *end == 'X')) {
        const char *s = end + 1;
        b = strtol(s, &end, 10);
        if (end == s)
            errno = EINVAL;
    }
    if (errno || end == v || *end || a < 1 || b < 1 || a > 16384 ||
        b > 16384)
        return 0;
    *h = (int)a;
    *w = (int)b;
    return 1;
}

/* [data] image_size: "N" (N x N) or "HxW". */
static dt_status_t get_image_size(const dt_config_t *cfg, int *h, int *w)
{
    const char *v = NULL;
    dt_status_t st = dt_config_get_string(cfg, "data", "image_size", &v);
    if (st == DT_ERR_NOT_FOUND || (st == DT_OK && (!v || !*v))) {
        dt_error("[data] image_size is not set: dataset = folder crops and "
                 "resizes every image to it (e.g. image_size = 32, or "
                 "64x48 for height x width)");
        return DT_ERR_CONFIG;
    }
    if (st != DT_OK)
        return st;
    if (!parse_image_size(v, h, w)) {
        dt_error("%s: [data] image_size = '%s': give N (N x N pixels) or "
                 "HxW, each 1..16384", origin(cfg, "image_size"), v);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* A folder's [data] keys as dt_dataset_load_folder takes them, each error
 * with its origin: read by the workers (load_folder_split) and checked by
 * dtctl before any worker starts (dt_dataset_check_config), one function
 * so that the two cannot disagree. */
static dt_status_t folder_opts_from_config(const dt_config_t *cfg,
                                           dt_folder_opts_t *o)
{
    long long ch = 3;
    const char *bad = "error", *decode = "load";
    memset(o, 0, sizeof *o);
    dt_status_t st = dt_config_get_int(cfg, "data", "channels", &ch);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    if (ch != 1 && ch != 3) {
        dt_error("%s: [data] channels = %lld: use 1 (grayscale) or 3 (RGB)",
                 origin(cfg, "channels"), ch);
        return DT_ERR_CONFIG;
    }
    o->channels = (int)ch;
    st = dt_config_get_string(cfg, "data", "bad_images", &bad);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    if (strcmp(bad, "error") != 0 && strcmp(bad, "skip") != 0) {
        dt_error("%s: [data] bad_images = '%s': use error (stop at the "
                 "first unreadable image) or skip (leave such images out)",
                 origin(cfg, "bad_images"), bad);
        return DT_ERR_CONFIG;
    }
    o->skip_bad = strcmp(bad, "skip") == 0;
    st = dt_config_get_string(cfg, "data", "decode", &decode);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    if (strcmp(decode, "load") != 0 && strcmp(decode, "loader") != 0) {
        dt_error("%s: [data] decode = '%s': use load (decode every image "
                 "when the job starts and keep the bytes in memory) or "
                 "loader (decode each image when a batch needs it, in the "
                 "loader threads)", origin(cfg, "decode"), decode);
        return DT_ERR_CONFIG;
    }
    o->lazy = strcmp(decode, "loader") == 0;
    if (o->lazy && o->skip_bad) { /* dt_dataset_load_folder refuses it too */
        dt_error("%s: [data] bad_images = skip needs decode = load (%s: "
                 "decode = loader): with decode = loader no image is read "
                 "before a batch needs it, so an unreadable one cannot be "
                 "left out of the sample list", origin(cfg, "bad_images"),
                 origin(cfg, "decode"));
        return DT_ERR_CONFIG;
    }
    return get_image_size(cfg, &o->height, &o->width);
}

static dt_status_t load_folder_split(const dt_config_t *cfg, const char *dir,
                                     dt_split_t split, dt_dataset_t *out)
{
    dt_folder_opts_t o;
    DT_CHECK(folder_opts_from_config(cfg, &o));
    return dt_dataset_load_folder(dir, split, &o, out);
}

/* The built-in data sets' image shape (C, H, W); 0 for another kind
 * (NULL: the default, fashion-mnist). */
static int builtin_shape(const char *kind, int shape[3])
{
    static const struct {
        const char *name;
        int c, h, w;
    } sets[] = {{"fashion-mnist", 1, 28, 28}, {"mnist", 1, 28, 28},
                {"cifar10", 3, 32, 32},       {"cifar100", 3, 32, 32},
                {"stl10", 3, 96, 96}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (strcmp(kind ? kind : "fashion-mnist", sets[i].name) == 0) {
            shape[0] = sets[i].c, shape[1] = sets[i].h, shape[2] = sets[i].w;
            return 1;
        }
    return 0;
}

dt_status_t dt_dataset_config_shape(const dt_config_t *cfg, int shape[3])
{
    const char *kind = dt_config_get(cfg, "data", "dataset");
    if (builtin_shape(kind, shape))
        return DT_OK;
    const char *size = dt_config_get(cfg, "data", "image_size");
    const char *ch = dt_config_get(cfg, "data", "channels");
    if (!kind || strcmp(kind, "folder") != 0 || !size ||
        !parse_image_size(size, &shape[1], &shape[2]))
        return DT_ERR_NOT_FOUND;
    shape[0] = ch && strcmp(ch, "1") == 0 ? 1 : 3;
    return DT_OK;
}

/* [data] channels is the folder's; elsewhere it may only confirm the
 * data set's own count (have). */
static dt_status_t check_channels(const dt_config_t *cfg, const char *kind,
                                  int have)
{
    long long ch = 0;
    dt_status_t st = dt_config_get_int(cfg, "data", "channels", &ch);
    if (st == DT_ERR_NOT_FOUND)
        return DT_OK;
    if (st != DT_OK)
        return st;
    if (ch != have) {
        dt_error("%s: [data] channels = %lld, but %s images have %d: "
                 "channels converts only an image folder (dataset = "
                 "folder)", origin(cfg, "channels"), ch, kind, have);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* A key set by the user (not its default). */
static int user_set(const dt_config_t *cfg, const char *key)
{
    dt_config_source_t src = DT_SRC_DEFAULT;
    return dt_config_get(cfg, "data", key) &&
           dt_config_origin(cfg, "data", key, &src, NULL) == DT_OK &&
           src != DT_SRC_DEFAULT;
}

/* A built-in data set's images are what its files hold, and an image
 * folder's keys do nothing for it: said, as they were ignored without a
 * word (image_size = 32 on Fashion-MNIST trained on 28x28, where
 * torchvision's Resize(32) would resize); not refused, so that a folder's
 * job file still runs with --set data.dataset=... (channels, which would
 * convert, is refused unless it repeats the count). */
static dt_status_t check_builtin_keys(const dt_config_t *cfg,
                                      const char *kind, const int shape[3])
{
    DT_CHECK(check_channels(cfg, kind, shape[0]));
    const char *size = dt_config_get(cfg, "data", "image_size");
    int h = 0, w = 0;
    if (size && user_set(cfg, "image_size") &&
        !(parse_image_size(size, &h, &w) && h == shape[1] &&
          w == shape[2]))
        dt_warn("%s: [data] image_size = %s does nothing for %s, whose "
                "images stay %dx%d (the model's input %dx%dx%d): "
                "image_size crops and resizes only an image folder "
                "(dataset = folder)", origin(cfg, "image_size"), size, kind,
                shape[1], shape[2], shape[0], shape[1], shape[2]);
    static const char *const folder_keys[] = {"decode", "bad_images"};
    for (size_t i = 0; i < sizeof folder_keys / sizeof *folder_keys; i++)
        if (user_set(cfg, folder_keys[i]))
            dt_warn("%s: [data] %s is an image folder's key (dataset = "
                    "folder): it does nothing for %s",
                    origin(cfg, folder_keys[i]), folder_keys[i], kind);
    return DT_OK;
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
        } else if (!isfinite(vals[i])) { /* strtof takes "nan", "inf" */
            dt_error("%s: [data] %s: '%s' is not a finite number: give "
                     "finite values (e.g. mean = 0.5, std = 0.25)", where,
                     key, items[i]);
            st = DT_ERR_CONFIG;
        }
    }
    if (st == DT_OK)
        *n = count;
    dt_strv_free(items);
    return st;
}


static dt_status_t check_norm_key(const dt_config_t *cfg, const char *key,
                                  int channels)
{
    float v[DT_DATASET_MAX_CHANNELS];
    size_t n;
    DT_CHECK(get_floats(cfg, key, v, DT_DATASET_MAX_CHANNELS, &n));
    const char *where = "default";
    dt_config_origin(cfg, "data", key, NULL, &where);
    if (channels > 0 && n > 1 && n != (size_t)channels) {
        dt_error("%s: [data] %s has %zu values: give 1, or one per channel "
                 "(%d for this data set)", where, key, n, channels);
        return DT_ERR_CONFIG;
    }
    for (size_t i = 0; strcmp(key, "std") == 0 && i < n; i++)
        if (!(v[i] > 0.0f)) {
            dt_error("%s: [data] std: %g must be greater than 0 (it divides "
                     "every pixel)", where, (double)v[i]);
            return DT_ERR_CONFIG;
        }
    /* Pixels are normalized as pixel/255, in [0, 1]: a mean above 1 or a
     * std above 1 is no statistic of them, but the 0-255 scale of other
     * frameworks' recipes (mean = 123.675, 116.28, 103.53), which trains
     * at chance without a word (inputs near -mean/std). */
    for (size_t i = 0; i < n; i++)
        if (v[i] > 1.0f) {
            dt_warn("%s: [data] %s = %g is above 1, but dt normalizes "
                    "pixel/255, in [0, 1] (as torchvision's ToTensor, then "
                    "Normalize): that is the 0-255 scale, whose inputs are "
                    "far from mean 0 and std 1 (mean = 72.9, std = 90 on "
                    "Fashion-MNIST trained at chance); divide it by 255 "
                    "(%.4g)", where, key, (double)v[i],
                    (double)v[i] / 255.0);
            break;
        }
    return DT_OK;
}

static dt_status_t check_count_key(const dt_config_t *cfg, const char *key)
{
    long long limit = 0;
    dt_status_t st = dt_config_get_int(cfg, "data", key, &limit);
    if (st == DT_ERR_NOT_FOUND)
        return DT_OK;
    if (st != DT_OK)
        return st;
    if (limit < 0) {
        const char *where = "default";
        dt_config_origin(cfg, "data", key, NULL, &where);
        dt_error("%s: [data] %s must be 0 (all) or a positive count, not "
                 "%lld", where, key, limit);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* The keys that say what the data set's images are: a folder's (its
 * channels, image_size, bad_images, decode), a built-in one's channels.
 * *channels: as loaded, 0 when not known here. */
static dt_status_t check_image_keys(const dt_config_t *cfg, int *channels)
{
    const char *kind = dt_config_get(cfg, "data", "dataset");
    int shape[3];
    *channels = 0;
    if (user_set(cfg, "cifar100_labels") &&
        (!kind || strcmp(kind, "cifar100") != 0))
        dt_warn("%s: [data] cifar100_labels chooses CIFAR-100's fine or "
                "coarse labels: it does nothing for %s",
                origin(cfg, "cifar100_labels"), kind ? kind : "fashion-mnist");
    if (builtin_shape(kind, shape)) {
        *channels = shape[0];
        return check_builtin_keys(cfg, kind ? kind : "fashion-mnist", shape);
    }
    if (!kind || strcmp(kind, "folder") != 0)
        return DT_OK; /* an unknown kind: dtctl names it (its shape) */
    dt_folder_opts_t o;
    DT_CHECK(folder_opts_from_config(cfg, &o));
    *channels = o.channels;
    return DT_OK;
}

dt_status_t dt_dataset_check_config(const dt_config_t *cfg)
{
    int c;
    DT_CHECK(check_image_keys(cfg, &c));
    DT_CHECK(check_norm_key(cfg, "mean", c));
    DT_CHECK(check_norm_key(cfg, "std", c));
    DT_CHECK(check_count_key(cfg, "train_samples"));
    return check_count_key(cfg, "test_samples");
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
    char *staged = NULL;
    if (!dir || !*dir) {
        if (!is_fashion) {
            dt_error("[data] path is not set: name the directory holding "
                     "the %s files", kind);
            return DT_ERR_CONFIG;
        }
        dir = FASHION_MNIST_DIR;
    } else {
        /* Where staging put it on this host: dtctl gives the workers
         * DT_DATA_PATH (their [data] path), in which {host} stands for
         * this worker's host. */
        DT_CHECK(dt_data_dir_resolve(dir, &staged));
        dir = staged;
    }
    if (is_fashion || strcmp(kind, "mnist") == 0)
        st = load_idx_split(dir, split, out);
    else if (strcmp(kind, "cifar10") == 0)
        st = load_cifar_split(dir, split, out);
    else if (strcmp(kind, "cifar100") == 0)
        st = load_cifar100_split(cfg, dir, split, out);
    else if (strcmp(kind, "stl10") == 0)
        st = load_stl10_split(dir, split, out);
    else if (strcmp(kind, "folder") == 0)
        st = load_folder_split(cfg, dir, split, out);
    else {
        dt_error("[data] dataset '%s' is not known; use fashion-mnist, "
                 "mnist, cifar10, cifar100, stl10 or folder", kind);
        free(staged);
        return DT_ERR_CONFIG;
    }
    free(staged);
    if (st == DT_OK && strcmp(kind, "folder") != 0 &&
        (st = check_channels(cfg, kind, out->channels)) != DT_OK)
        dt_dataset_free(out);
    else if (st == DT_OK && (st = apply_config(cfg, split, out)) != DT_OK)
        dt_dataset_free(out);
    return st;
}
