/* dataset.c — normalization, subsets and batch gathering. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "dataset.h"
#include "image_decode.h"

dt_status_t dt_dataset_set_norm(dt_dataset_t *ds, const float *mean,
                                size_t nmean, const float *std, size_t nstd)
{
    size_t c = (size_t)ds->channels;
    if ((nmean != 1 && nmean != c) || (nstd != 1 && nstd != c)) {
        dt_error("[data] mean and std take 1 value or one per channel (%zu "
                 "for this data set); got %zu and %zu values",
                 c, nmean, nstd);
        return DT_ERR_CONFIG;
    }
    for (size_t i = 0; i < c; i++) {
        float s = std[nstd == 1 ? 0 : i], m = mean[nmean == 1 ? 0 : i];
        if (!(s > 0.0f) || !isfinite(s)) {
            dt_error("[data] std must be greater than 0 and finite "
                     "(channel %zu has %g): it divides every pixel", i,
                     (double)s);
            return DT_ERR_CONFIG;
        }
        if (!isfinite(m)) {
            dt_error("[data] mean must be a finite number (channel %zu has "
                     "%g): it is subtracted from every pixel", i, (double)m);
            return DT_ERR_CONFIG;
        }
        ds->mean[i] = m;
        ds->std[i] = s;
    }
    return DT_OK;
}

/* Sample k of the subset becomes sample src (src >= k, increasing). */
static void keep_sample(dt_dataset_t *ds, size_t k, size_t src)
{
    ds->labels[k] = ds->labels[src];
    if (ds->pixels)
        memmove(ds->pixels + k * ds->sample_len,
                ds->pixels + src * ds->sample_len, ds->sample_len);
    if (ds->paths && ds->npaths == ds->n) {
        char *p = ds->paths[k]; /* a swap: the dropped end up past n */
        ds->paths[k] = ds->paths[src];
        ds->paths[src] = p;
    }
}

/* Samples floor(k * ds->n / n), k = 0..n-1: the head of a list stored
 * class by class would hold only its first classes. */
static void keep_spread(dt_dataset_t *ds, size_t n)
{
    size_t q = ds->n / n, r = ds->n % n, src = 0, acc = 0;
    for (size_t k = 0; k < n; k++) {
        keep_sample(ds, k, src);
        src += q; /* exact floor without the product k * ds->n */
        acc += r;
        if (acc >= n) {
            acc -= n;
            src++;
        }
    }
    if (ds->paths && ds->npaths == ds->n) {
        for (size_t i = n; i < ds->npaths; i++)
            free(ds->paths[i]);
        ds->npaths = n;
    }
}

void dt_dataset_truncate(dt_dataset_t *ds, size_t n)
{
    if (n >= ds->n)
        return;
    if (ds->by_class && n > 0)
        keep_spread(ds, n);
    ds->n = n; /* buffers stay; only the first n are used */
}

/* d = s * scale + shift. Blocks of 16 so that -O2 vectorizes it, and
 * restrict parameters (bytes may alias anything): the same arithmetic per
 * pixel, several pixels per instruction. */
static void pixels_to_float(const uint8_t *restrict s, float *restrict d,
                            size_t n, float scale, float shift)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = 0; j < 16; j++)
            d[i + j] = (float)s[i + j] * scale + shift;
    for (; i < n; i++)
        d[i] = (float)s[i] * scale + shift;
}

void dt_dataset_normalize(const dt_dataset_t *ds, const uint8_t *pixels,
                          float *x)
{
    size_t plane = (size_t)ds->height * (size_t)ds->width;
    for (int c = 0; c < ds->channels; c++) {
        /* (p/255 - mean)/std as one multiply-add per pixel */
        float scale = 1.0f / (255.0f * ds->std[c]);
        float shift = -ds->mean[c] / ds->std[c];
        pixels_to_float(pixels + (size_t)c * plane, x + (size_t)c * plane,
                        plane, scale, shift);
    }
}

