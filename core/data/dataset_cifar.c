/* dataset_cifar.c — the CIFAR-10 and CIFAR-100 binary formats. A CIFAR-10
 * record is one label byte (0..9) then 3072 pixel bytes, 1024 red, 1024
 * green, 1024 blue, each a 32x32 image in row-major order; a batch file
 * holds 10000 records. A CIFAR-100 record has two label bytes, the coarse
 * (0..19) then the fine (0..99) label, then the same 3072 pixel bytes;
 * train.bin holds 50000 records, test.bin 10000. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "byte_source.h"
#include "dataset.h"

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_MAX_LABEL_BYTES 2

/* One of the record formats. */
typedef struct cifar_format {
    const char *name;  /* "CIFAR-10"                                      */
    int label_bytes;   /* label bytes before the pixels                   */
    int label_at;      /* which of them is the label used                 */
    int nclasses[CIFAR_MAX_LABEL_BYTES]; /* range of each label byte      */
    const char *hint;  /* what a wrong label suggests                     */
} cifar_format_t;

static const cifar_format_t cifar10 = {
    "CIFAR-10", 1, 0, {10, 0},
    "not a CIFAR-10 binary file (CIFAR-100 records have two label bytes)"};
static const cifar_format_t cifar100_fine = {
    "CIFAR-100", 2, 1, {20, 100},
    "not a CIFAR-100 binary file (CIFAR-10 records have one label byte)"};
static const cifar_format_t cifar100_coarse = {
    "CIFAR-100", 2, 0, {20, 100},
    "not a CIFAR-100 binary file (CIFAR-10 records have one label byte)"};

/* Room for twice the records (10000 at first), or a logged error. */
static dt_status_t grow(const char *path, const cifar_format_t *fmt,
                        dt_dataset_t *out, size_t *cap)
{
    size_t ncap = *cap ? 2 * *cap : 10000;
    uint8_t *p = realloc(out->pixels, ncap * CIFAR_PIXELS);
    if (p)
        out->pixels = p;
    uint8_t *l = p ? realloc(out->labels, ncap) : NULL;
    if (l) {
        out->labels = l;
        *cap = ncap;
        return DT_OK;
    }
    double bytes = (double)ncap * (CIFAR_PIXELS + 1);
    dt_error("%s: cannot allocate %.0f bytes (%.1f MiB) for %zu %s images "
             "of 3x32x32 bytes: each worker keeps the whole split in "
             "memory; free memory on this host or start fewer workers on it",
             path, bytes, bytes / 1048576.0, ncap, fmt->name);
    return DT_ERR_NOMEM;
}

/* Append every record of one file to out (grown as needed). */
static dt_status_t read_file(const char *path, const cifar_format_t *fmt,
                             dt_dataset_t *out, size_t *cap)
{
    dt_byte_source_t *src;
    unsigned char rec[CIFAR_MAX_LABEL_BYTES + CIFAR_PIXELS];
    size_t reclen = (size_t)fmt->label_bytes + CIFAR_PIXELS;
    size_t got, first = out->n;
    DT_CHECK(dt_byte_source_open(path, &src));
    dt_status_t st = DT_OK;
    for (;;) {
        if ((st = dt_byte_source_read(src, rec, reclen, &got)) != DT_OK)
            break;
        if (got == 0)
            break;
        size_t i = out->n - first;
        if (got < reclen) {
            dt_error("%s: truncated: record %zu has %zu of %zu bytes (a %s "
                     "file is a whole number of %zu-byte records: %zu bytes "
                     "for %zu records); download it again", path, i, got,
                     reclen, fmt->name, reclen, (i + 1) * reclen, i + 1);
            st = DT_ERR_INVALID;
            break;
        }
        for (int b = 0; b < fmt->label_bytes && st == DT_OK; b++)
            if (rec[b] >= fmt->nclasses[b]) {
                const char *which = fmt->label_bytes == 1 ? ""
                                    : b == 0              ? "coarse "
                                                          : "fine ";
                dt_error("%s: record %zu has %slabel %u, out of range 0..%d: "
                         "%s", path, i, which, rec[b], fmt->nclasses[b] - 1,
                         fmt->hint);
                st = DT_ERR_INVALID;
            }
        if (st != DT_OK)
            break;
        if (out->n == *cap && (st = grow(path, fmt, out, cap)) != DT_OK)
            break;
        out->labels[out->n] = rec[fmt->label_at];
        memcpy(out->pixels + out->n * CIFAR_PIXELS, rec + fmt->label_bytes,
               CIFAR_PIXELS);
        out->n++;
    }
    if (st == DT_OK && out->n == first) {
        dt_error("%s: is empty: no %s records", path, fmt->name);
        st = DT_ERR_INVALID;
    }
    dt_byte_source_close(src);
    return st;
}

static dt_status_t load(const char *const *paths, size_t npaths,
                        const cifar_format_t *fmt, dt_dataset_t *out)
{
    size_t cap = 0;
    memset(out, 0, sizeof *out);
    out->channels = 3;
    out->height = out->width = CIFAR_SIDE;
    out->sample_len = CIFAR_PIXELS;
    out->nclasses = fmt->nclasses[fmt->label_at];
    for (int c = 0; c < 3; c++) {
        out->mean[c] = 0.0f;
        out->std[c] = 1.0f;
    }
    for (size_t i = 0; i < npaths; i++) {
        dt_status_t st = read_file(paths[i], fmt, out, &cap);
        if (st != DT_OK) {
            dt_dataset_free(out);
            return st;
        }
    }
    return DT_OK;
}

dt_status_t dt_dataset_load_cifar10(const char *const *paths, size_t npaths,
                                    dt_dataset_t *out)
{
    return load(paths, npaths, &cifar10, out);
}

dt_status_t dt_dataset_load_cifar100(const char *const *paths, size_t npaths,
                                     int coarse, dt_dataset_t *out)
{
    return load(paths, npaths, coarse ? &cifar100_coarse : &cifar100_fine,
                out);
}
