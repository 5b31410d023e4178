/* image_decode.c — PNG (libpng) and JPEG (libjpeg-turbo) files to CHW
 * samples: decode, convert channels, center crop, antialiased bilinear
 * resize. Every call owns its state (libpng's and libjpeg's error jumps
 * land in a per-call context), so loader threads may call it at once.
 *
 * Why the libraries and not a hand-written decoder: PNG needs inflate,
 * five filters, Adam7 interlacing, palettes and 1..16-bit depths; JPEG
 * needs Huffman/arithmetic entropy decoding, progressive scans, chroma
 * subsampling and the IDCT. libpng and libjpeg-turbo are Debian's own,
 * fuzzed for decades, SIMD-accelerated (libjpeg-turbo decodes several
 * times faster than a plain C decoder), and report damage precisely. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "byte_source.h"
#include "image_decode.h"

#ifdef DT_HAVE_PNG
#include <png.h>
#endif
#ifdef DT_HAVE_JPEG
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>
#endif
#ifdef DT_HAVE_PNG
#include <setjmp.h>
#endif

/* Files larger than this are refused before reading (a 16384 x 16384
 * RGB image compresses to far less). */
#define MAX_FILE_BYTES ((size_t)512 << 20)
/* Decoded images larger than this are refused (memory). */
#define MAX_PIXELS ((size_t)1 << 28)
/* Bytes read_file leaves free after the data: room to append a JPEG's
 * missing end-of-image marker (see jpeg_end_marker). */
#define JPEG_EOI_ROOM 2

int dt_image_have_png(void)
{
#ifdef DT_HAVE_PNG
    return 1;
#else
    return 0;
#endif
}

int dt_image_have_jpeg(void)
{
#ifdef DT_HAVE_JPEG
    return 1;
#else
    return 0;
#endif
}

int dt_image_name_ok(const char *name)
{
    if (name[0] == '.')
        return 0;
    const char *dot = strrchr(name, '.');
    return dot && (strcasecmp(dot, ".png") == 0 ||
                   strcasecmp(dot, ".jpg") == 0 ||
                   strcasecmp(dot, ".jpeg") == 0);
}

static void set_err(char *err, size_t len, const char *path,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void set_err(char *err, size_t len, const char *path,
                    const char *fmt, ...)
{
    if (!err || len == 0)
        return;
    int n = snprintf(err, len, "%s: ", path);
    if (n < 0 || (size_t)n >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, len - (size_t)n, fmt, ap);
    va_end(ap);
}

/* A decoded image: h x w x c bytes (interleaved), c = 1 or 3. */
typedef struct raw_image {
    uint8_t *px;
    int w, h, c;
} raw_image_t;

/* len bytes from fd; DT_ERR_IO with the reason in err otherwise. */
static dt_status_t read_all(int fd, const char *path, uint8_t *buf,
                            size_t len, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            set_err(err, errlen, path, "cannot read: %s",
                    n ? strerror(errno) : "the file shrank while being read");
            return DT_ERR_IO;
        }
        got += (size_t)n;
    }
    return DT_OK;
}

/* The file's bytes in *buf, with JPEG_EOI_ROOM bytes to spare. Only a
 * regular file is read: a FIFO would block the job (dt_open_regular). */
