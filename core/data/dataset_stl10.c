/* dataset_stl10.c — the STL-10 binary format (stl10_binary/): train_X.bin
 * and test_X.bin hold images of 3 x 96 x 96 bytes with nothing between
 * them; within an image the three channels (red, green, blue) follow each
 * other and each channel is stored column-major, as MATLAB writes arrays:
 * the byte of pixel (c, y, x) is at c*9216 + x*96 + y. train_y.bin and
 * test_y.bin hold one label byte per image, 1..10 (airplane, bird, car,
 * cat, deer, dog, horse, monkey, ship, truck). The unlabeled split
 * (unlabeled_X.bin) is not read. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "byte_source.h"
#include "dataset.h"

#define STL_SIDE 96
#define STL_PLANE (STL_SIDE * STL_SIDE)
#define STL_PIXELS (3 * STL_PLANE)
#define STL_CLASSES 10

/* Out of memory for n things (what) of path: logged. */
static dt_status_t no_memory(const char *path, size_t bytes, size_t n,
                             const char *what)
{
    dt_error("%s: cannot allocate %zu bytes (%.1f MiB) for %zu %s: each "
             "worker keeps the whole split in memory; free memory on this "
             "host or start fewer workers on it", path, bytes,
             (double)bytes / 1048576.0, n, what);
    return DT_ERR_NOMEM;
}

static dt_status_t read_labels(const char *path, dt_dataset_t *out)
{
    dt_byte_source_t *src;
    DT_CHECK(dt_byte_source_open(path, &src));
    size_t cap = 0, got;
    dt_status_t st = DT_OK;
    for (;;) {
        if (out->n == cap) {
            size_t ncap = cap ? 2 * cap : 8192;
            uint8_t *l = realloc(out->labels, ncap);
            if (!l) {
                st = no_memory(path, ncap, ncap, "labels of 1 byte");
                break;
            }
            out->labels = l;
            cap = ncap;
        }
        size_t ask = cap - out->n;
        st = dt_byte_source_read(src, out->labels + out->n, ask, &got);
        if (st != DT_OK)
            break;
        out->n += got;
        if (got < ask)
            break; /* end of file */
    }
    dt_byte_source_close(src);
    if (st != DT_OK)
        return st;
    if (out->n == 0) {
        dt_error("%s: is empty: no STL-10 labels", path);
        return DT_ERR_INVALID;
    }
    for (size_t i = 0; i < out->n; i++) {
        if (out->labels[i] < 1 || out->labels[i] > STL_CLASSES) {
            dt_error("%s: label %u of image %zu is out of range 1..%d: not "
                     "an STL-10 labels file (*_y.bin)", path, out->labels[i],
                     i, STL_CLASSES);
            return DT_ERR_INVALID;
        }
        out->labels[i]--; /* 1-based in the file */
    }
    return DT_OK;
}

static dt_status_t read_images(const char *path, const char *labels_path,
                               dt_dataset_t *out)
{
    size_t want = out->n * STL_PIXELS, got;
    out->pixels = malloc(want);
    if (!out->pixels)
        return no_memory(path, want, out->n, "images of 3x96x96 bytes");
    dt_byte_source_t *src;
    DT_CHECK(dt_byte_source_open(path, &src));
    dt_status_t st = dt_byte_source_read(src, out->pixels, want, &got);
    if (st == DT_OK && got < want) {
        dt_error("%s: truncated: %s has %zu labels, so the file should hold "
                 "%zu images of 3x96x96 bytes (%zu bytes), but it ends after "
                 "%zu bytes; download it again", path, labels_path, out->n,
                 out->n, want, got);
        st = DT_ERR_INVALID;
    }
    unsigned char extra;
    if (st == DT_OK &&
        (st = dt_byte_source_read(src, &extra, 1, &got)) == DT_OK &&
        got != 0) {
        dt_error("%s: is longer than expected: %s has %zu labels, so the "
                 "file should be %zu bytes (that many images of 3x96x96 "
                 "bytes): the two files do not belong together", path,
                 labels_path, out->n, want);
        st = DT_ERR_INVALID;
    }
    dt_byte_source_close(src);
    return st;
}

/* Each channel from column-major to row-major. */
static void transpose_planes(dt_dataset_t *ds)
{
    uint8_t tmp[STL_PLANE];
    for (size_t i = 0; i < ds->n * 3; i++) {
        uint8_t *p = ds->pixels + i * STL_PLANE;
        for (int x = 0; x < STL_SIDE; x++)
            for (int y = 0; y < STL_SIDE; y++)
                tmp[y * STL_SIDE + x] = p[x * STL_SIDE + y];
        memcpy(p, tmp, STL_PLANE);
    }
}

dt_status_t dt_dataset_load_stl10(const char *images_path,
                                  const char *labels_path, dt_dataset_t *out)
{
    memset(out, 0, sizeof *out);
    dt_status_t st = read_labels(labels_path, out);
    if (st == DT_OK)
        st = read_images(images_path, labels_path, out);
    if (st != DT_OK) {
        dt_dataset_free(out);
        return st;
    }
    transpose_planes(out);
    out->channels = 3;
    out->height = out->width = STL_SIDE;
    out->sample_len = STL_PIXELS;
    out->nclasses = STL_CLASSES;
    for (int c = 0; c < 3; c++) {
        out->mean[c] = 0.0f;
        out->std[c] = 1.0f;
    }
    return DT_OK;
}
