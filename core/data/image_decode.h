/* image_decode.h — one PNG or JPEG file to a fixed-size CHW sample
 * (internal; the image-folder data set and the input pipeline's loader
 * threads call it).
 *
 * PNG is decoded with libpng, JPEG with libjpeg(-turbo); the format is told
 * by the file's first bytes, not its name. The decoded image is converted
 * to the wanted channels (gray -> RGB by copying the plane, RGB -> gray as
 * ITU-R 601 luma 0.299 R + 0.587 G + 0.114 B, alpha dropped, palette and
 * 1/2/4/16-bit PNGs expanded or scaled to 8 bits, CMYK JPEGs to RGB), then
 * center-cropped to the output's aspect ratio and resized to
 * height x width with a triangle (bilinear) filter whose support widens
 * with the downscale factor (antialiased like PIL's BILINEAR; plain
 * bilinear interpolation when enlarging; the identity at the same size).
 *
 * Thread-safe: no global state, nothing logged. On failure `err` receives
 * one line "PATH: what is wrong" for the caller to log or count. */
#ifndef DT_DATA_IMAGE_DECODE_H
#define DT_DATA_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

/* What a decoded sample looks like. */
typedef struct dt_image_spec {
    int channels;      /* 1 (grayscale) or 3 (RGB)                 */
    int height, width; /* output size in pixels, each 1..DT_IMAGE_MAX_SIDE */
} dt_image_spec_t;

#define DT_IMAGE_MAX_SIDE 16384

/* Whether dt was built with each decoder (libpng, libjpeg). */
int dt_image_have_png(void);
int dt_image_have_jpeg(void);

/* Whether the image folder takes a file of this name: it ends in .png,
 * .jpg or .jpeg (any case) and does not start with a dot. */
int dt_image_name_ok(const char *name);

/* Decode `path` into out[channels * height * width] (CHW, row-major),
 * floats pixel/255 in [0, 1] (not yet normalized by [data] mean/std).
 * Returns DT_OK; DT_ERR_NOT_FOUND or DT_ERR_IO (cannot open or read);
 * DT_ERR_INVALID (not a regular file: a named pipe is refused at once,
 * never waited on; not a PNG/JPEG; corrupt data, e.g. a damaged restart
 * marker; data cut short); DT_ERR_UNSUPPORTED (a format dt was built
 * without: the message names the package to install); DT_ERR_NOMEM. A
 * file missing only its end (a JPEG's EOI marker, a PNG's IEND chunk) is
 * decoded, as PIL does. */
dt_status_t dt_image_decode(const char *path, const dt_image_spec_t *spec,
                            float *out, char *err, size_t errlen);

/* The same as bytes 0..255 (round(255 * value)), the layout the data sets
 * keep in memory. */
dt_status_t dt_image_decode_u8(const char *path, const dt_image_spec_t *spec,
                               uint8_t *out, char *err, size_t errlen);

#endif /* DT_DATA_IMAGE_DECODE_H */