static dt_status_t read_file(const char *path, uint8_t **buf, size_t *len,
                             char *err, size_t errlen)
{
    char why[256];
    off_t size = 0;
    dt_status_t st;
    int fd = dt_open_regular(path, &size, why, sizeof why, &st);
    if (fd < 0) {
        set_err(err, errlen, path, "%s", why);
        return st;
    }
    if (size == 0) {
        set_err(err, errlen, path, "is empty (0 bytes): not an image");
        close(fd);
        return DT_ERR_INVALID;
    }
    if ((uintmax_t)size > MAX_FILE_BYTES) {
        set_err(err, errlen, path, "is %lld bytes; images over %zu MiB are "
                "refused", (long long)size, MAX_FILE_BYTES >> 20);
        close(fd);
        return DT_ERR_INVALID;
    }
    *len = (size_t)size;
    *buf = malloc(*len + JPEG_EOI_ROOM);
    st = *buf ? read_all(fd, path, *buf, *len, err, errlen) : DT_ERR_NOMEM;
    close(fd);
    if (st != DT_OK) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

#if defined(DT_HAVE_PNG) || defined(DT_HAVE_JPEG)
/* Only the decoders call it: unused (-Werror) in a build without both. */
static dt_status_t check_size(const char *path, size_t w, size_t h,
                              char *err, size_t errlen)
{
    if (w == 0 || h == 0 || w > DT_IMAGE_MAX_SIDE || h > DT_IMAGE_MAX_SIDE ||
        w * h > MAX_PIXELS) {
        set_err(err, errlen, path, "image is %zux%zu; dt reads images of "
                "1..%d pixels a side", w, h, DT_IMAGE_MAX_SIDE);
        return DT_ERR_INVALID;
    }
    return DT_OK;
}
#endif

/* ---- PNG ------------------------------------------------------------------ */

#ifdef DT_HAVE_PNG
typedef struct png_ctx {
    jmp_buf jump;
    char msg[256];
    const uint8_t *buf;
    size_t len, pos;
} png_ctx_t;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_ctx_t *ctx = png_get_error_ptr(png);
    snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
    longjmp(ctx->jump, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png; /* ancillary-chunk trouble (e.g. an odd iCCP profile) */
    (void)msg;
}

static void png_on_read(png_structp png, png_bytep data, size_t n)
{
    png_ctx_t *ctx = png_get_io_ptr(png);
    if (ctx->len - ctx->pos < n)
        png_error(png, "the file ends early (truncated)");
    memcpy(data, ctx->buf + ctx->pos, n);
    ctx->pos += n;
}

/* Reads what follows the image data. Every row is read by then: a file
 * missing only its end (the IEND chunk; common in scraped data sets, and
 * PIL loads it) is used, so an error here is ignored. */
static void png_read_tail(png_structp png, png_ctx_t *ctx)
{
    jmp_buf outer;
    memcpy(outer, ctx->jump, sizeof outer);
    if (!setjmp(ctx->jump))
        png_read_end(png, NULL);
    memcpy(ctx->jump, outer, sizeof outer);
}

static dt_status_t decode_png(const char *path, const uint8_t *buf,
                              size_t len, raw_image_t *out, char *err,
                              size_t errlen)
{
    png_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.buf = buf;
    ctx.len = len;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx,
                                             png_on_error, png_on_warning);
    if (!png)
        return DT_ERR_NOMEM;
    png_infop info = png_create_info_struct(png);
    uint8_t *volatile px = NULL;
    png_bytep *volatile rows = NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return DT_ERR_NOMEM;
    }
    if (setjmp(ctx.jump)) {
        png_destroy_read_struct(&png, &info, NULL);
        free(px);
        free(rows);
        set_err(err, errlen, path, "corrupt PNG: %s", ctx.msg);
        return DT_ERR_INVALID;
    }
    png_set_read_fn(png, &ctx, png_on_read);
    /* libpng's own limit would call a valid large image "Invalid IHDR
     * data": let any legal size through and check it ourselves, before
     * png_read_update_info allocates rows. */
    png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info);
    png_uint_32 h = png_get_image_height(png, info);
    dt_status_t st = check_size(path, w, h, err, errlen);
    if (st != DT_OK) {
        png_destroy_read_struct(&png, &info, NULL);
        return st;
    }
    int type = png_get_color_type(png, info);
    int depth = png_get_bit_depth(png, info);
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16)
        png_set_scale_16(png);
    /* Alpha is dropped, also the alpha a palette's tRNS expands to */
    if ((type & PNG_COLOR_MASK_ALPHA) ||
        png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int c = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (st == DT_OK && (c != 1 && c != 3))
        png_error(png, "unexpected channel count after conversion");
    if (st == DT_OK && rowbytes != (size_t)w * (size_t)c)
        png_error(png, "unexpected row size after conversion");
    if (st == DT_OK) {
        px = malloc((size_t)h * rowbytes);
        rows = malloc((size_t)h * sizeof *rows);
        if (!px || !rows)
            st = DT_ERR_NOMEM;
    }
    if (st == DT_OK) {
        for (png_uint_32 y = 0; y < h; y++)
            rows[y] = px + (size_t)y * rowbytes;
        png_read_image(png, rows);
        png_read_tail(png, &ctx);
        out->px = px;
        out->w = (int)w;
        out->h = (int)h;
        out->c = c;
        px = NULL;
    }
    png_destroy_read_struct(&png, &info, NULL);
    free(px);
    free(rows);
    return st;
}
#endif /* DT_HAVE_PNG */

