/* dataset_cifar.c — the CIFAR-10 binary format: each record is one label
 * byte (0..9) then 3072 pixel bytes, 1024 red, 1024 green, 1024 blue, each
 * a 32x32 image in row-major order. A batch file holds 10000 records. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "byte_source.h"
#include "dataset.h"

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_CLASSES 10

/* Append every record of one file to out (grown as needed). */
static dt_status_t read_file(const char *path, dt_dataset_t *out,
                             size_t *cap)
{
    dt_byte_source_t *src;
    unsigned char rec[CIFAR_RECORD];
    size_t got, first = out->n;
    DT_CHECK(dt_byte_source_open(path, &src));
    dt_status_t st = DT_OK;
    for (;;) {
        if ((st = dt_byte_source_read(src, rec, sizeof rec, &got)) != DT_OK)
            break;
        if (got == 0)
            break;
        size_t i = out->n - first;
        if (got < sizeof rec) {
            dt_error("%s: truncated: record %zu has %zu of %d bytes (a CIFAR "
                     "file is a whole number of %d-byte records); download "
                     "it again", path, i, got, CIFAR_RECORD, CIFAR_RECORD);
            st = DT_ERR_INVALID;
            break;
        }
        if (rec[0] >= CIFAR_CLASSES) {
            dt_error("%s: record %zu has label %u, out of range 0..%d: not a "
                     "CIFAR-10 binary file (CIFAR-100 records have two label "
                     "bytes)", path, i, rec[0], CIFAR_CLASSES - 1);
            st = DT_ERR_INVALID;
            break;
        }
        if (out->n == *cap) {
            size_t ncap = *cap ? 2 * *cap : 10000;
            uint8_t *p = realloc(out->pixels, ncap * CIFAR_PIXELS);
            if (p)
                out->pixels = p;
            uint8_t *l = p ? realloc(out->labels, ncap) : NULL;
            if (!l) {
                st = DT_ERR_NOMEM;
                break;
            }
            out->labels = l;
            *cap = ncap;
        }
        out->labels[out->n] = rec[0];
        memcpy(out->pixels + out->n * CIFAR_PIXELS, rec + 1, CIFAR_PIXELS);
        out->n++;
    }
    if (st == DT_OK && out->n == first) {
        dt_error("%s: is empty: no CIFAR-10 records", path);
        st = DT_ERR_INVALID;
    }
    dt_byte_source_close(src);
    return st;
}

dt_status_t dt_dataset_load_cifar10(const char *const *paths, size_t npaths,
                                    dt_dataset_t *out)
{
    size_t cap = 0;
    memset(out, 0, sizeof *out);
    out->channels = 3;
    out->height = out->width = CIFAR_SIDE;
    out->sample_len = CIFAR_PIXELS;
    out->nclasses = CIFAR_CLASSES;
    for (int c = 0; c < 3; c++) {
        out->mean[c] = 0.0f;
        out->std[c] = 1.0f;
    }
    for (size_t i = 0; i < npaths; i++) {
        dt_status_t st = read_file(paths[i], out, &cap);
        if (st != DT_OK) {
            dt_dataset_free(out);
            return st;
        }
    }
    return DT_OK;
}
