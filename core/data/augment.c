/* augment.c — random crop (zero padding) and horizontal flip, drawn per
 * sample from (seed, epoch, index). */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "augment.h"

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

dt_augment_draw_t dt_augment_draw(const dt_augment_t *a, uint64_t epoch,
                                  size_t index)
{
    /* A hash of the three counters (each through the finalizer, so
     * neighbouring seeds, epochs and indices are unrelated). */
    uint64_t h = mix64(mix64(mix64(a->seed ^ 0x6175676d656e74ull) ^ epoch) ^
                       (uint64_t)index);
    dt_augment_draw_t d = {0, 0, false};
    uint64_t span = 2 * (uint64_t)a->crop_pad + 1;
    if (a->crop_pad > 0) {
        /* 32 bits each; the bias of % for span <= 2^16 is below 2^-16. */
        d.dy = (int)((h & 0xffffffffull) % span);
        d.dx = (int)(((h >> 32) & 0x7fffffffull) % span);
    }
    if (a->hflip)
        d.flip = (mix64(h) >> 63) != 0;
    return d;
}

void dt_augment_apply(const dt_augment_draw_t *d, int pad, int channels,
                      int height, int width, const uint8_t *src,
                      uint8_t *dst)
{
    size_t plane = (size_t)height * (size_t)width;
    /* Output (y, x) reads the padded image at (y + dy, x + dx), i.e. the
     * source at (y + dy - pad, x + dx - pad); outside it: 0. The flip
     * mirrors the output columns. */
    int oy = d->dy - pad, ox = d->dx - pad;
    for (int c = 0; c < channels; c++) {
        const uint8_t *s = src + (size_t)c * plane;
        uint8_t *o = dst + (size_t)c * plane;
        for (int y = 0; y < height; y++) {
            uint8_t *row = o + (size_t)y * (size_t)width;
            int sy = y + oy;
            if (sy < 0 || sy >= height) {
                memset(row, 0, (size_t)width);
                continue;
            }
            const uint8_t *srow = s + (size_t)sy * (size_t)width;
            /* the columns x with 0 <= x + ox < width */
            int x0 = ox < 0 ? -ox : 0;
            int x1 = ox > 0 ? width - ox : width;
            if (x1 < x0)
                x1 = x0;
            if (!d->flip) {
                memset(row, 0, (size_t)x0);
                memcpy(row + x0, srow + x0 + ox, (size_t)(x1 - x0));
                memset(row + x1, 0, (size_t)(width - x1));
            } else {
                for (int x = 0; x < width; x++) {
                    int sx = x + ox;
                    row[width - 1 - x] =
                        sx >= 0 && sx < width ? srow[sx] : 0;
                }
            }
        }
    }
}

dt_status_t dt_augment_gather(const dt_dataset_t *ds,
                              const dt_augment_t *aug, uint64_t epoch,
                              const size_t *idx, size_t count,
                              uint8_t *scratch, float *x, int32_t *y)
{
    if (!dt_augment_enabled(aug))
        return dt_dataset_gather(ds, idx, count, x, y);
    uint8_t *buf = NULL; /* a decoded image (decode on gather) */
    if (ds->decode_on_gather && count > 0 &&
        !(buf = malloc(ds->sample_len)))
        return DT_ERR_NOMEM;
    dt_status_t st = DT_OK;
    for (size_t b = 0; b < count && st == DT_OK; b++) {
        const uint8_t *px = NULL;
        st = dt_dataset_sample(ds, idx[b], buf, &px);
        if (st != DT_OK)
            break;
        dt_augment_draw_t d = dt_augment_draw(aug, epoch, idx[b]);
        dt_augment_apply(&d, aug->crop_pad, ds->channels, ds->height,
                         ds->width, px, scratch);
        dt_dataset_normalize(ds, scratch, x + b * ds->sample_len);
        y[b] = ds->labels[idx[b]];
    }
    free(buf);
    return st;
}

static const char *origin(const dt_config_t *cfg, const char *key)
{
    const char *where = "default";
    dt_config_origin(cfg, "data", key, NULL, &where);
    return where;
}

/* [data] random_crop and hflip, checked against the images' shape
 * (C, H, W; NULL: not known, the values only); images: the samples are
 * C x H x W. The workers check the loaded data, dtctl the shape the job
 * file gives (dt_augment_check_config): one check, so they agree. */
static dt_status_t read_checked(const dt_config_t *cfg, const int shape[3],
                                bool images, long long *pad, bool *flip)
{
    *pad = 0;
    *flip = false;
    DT_CHECK(dt_config_get_int(cfg, "data", "random_crop", pad));
    DT_CHECK(dt_config_get_bool(cfg, "data", "hflip", flip));
    if (*pad < 0) {
        dt_error("%s: [data] random_crop = %lld: the padding in pixels must "
                 "be 0 (off) or more", origin(cfg, "random_crop"), *pad);
        return DT_ERR_CONFIG;
    }
    if ((*pad == 0 && !*flip) || !shape)
        return DT_OK;
    const char *key = *pad > 0 ? "random_crop" : "hflip";
    if (!images || shape[1] < 2 || shape[2] < 2 || shape[0] < 1) {
        dt_error("%s: [data] %s needs images (channels x height x width); "
                 "this data set's samples are %dx%dx%d: set random_crop = 0 "
                 "and hflip = no", origin(cfg, key), key, shape[0], shape[1],
                 shape[2]);
        return DT_ERR_CONFIG;
    }
    int side = shape[1] < shape[2] ? shape[1] : shape[2];
    if (*pad >= side) {
        dt_error("%s: [data] random_crop = %lld: the padding must be below "
                 "the image's side (%dx%d images; 2 to 4 is usual)",
                 origin(cfg, "random_crop"), *pad, shape[1], shape[2]);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t dt_augment_check_config(const dt_config_t *cfg,
                                    const int shape[3])
{
    long long pad;
    bool flip;
    return read_checked(cfg, shape, true, &pad, &flip);
}

dt_status_t dt_augment_from_config(const dt_config_t *cfg,
                                   const dt_dataset_t *ds, uint64_t seed,
                                   dt_augment_t *out)
{
    long long pad;
    bool flip;
    memset(out, 0, sizeof *out);
    out->seed = seed;
    int shape[3] = {ds ? ds->channels : 0, ds ? ds->height : 0,
                    ds ? ds->width : 0};
    bool images = !ds || ds->sample_len == (size_t)ds->channels *
                                               (size_t)ds->height *
                                               (size_t)ds->width;
    DT_CHECK(read_checked(cfg, ds ? shape : NULL, images, &pad, &flip));
    out->crop_pad = (int)pad; /* both 0 when off */
    out->hflip = flip;
    return DT_OK;
}