/* ---- JPEG ----------------------------------------------------------------- */

#ifdef DT_HAVE_JPEG
typedef struct jpeg_ctx {
    struct jpeg_error_mgr mgr; /* first: libjpeg passes &mgr */
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int damaged; /* a warning that means the image data is damaged */
} jpeg_ctx_t;

static void jpeg_on_error(j_common_ptr cinfo)
{
    jpeg_ctx_t *ctx = (jpeg_ctx_t *)cinfo->err;
    cinfo->err->format_message(cinfo, ctx->msg);
    longjmp(ctx->jump, 1);
}

/* libjpeg reports a file cut short, damaged entropy-coded data or a
 * damaged restart marker as a warning, and fills what it lost with gray
 * (or shifts blocks): such an image is refused. Other warnings (e.g.
 * extraneous bytes between markers) leave it usable. */
static int jpeg_warning_is_damage(int code)
{
    return code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER ||
           code == JWRN_HUFF_BAD_CODE || code == JWRN_ARITH_BAD_CODE ||
           code == JWRN_MUST_RESYNC || code == JWRN_NOT_SEQUENTIAL;
}

static void jpeg_on_message(j_common_ptr cinfo, int level)
{
    jpeg_ctx_t *ctx = (jpeg_ctx_t *)cinfo->err;
    if (level != -1 || ctx->damaged)
        return;
    if (jpeg_warning_is_damage(cinfo->err->msg_code)) {
        ctx->damaged = 1;
        cinfo->err->format_message(cinfo, ctx->msg);
    }
}

static void jpeg_quiet(j_common_ptr cinfo) { (void)cinfo; }

/* A JPEG whose data is complete but whose end-of-image marker (FF D9) is
 * missing is common in scraped data sets, and PIL loads it; libjpeg,
 * looking for the marker past the buffer, would warn "Premature end of
 * JPEG file" as for a truncated file. So the marker is appended (buf has
 * JPEG_EOI_ROOM bytes to spare): a file cut inside the compressed data
 * still warns (the decoder meets the marker while it needs more bits). */
static size_t jpeg_end_marker(uint8_t *buf, size_t len)
{
    if (len >= 2 && buf[len - 2] == 0xff && buf[len - 1] == 0xd9)
        return len;
    buf[len] = 0xff;
    buf[len + 1] = 0xd9;
    return len + 2;
}

