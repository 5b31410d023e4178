/* make_images.c — synthetic image data for the example and pipeline tests
 * (and the data_wait measurement in docs/TRAINING.md):
 *
 *   make_images folder DIR CLASSES TRAIN TEST SIZE FORMAT [SEED]
 *       DIR/train/cNN/iiiii.EXT (TRAIN images per class) and DIR/test/...
 *       (TEST per class); FORMAT png, jpeg or mixed (alternating). Images
 *       are SIZE x SIZE RGB, every third one 4 pixels wider (so resizing
 *       is exercised).
 *   make_images cifar FILE RECORDS [SEED]
 *       a CIFAR-10 binary batch: RECORDS records of a label byte (0..9)
 *       and 3 x 32 x 32 pixel bytes.
 *
 * Class k is easy to tell apart: a colour of its own (hue spread over the
 * classes) with a brighter square in a class-dependent corner, under
 * uniform noise of +-40 per pixel; deterministic for a seed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

static uint64_t rng_state;

static uint32_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static uint8_t clamp(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* One HWC RGB image of class k (of n classes). */
static void draw(uint8_t *px, int w, int h, int k, int n)
{
    static const int base[10][3] = {
        {200, 40, 40},  {40, 190, 60},  {50, 60, 210},  {210, 200, 40},
        {190, 50, 190}, {40, 190, 200}, {230, 130, 30}, {120, 120, 120},
        {110, 60, 20},  {240, 240, 240}};
    const int *c = base[k % 10];
    int shade = (k / 10) * 37 % 128; /* beyond 10 classes: darker shades */
    int q = k % 4, sq = (w < h ? w : h) / 3;
    int x0 = q & 1 ? w - sq : 0, y0 = q & 2 ? h - sq : 0;
    (void)n;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int in = x >= x0 && x < x0 + sq && y >= y0 && y < y0 + sq;
            for (int ch = 0; ch < 3; ch++) {
                int v = c[ch] - shade + (in ? 50 : 0) +
                        (int)(rnd() % 81) - 40;
                px[((size_t)y * (size_t)w + (size_t)x) * 3 + (size_t)ch] =
                    clamp(v);
            }
        }
}

static int write_png(const char *path, int w, int h, const uint8_t *px)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
                                            NULL, NULL);
    png_infop info = png_create_info_struct(p);
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_write_struct(&p, &info);
        fclose(f);
        return -1;
    }
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8,
                 PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(p, info);
    for (int y = 0; y < h; y++)
        png_write_row(p, (png_bytep)(px + (size_t)y * (size_t)w * 3));
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    return fclose(f);
}

static int write_jpeg(const char *path, int w, int h, const uint8_t *px)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    jpeg_start_compress(&c, TRUE);
    for (int y = 0; y < h; y++) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)y * (size_t)w * 3);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return fclose(f);
}

static int mkdir_p(const char *a, const char *b, const char *c)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", a);
    if (mkdir(p, 0755) && access(p, F_OK))
        return -1;
    if (b) {
        snprintf(p, sizeof p, "%s/%s", a, b);
        if (mkdir(p, 0755) && access(p, F_OK))
            return -1;
    }
    if (c) {
        snprintf(p, sizeof p, "%s/%s/%s", a, b, c);
        if (mkdir(p, 0755) && access(p, F_OK))
            return -1;
    }
    return 0;
}

static int folder(const char *dir, int classes, int ntrain, int ntest,
                  int size, const char *fmt)
{
    int maxw = size + 4;
    uint8_t *px = malloc((size_t)maxw * (size_t)size * 3);
    if (!px)
        return 1;
    const char *split[2] = {"train", "test"};
    int count[2] = {ntrain, ntest};
    int serial = 0;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < classes; k++) {
            char cls[16], path[4096];
            snprintf(cls, sizeof cls, "c%02d", k);
            if (mkdir_p(dir, split[s], cls)) {
                perror(dir);
                return 1;
            }
            for (int i = 0; i < count[s]; i++, serial++) {
                int w = serial % 3 == 2 ? maxw : size, h = size;
                int jpeg = strcmp(fmt, "jpeg") == 0 ||
                           (strcmp(fmt, "mixed") == 0 && serial % 2);
                draw(px, w, h, k, classes);
                snprintf(path, sizeof path, "%s/%s/%s/%05d.%s", dir,
                         split[s], cls, i, jpeg ? "jpg" : "png");
                if ((jpeg ? write_jpeg : write_png)(path, w, h, px)) {
                    perror(path);
                    return 1;
                }
            }
        }
    free(px);
    return 0;
}

static int cifar(const char *path, int records)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t hwc[32 * 32 * 3], rec[1 + 3072];
    for (int r = 0; r < records; r++) {
        int k = r % 10;
        draw(hwc, 32, 32, k, 10);
        rec[0] = (uint8_t)k;
        for (int c = 0; c < 3; c++) /* CHW, as the CIFAR files */
            for (int i = 0; i < 32 * 32; i++)
                rec[1 + c * 1024 + i] = hwc[i * 3 + c];
        if (fwrite(rec, 1, sizeof rec, f) != sizeof rec) {
            perror(path);
            fclose(f);
            return 1;
        }
    }
    return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 8 && strcmp(argv[1], "folder") == 0) {
        rng_state = argc > 8 ? strtoull(argv[8], NULL, 10) : 1;
        int classes = atoi(argv[3]), size = atoi(argv[6]);
        if (classes < 1 || classes > 99 || size < 3 ||
            (strcmp(argv[7], "png") && strcmp(argv[7], "jpeg") &&
             strcmp(argv[7], "mixed"))) {
            fprintf(stderr, "make_images: bad arguments\n");
            return 2;
        }
        return folder(argv[2], classes, atoi(argv[4]), atoi(argv[5]), size,
                      argv[7]);
    }
    if (argc >= 4 && strcmp(argv[1], "cifar") == 0) {
        rng_state = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
        return cifar(argv[2], atoi(argv[3]));
    }
    fprintf(stderr,
            "usage: make_images folder DIR CLASSES TRAIN TEST SIZE "
            "png|jpeg|mixed [SEED]\n"
            "       make_images cifar FILE RECORDS [SEED]\n");
    return 2;
}