dt_status_t dt_dataset_sample(const dt_dataset_t *ds, size_t i, uint8_t *buf,
                              const uint8_t **px)
{
    if (!ds->decode_on_gather) {
        *px = ds->pixels + i * ds->sample_len;
        return DT_OK;
    }
    *px = buf;
    if (!ds->paths || i >= ds->npaths) {
        dt_error("data set: sample %zu has no image file to decode", i);
        return DT_ERR_INVALID;
    }
    dt_image_spec_t spec = {ds->channels, ds->height, ds->width};
    char err[1024];
    dt_status_t st = dt_image_decode_u8(ds->paths[i], &spec, buf, err,
                                        sizeof err);
    if (st != DT_OK)
        dt_error("%s (met while loading a batch: [data] decode = loader "
                 "decodes each image when a batch needs it; decode = load "
                 "checks every image at start, and bad_images = skip can "
                 "then leave such files out)", err);
    /* A file that does not decode fails every attempt alike; one the
     * system could not read (DT_ERR_IO) or gone since it was listed
     * (DT_ERR_NOT_FOUND) may pass. Its own status: DT_ERR_INVALID also
     * means a caller's mistake on the way up. A format dt was built
     * without (DT_ERR_UNSUPPORTED) fails every attempt alike too. */
    return st == DT_ERR_INVALID || st == DT_ERR_UNSUPPORTED ? DT_ERR_BAD_DATA
                                                            : st;
}

dt_status_t dt_dataset_gather(const dt_dataset_t *ds, const size_t *idx,
                              size_t count, float *x, int32_t *y)
{
    uint8_t *buf = NULL;
    if (ds->decode_on_gather && count > 0 &&
        !(buf = malloc(ds->sample_len)))
        return DT_ERR_NOMEM;
    dt_status_t st = DT_OK;
    for (size_t b = 0; b < count && st == DT_OK; b++) {
        const uint8_t *px = NULL;
        st = dt_dataset_sample(ds, idx[b], buf, &px);
        if (st == DT_OK)
            dt_dataset_normalize(ds, px, x + b * ds->sample_len);
        y[b] = ds->labels[idx[b]];
    }
    free(buf);
    return st;
}

/* FNV-1a, 64 bits: a byte at a time is fast enough here (60000 labels
 * in well under a millisecond) and needs no table. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t dt_dataset_digest(const dt_dataset_t *ds, uint64_t h)
{
    if (!h)
        h = 0xcbf29ce484222325ULL; /* FNV-1a's offset basis */
    uint64_t n = ds->n, k = (uint64_t)ds->nclasses;
    h = fnv1a(h, &n, sizeof n);
    h = fnv1a(h, &k, sizeof k);
    if (ds->labels)
        h = fnv1a(h, ds->labels, ds->n);
    /* Names with their NUL: "ab","c" is not "a","bc". */
    for (int i = 0; ds->class_names && i < ds->nclasses; i++)
        h = fnv1a(h, ds->class_names[i], strlen(ds->class_names[i]) + 1);
    /* An image folder's file names, not their directory (a per-host
     * staged copy lives elsewhere): a file swapped for another keeps
     * every count and label. */
    for (size_t i = 0; ds->paths && i < ds->npaths; i++) {
        const char *slash = strrchr(ds->paths[i], '/');
        const char *base = slash ? slash + 1 : ds->paths[i];
        h = fnv1a(h, base, strlen(base) + 1);
    }
    return h;
}

void dt_dataset_free(dt_dataset_t *ds)
{
    if (!ds)
        return;
    free(ds->pixels);
    free(ds->labels);
    for (size_t i = 0; ds->paths && i < ds->npaths; i++)
        free(ds->paths[i]);
    free(ds->paths);
    for (int i = 0; ds->class_names && i < ds->nclasses; i++)
        free(ds->class_names[i]);
    free(ds->class_names);
    memset(ds, 0, sizeof *ds);
}