static dt_status_t decode_jpeg(const char *path, const uint8_t *buf,
                               size_t len, raw_image_t *out, char *err,
                               size_t errlen)
{
    struct jpeg_decompress_struct cinfo;
    jpeg_ctx_t ctx;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&ctx, 0, sizeof ctx);
    cinfo.err = jpeg_std_error(&ctx.mgr);
    ctx.mgr.error_exit = jpeg_on_error;
    ctx.mgr.emit_message = jpeg_on_message;
    ctx.mgr.output_message = jpeg_quiet;
    uint8_t *volatile px = NULL;
    uint8_t *volatile cmyk = NULL;
    if (setjmp(ctx.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(px);
        free(cmyk);
        set_err(err, errlen, path, "corrupt JPEG: %s", ctx.msg);
        return DT_ERR_INVALID;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, buf, (unsigned long)len);
    jpeg_read_header(&cinfo, TRUE);
    int is_cmyk = cinfo.jpeg_color_space == JCS_CMYK ||
                  cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE
                                ? JCS_GRAYSCALE
                                : is_cmyk ? JCS_CMYK : JCS_RGB;
    dt_status_t st = check_size(path, cinfo.image_width, cinfo.image_height,
                                err, errlen);
    if (st != DT_OK) {
        jpeg_destroy_decompress(&cinfo);
        return st;
    }
    jpeg_start_decompress(&cinfo);
    int w = (int)cinfo.output_width, h = (int)cinfo.output_height;
    int inc = cinfo.output_components, c = is_cmyk ? 3 : inc;
    px = malloc((size_t)w * (size_t)h * (size_t)c);
    if (is_cmyk)
        cmyk = malloc((size_t)w * 4);
    if (!px || (is_cmyk && !cmyk)) {
        jpeg_destroy_decompress(&cinfo);
        free(px);
        free(cmyk);
        return DT_ERR_NOMEM;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        size_t y = cinfo.output_scanline;
        JSAMPROW row = is_cmyk ? cmyk : px + y * (size_t)w * (size_t)c;
        jpeg_read_scanlines(&cinfo, &row, 1);
        if (!is_cmyk)
            continue;
        /* Adobe writes CMYK inverted (saw_Adobe_marker): then the values
         * are already 255 - ink. R = (255 - C)(255 - K)/255 and so on. */
        uint8_t *d = px + y * (size_t)w * 3;
        for (int x = 0; x < w; x++) {
            unsigned k = cmyk[4 * x + 3];
            if (!cinfo.saw_Adobe_marker)
                k = 255 - k;
            for (int j = 0; j < 3; j++) {
                unsigned v = cmyk[4 * x + j];
                if (!cinfo.saw_Adobe_marker)
                    v = 255 - v;
                d[3 * x + j] = (uint8_t)((v * k + 127) / 255);
            }
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(cmyk);
    if (ctx.damaged) {
        free(px);
        set_err(err, errlen, path, "corrupt JPEG: %s", ctx.msg);
        return DT_ERR_INVALID;
    }
    out->px = px;
    out->w = w;
    out->h = h;
    out->c = c;
    return DT_OK;
}
#endif /* DT_HAVE_JPEG */

static dt_status_t decode_file(const char *path, raw_image_t *img, char *err,
                               size_t errlen)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n',
                                       0x1a, '\n'};
    uint8_t *buf = NULL;
    size_t len = 0;
    memset(img, 0, sizeof *img);
    dt_status_t st = read_file(path, &buf, &len, err, errlen);
    if (st != DT_OK)
        return st;
    if (len >= 8 && memcmp(buf, png_sig, 8) == 0) {
#ifdef DT_HAVE_PNG
        st = decode_png(path, buf, len, img, err, errlen);
#else
        set_err(err, errlen, path, "is a PNG image but dt was built without "
                "PNG support: apt-get install libpng-dev, then configure "
                "and build dt again");
        st = DT_ERR_UNSUPPORTED;
#endif
    } else if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 &&
               buf[2] == 0xff) {
#ifdef DT_HAVE_JPEG
        len = jpeg_end_marker(buf, len);
        st = decode_jpeg(path, buf, len, img, err, errlen);
#else
        set_err(err, errlen, path, "is a JPEG image but dt was built without "
                "JPEG support: apt-get install libjpeg62-turbo-dev, then "
                "configure and build dt again");
        st = DT_ERR_UNSUPPORTED;
#endif
    } else {
        uint8_t b[4] = {0, 0, 0, 0};
        memcpy(b, buf, len < 4 ? len : 4);
        set_err(err, errlen, path, "not a PNG or JPEG image (the file "
                "starts with bytes %02x %02x %02x %02x)", b[0], b[1], b[2],
                b[3]);
        st = DT_ERR_INVALID;
    }
    free(buf);
    return st;
}

/* In place: h x w x c bytes to h x w x want bytes (want, c in {1, 3}). */
static dt_status_t convert_channels(raw_image_t *img, int want)
{
    size_t n = (size_t)img->w * (size_t)img->h;
    if (img->c == want)
        return DT_OK;
    if (want == 1) { /* RGB -> luma (ITU-R 601, as PIL's convert("L")) */
        for (size_t i = 0; i < n; i++) {
            const uint8_t *p = img->px + 3 * i;
            img->px[i] = (uint8_t)((299u * p[0] + 587u * p[1] + 114u * p[2] +
                                    500u) / 1000u);
        }
    } else { /* gray -> RGB */
        uint8_t *px = realloc(img->px, 3 * n);
        if (!px)
            return DT_ERR_NOMEM;
        for (size_t i = n; i-- > 0;)
            px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = px[i];
        img->px = px;
    }
    img->c = want;
    return DT_OK;
}

/* The weights of a 1-D resize of `in` samples to `out`: a triangle filter
 * of radius max(in/out, 1) input pixels centred on each output pixel,
 * normalized. first[i] is the first input index of output i, count[i] how
 * many, w[i * taps ..] their weights. */
typedef struct resize_1d {
    int taps;
    int *first, *count;
    float *w;
} resize_1d_t;

static dt_status_t resize_weights(int in, int out, resize_1d_t *r)
{
    double scale = (double)in / out;
    double support = scale > 1.0 ? scale : 1.0;
    r->taps = (int)ceil(support) * 2 + 1;
    r->first = malloc((size_t)out * sizeof *r->first);
    r->count = malloc((size_t)out * sizeof *r->count);
    r->w = calloc((size_t)out * (size_t)r->taps, sizeof *r->w);
    if (!r->first || !r->count || !r->w)
        return DT_ERR_NOMEM;
    for (int i = 0; i < out; i++) {
        double center = (i + 0.5) * scale;
        int lo = (int)floor(center - support), hi = (int)ceil(center + support);
        if (lo < 0)
            lo = 0;
        if (hi > in)
            hi = in;
        double sum = 0;
        int k = 0;
        float *w = r->w + (size_t)i * (size_t)r->taps;
        for (int j = lo; j < hi && k < r->taps; j++, k++) {
            double t = 1.0 - fabs((j + 0.5 - center) / support);
            w[k] = t > 0 ? (float)t : 0.0f;
            sum += w[k];
        }
        for (int j = 0; j < k; j++)
            w[j] = sum > 0 ? (float)(w[j] / sum) : 0.0f;
        r->first[i] = lo;
        r->count[i] = k;
    }
    return DT_OK;
}

static void resize_free(resize_1d_t *r)
{
    free(r->first);
    free(r->count);
    free(r->w);
}

/* Center crop img to spec's aspect ratio, resize to spec's size: out is
 * CHW floats in 0..255. */
static dt_status_t crop_resize(const raw_image_t *img,
                               const dt_image_spec_t *spec, float *out)
{
    int W = spec->width, H = spec->height, c = img->c;
    /* The largest centred window with the output's aspect ratio. */
    int cw = img->w, ch = img->h;
    if ((long long)img->w * H > (long long)img->h * W)
        cw = (int)(((long long)img->h * W + H / 2) / H);
    else
        ch = (int)(((long long)img->w * H + W / 2) / W);
    if (cw < 1)
        cw = 1;
    if (ch < 1)
        ch = 1;
    int x0 = (img->w - cw) / 2, y0 = (img->h - ch) / 2;
    resize_1d_t rx = {0}, ry = {0};
    float *tmp = malloc((size_t)ch * (size_t)W * (size_t)c * sizeof *tmp);
    dt_status_t st = tmp ? DT_OK : DT_ERR_NOMEM;
    if (st == DT_OK)
        st = resize_weights(cw, W, &rx);
    if (st == DT_OK)
        st = resize_weights(ch, H, &ry);
    if (st == DT_OK) {
        /* horizontal: ch rows x W x c (interleaved) */
        for (int y = 0; y < ch; y++) {
            const uint8_t *row = img->px +
                ((size_t)(y0 + y) * (size_t)img->w + (size_t)x0) * (size_t)c;
            float *t = tmp + (size_t)y * (size_t)W * (size_t)c;
            for (int x = 0; x < W; x++) {
                const float *w = rx.w + (size_t)x * (size_t)rx.taps;
                const uint8_t *s = row + (size_t)rx.first[x] * (size_t)c;
                for (int k = 0; k < c; k++) {
                    float acc = 0;
                    for (int j = 0; j < rx.count[x]; j++)
                        acc += w[j] * s[(size_t)j * (size_t)c + (size_t)k];
                    t[(size_t)x * (size_t)c + (size_t)k] = acc;
                }
            }
        }
        /* vertical, into planes */
        size_t plane = (size_t)H * (size_t)W;
        for (int y = 0; y < H; y++) {
            const float *w = ry.w + (size_t)y * (size_t)ry.taps;
            for (int x = 0; x < W; x++)
                for (int k = 0; k < c; k++) {
                    float acc = 0;
                    for (int j = 0; j < ry.count[y]; j++)
                        acc += w[j] * tmp[((size_t)(ry.first[y] + j) *
                                               (size_t)W + (size_t)x) *
                                              (size_t)c + (size_t)k];
                    out[(size_t)k * plane + (size_t)y * (size_t)W +
                        (size_t)x] = acc;
                }
        }
    }
    resize_free(&rx);
    resize_free(&ry);
    free(tmp);
    return st;
}

static dt_status_t decode_scaled(const char *path, const dt_image_spec_t *spec,
                                 float *out, char *err, size_t errlen)
{
    if (!spec || (spec->channels != 1 && spec->channels != 3) ||
        spec->height < 1 || spec->width < 1 ||
        spec->height > DT_IMAGE_MAX_SIDE || spec->width > DT_IMAGE_MAX_SIDE) {
        set_err(err, errlen, path, "bad output spec: channels must be 1 or "
                "3 and the size 1..%d a side", DT_IMAGE_MAX_SIDE);
        return DT_ERR_INVALID;
    }
    raw_image_t img;
    dt_status_t st = decode_file(path, &img, err, errlen);
    if (st == DT_OK)
        st = convert_channels(&img, spec->channels);
    if (st == DT_OK)
        st = crop_resize(&img, spec, out);
    if (st == DT_ERR_NOMEM)
        set_err(err, errlen, path, "out of memory while decoding");
    free(img.px);
    return st;
}

dt_status_t dt_image_decode(const char *path, const dt_image_spec_t *spec,
                            float *out, char *err, size_t errlen)
{
    dt_status_t st = decode_scaled(path, spec, out, err, errlen);
    if (st != DT_OK)
        return st;
    size_t n = (size_t)spec->channels * (size_t)spec->height *
               (size_t)spec->width;
    for (size_t i = 0; i < n; i++) {
        float v = out[i] * (1.0f / 255.0f);
        out[i] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    return DT_OK;
}

dt_status_t dt_image_decode_u8(const char *path, const dt_image_spec_t *spec,
                               uint8_t *out, char *err, size_t errlen)
{
    if (!spec || spec->channels < 1 || spec->height < 1 || spec->width < 1)
        return decode_scaled(path, spec, NULL, err, errlen); /* the error */
    size_t n = (size_t)spec->channels * (size_t)spec->height *
               (size_t)spec->width;
    float *f = malloc(n * sizeof *f);
    if (!f) {
        set_err(err, errlen, path, "out of memory while decoding");
        return DT_ERR_NOMEM;
    }
    dt_status_t st = decode_scaled(path, spec, f, err, errlen);
    for (size_t i = 0; st == DT_OK && i < n; i++) {
        float v = f[i] + 0.5f;
        out[i] = (uint8_t)(v < 0.0f ? 0 : v >= 255.0f ? 255 : (int)v);
    }
    free(f);
    return st;
}
