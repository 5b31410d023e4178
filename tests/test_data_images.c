/* test_data_images.c — CIFAR-100 and STL-10 binary readers on small
 * generated files, and the image-folder data set on a folder of PNG and
 * JPEG files the test writes itself with libpng and libjpeg: labels,
 * pixel values (PNG exactly, JPEG within a tolerance), mixed sizes,
 * grayscale/RGB/alpha mixes, a corrupt file (error names it; skip leaves
 * out exactly it), an empty class folder, and the [data] keys; decode =
 * loader (each gather decodes its samples) gives the batches of decode =
 * load bit for bit, also augmented and through the loader threads;
 * train_samples of a folder spread over its classes; palette PNGs with
 * transparency, PNGs over dt's size limit; broken links among the class
 * folders; train/ or test/ empty, a link to a target not there or a
 * stat refused (may pass) or a link loop (the layout); a damaged JPEG
 * restart marker; files missing only their end
 * (loaded) or cut inside the image data (refused); named pipes (refused,
 * not waited on); out-of-memory messages. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include <grp.h>
#include <math.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef DT_HAVE_PNG
#include <png.h>
#endif
#ifdef DT_HAVE_JPEG
#include <jpeglib.h>
#endif

#include "data/augment.h"
#include "data/dataset.h"
#include "data/image_decode.h"
#include "data/pipeline.h"
#include "stderr_capture.h"
#include "mem_room.h"

static char dir[] = "/tmp/dt-test-images-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *path_of(const char *name)
{
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static void mkdirs(const char *rel)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path_of(rel));
    assert_int_equal(system(cmd), 0);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static dt_config_t *config_with(const char *const *kv)
{
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    for (; *kv; kv += 2)
        assert_int_equal(dt_config_set(cfg, "data", kv[0], kv[1],
                                       DT_SRC_CLI, "--set"), DT_OK);
    return cfg;
}

/* ---- CIFAR-100 ------------------------------------------------------------ */

/* records of (coarse, fine, 3072 pixels); record r: coarse r % 20, fine
 * (r * 7) % 100, pixel i = (r * 3 + i) & 255. */
static void write_cifar100(const char *path, int records, size_t cut,
                           int bad_fine)
{
    size_t rec = 3074, len = (size_t)records * rec;
    unsigned char *b = calloc(1, len);
    assert_non_null(b);
    for (int r = 0; r < records; r++) {
        b[(size_t)r * rec] = (unsigned char)(r % 20);
        b[(size_t)r * rec + 1] = (unsigned char)(bad_fine && r == 1
                                                     ? 100 : (r * 7) % 100);
        for (int i = 0; i < 3072; i++)
            b[(size_t)r * rec + 2 + i] = (unsigned char)(r * 3 + i);
    }
    write_bytes(path, b, len - cut);
    free(b);
}

static void test_cifar100(void **state)
{
    (void)state;
    mkdirs("c100/cifar-100-binary");
    write_cifar100(path_of("c100/cifar-100-binary/train.bin"), 25, 0, 0);
    const char *kv[] = {"dataset", "cifar100", "path", path_of("c100"),
                        NULL};
    dt_config_t *cfg = config_with(kv);
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds), DT_OK);
    assert_int_equal(ds.n, 25);
    assert_int_equal(ds.nclasses, 100);
    assert_int_equal(ds.channels, 3);
    assert_int_equal(ds.height, 32);
    assert_int_equal(ds.sample_len, 3072);
    for (int r = 0; r < 25; r++)
        assert_int_equal(ds.labels[r], (r * 7) % 100);
    /* red (0, 0), green (5, 6), blue (31, 31) of record 21 */
    assert_int_equal(ds.pixels[21 * 3072 + 0], (21 * 3) & 255);
    assert_int_equal(ds.pixels[21 * 3072 + 1024 + 5 * 32 + 6],
                     (21 * 3 + 1024 + 5 * 32 + 6) & 255);
    assert_int_equal(ds.pixels[21 * 3072 + 3071], (21 * 3 + 3071) & 255);
    dt_dataset_free(&ds);
    assert_int_equal(dt_config_set(cfg, "data", "cifar100_labels", "coarse",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds), DT_OK);
    assert_int_equal(ds.nclasses, 20);
    assert_int_equal(ds.labels[23], 3);
    dt_dataset_free(&ds);

    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_config_set(cfg, "data", "cifar100_labels", "medium",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds),
                     DT_ERR_CONFIG);
    /* no test.bin */
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds),
                     DT_ERR_CONFIG);
    assert_int_equal(dt_config_set(cfg, "data", "cifar100_labels", "fine",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds),
                     DT_ERR_NOT_FOUND);
    const char *p[1] = {path_of("cut100.bin")};
    write_cifar100(p[0], 3, 1000, 0);
    assert_int_equal(dt_dataset_load_cifar100(p, 1, 0, &ds), DT_ERR_INVALID);
    write_cifar100(p[0], 3, 0, 1);
    assert_int_equal(dt_dataset_load_cifar100(p, 1, 0, &ds), DT_ERR_INVALID);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "cifar100_labels = 'medium'"));
    assert_non_null(strstr(log, "no CIFAR-100 binary file test.bin"));
    assert_non_null(strstr(log, "cut100.bin: truncated: record 2 has 2074 "
                                "of 3074 bytes"));
    assert_non_null(strstr(log, "9222 bytes for 3 records"));
    assert_non_null(strstr(log, "cut100.bin: record 1 has fine label 100, "
                                "out of range 0..99"));
    free(log);
    assert_null(ds.pixels);
    dt_config_free(cfg);
}

/* ---- STL-10 --------------------------------------------------------------- */

/* Pixel (c, y, x) of image n: different along y and x, so a transposed
 * read shows. */
static unsigned char stl_px(int n, int c, int y, int x)
{
    return (unsigned char)(n * 11 + c * 70 + y * 3 + x * 5 + (y * x) % 7);
}

/* n images in the file's layout: channel planes, each column-major. */
static void write_stl10(const char *xpath, const char *ypath, int n,
                        size_t cut, unsigned char label0)
{
    size_t len = (size_t)n * 27648;
    unsigned char *b = malloc(len), *l = malloc((size_t)n);
    assert_non_null(b);
    assert_non_null(l);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++)
            for (int x = 0; x < 96; x++)
                for (int y = 0; y < 96; y++)
                    b[(size_t)i * 27648 + (size_t)c * 9216 +
                      (size_t)x * 96 + (size_t)y] = stl_px(i, c, y, x);
        l[i] = (unsigned char)(i == 0 ? label0 : 1 + i % 10);
    }
    write_bytes(xpath, b, len - cut);
    write_bytes(ypath, l, (size_t)n);
    free(b);
    free(l);
}

static void test_stl10(void **state)
{
    (void)state;
    mkdirs("stl/stl10_binary");
    write_stl10(path_of("stl/stl10_binary/test_X.bin"),
                path_of("stl/stl10_binary/test_y.bin"), 3, 0, 10);
    const char *kv[] = {"dataset", "stl10", "path", path_of("stl"), NULL};
    dt_config_t *cfg = config_with(kv);
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds), DT_OK);
    assert_int_equal(ds.n, 3);
    assert_int_equal(ds.channels, 3);
    assert_int_equal(ds.height, 96);
    assert_int_equal(ds.width, 96);
    assert_int_equal(ds.sample_len, 27648);
    assert_int_equal(ds.nclasses, 10);
    assert_int_equal(ds.labels[0], 9); /* 10 in the file: truck */
    assert_int_equal(ds.labels[1], 1);
    assert_int_equal(ds.labels[2], 2);
    /* row-major CHW now: (c, y, x) at c*9216 + y*96 + x */
    const int pts[][4] = {{0, 0, 0, 1}, {2, 1, 10, 3}, {1, 2, 95, 0},
                          {0, 1, 0, 95}, {2, 2, 40, 77}};
    for (size_t k = 0; k < sizeof pts / sizeof *pts; k++) {
        int n = pts[k][0], c = pts[k][1], y = pts[k][2], x = pts[k][3];
        assert_int_equal(ds.pixels[(size_t)n * 27648 + (size_t)c * 9216 +
                                   (size_t)y * 96 + (size_t)x],
                         stl_px(n, c, y, x));
    }
    for (size_t i = 0; i < ds.n * ds.sample_len; i++) {
        size_t n = i / 27648, c = i / 9216 % 3, y = i / 96 % 96, x = i % 96;
        if (ds.pixels[i] != stl_px((int)n, (int)c, (int)y, (int)x))
            fail_msg("pixel %zu (n %zu c %zu y %zu x %zu) is %u", i, n, c, y,
                     x, ds.pixels[i]);
    }
    dt_dataset_free(&ds);

    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds),
                     DT_ERR_NOT_FOUND);
    write_stl10(path_of("sx.bin"), path_of("sy.bin"), 2, 100, 1);
    assert_int_equal(dt_dataset_load_stl10(path_of("sx.bin"),
                                           path_of("sy.bin"), &ds),
                     DT_ERR_INVALID);
    write_stl10(path_of("sx.bin"), path_of("sy.bin"), 2, 0, 0);
    assert_int_equal(dt_dataset_load_stl10(path_of("sx.bin"),
                                           path_of("sy.bin"), &ds),
                     DT_ERR_INVALID);
    write_stl10(path_of("sx.bin"), path_of("sy.bin"), 2, 0, 1);
    write_bytes(path_of("sy.bin"), "\001", 1); /* 1 label, 2 images */
    assert_int_equal(dt_dataset_load_stl10(path_of("sx.bin"),
                                           path_of("sy.bin"), &ds),
                     DT_ERR_INVALID);
    char *log = capture_end(&cap);
    assert_non_null(strstr(log, "no STL-10 binary file train_X.bin"));
    assert_non_null(strstr(log, "sx.bin: truncated: "));
    assert_non_null(strstr(log, "has 2 labels, so the file should hold 2 "
                                "images of 3x96x96 bytes (55296 bytes), but "
                                "it ends after 55196 bytes"));
    assert_non_null(strstr(log, "sy.bin: label 0 of image 0 is out of range "
                                "1..10"));
    assert_non_null(strstr(log, "sx.bin: is longer than expected: "));
    assert_non_null(strstr(log, "sy.bin has 1 labels, so the file should "
                                "be 27648 bytes"));
    free(log);
    assert_null(ds.pixels);
    dt_config_free(cfg);
}

/* ---- image folders -------------------------------------------------------- */

#if defined(DT_HAVE_PNG) && defined(DT_HAVE_JPEG)
#define HAVE_CODECS 1

/* h x w x ch interleaved bytes; ch 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA */
static void write_png(const char *path, int w, int h, int ch,
                      const uint8_t *px)
{
    static const int types[] = {0, PNG_COLOR_TYPE_GRAY,
                                PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                PNG_COLOR_TYPE_RGB_ALPHA};
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
                                            NULL, NULL);
    png_infop info = png_create_info_struct(p);
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8, types[ch],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(p, info);
    for (int y = 0; y < h; y++)
        png_write_row(p, px + (size_t)y * (size_t)w * (size_t)ch);
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    fclose(f);
}

static void write_jpeg(const char *path, int w, int h, int ch,
                       const uint8_t *px)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = ch;
    c.in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 95, TRUE);
    jpeg_start_compress(&c, TRUE);
    for (int y = 0; y < h; y++) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)y * (size_t)w * (size_t)ch);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
}

/* The pixels the files hold (and what they must decode to at 4x4). */
static uint8_t a_px(int x, int y, int c) /* train/cat/a.png, 4x4 RGB */
{
    return (uint8_t)(16 * (y * 4 + x) + 5 * c);
}
static uint8_t c_px(int x, int y) /* train/dog/c.png, 4x4 gray */
{
    return (uint8_t)(200 - 12 * (y * 4 + x));
}
static uint8_t d_px(int x, int y, int c) /* train/dog/d.png, 8x4 RGBA */
{
    return (uint8_t)(x * 30 + y * 7 + c * 3);
}
static const uint8_t b_rgb[3] = {200, 100, 50}; /* train/cat/b.jpg, flat */

static size_t png_bytes(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* The folder: train/cat/{a.png, b.jpg, notes.txt}, train/dog/{c.png,
 * d.png}, test/cat/t.png (2x2), test/dog/u.jpg (gray 16x8); with
 * `corrupt`, train/cat/zz_bad.png is a PNG cut in half. */
static void make_folder(const char *root, int corrupt)
{
    char rel[256];
    const char *sub[] = {"train/cat", "train/dog", "test/cat", "test/dog"};
    for (int i = 0; i < 4; i++) {
        snprintf(rel, sizeof rel, "%s/%s", root, sub[i]);
        mkdirs(rel);
    }
    uint8_t px[16 * 8 * 4];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            for (int c = 0; c < 3; c++)
                px[(y * 4 + x) * 3 + c] = a_px(x, y, c);
    snprintf(rel, sizeof rel, "%s/train/cat/a.png", root);
    write_png(path_of(rel), 4, 4, 3, px);
    for (int i = 0; i < 8 * 8; i++)
        memcpy(px + 3 * i, b_rgb, 3);
    snprintf(rel, sizeof rel, "%s/train/cat/b.jpg", root);
    write_jpeg(path_of(rel), 8, 8, 3, px);
    snprintf(rel, sizeof rel, "%s/train/cat/notes.txt", root);
    write_bytes(path_of(rel), "not an image\n", 13);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            px[y * 4 + x] = c_px(x, y);
    snprintf(rel, sizeof rel, "%s/train/dog/c.png", root);
    write_png(path_of(rel), 4, 4, 1, px);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++) {
            for (int c = 0; c < 3; c++)
                px[(y * 8 + x) * 4 + c] = d_px(x, y, c);
            px[(y * 8 + x) * 4 + 3] = (uint8_t)(x * 30); /* alpha */
        }
    snprintf(rel, sizeof rel, "%s/train/dog/d.png", root);
    write_png(path_of(rel), 8, 4, 4, px);
    memset(px, 90, 4);
    snprintf(rel, sizeof rel, "%s/test/cat/t.png", root);
    write_png(path_of(rel), 2, 2, 1, px);
    memset(px, 77, 16 * 8);
    snprintf(rel, sizeof rel, "%s/test/dog/u.jpg", root);
    write_jpeg(path_of(rel), 16, 8, 1, px);
    if (corrupt) {
        uint8_t buf[4096];
        snprintf(rel, sizeof rel, "%s/train/dog/d.png", root);
        size_t n = png_bytes(path_of(rel), buf, sizeof buf);
        snprintf(rel, sizeof rel, "%s/train/cat/zz_bad.png", root);
        write_bytes(path_of(rel), buf, n / 2);
    }
}

static dt_folder_opts_t opts_rgb4 = {3, 4, 4, 0, 0};

static void test_folder_pixels(void **state)
{
    (void)state;
    make_folder("f1", 0);
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load_folder(path_of("f1"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds), DT_OK);
    assert_int_equal(ds.n, 4);
    assert_int_equal(ds.nclasses, 2);
    assert_string_equal(ds.class_names[0], "cat");
    assert_string_equal(ds.class_names[1], "dog");
    assert_int_equal(ds.channels, 3);
    assert_int_equal(ds.sample_len, 48);
    const uint8_t want_labels[4] = {0, 0, 1, 1};
    assert_memory_equal(ds.labels, want_labels, 4);
    assert_int_equal(ds.npaths, 4);
    assert_string_equal(ds.paths[0], path_of("f1/train/cat/a.png"));
    assert_string_equal(ds.paths[1], path_of("f1/train/cat/b.jpg"));
    assert_string_equal(ds.paths[3], path_of("f1/train/dog/d.png"));
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++) {
                int i = c * 16 + y * 4 + x;
                /* PNG, same size: exact */
                assert_int_equal(ds.pixels[i], a_px(x, y, c));
                /* flat JPEG 8x8 -> 4x4: within 3 */
                assert_true(abs(ds.pixels[48 + i] - b_rgb[c]) <= 3);
                /* gray PNG -> RGB: the plane thrice */
                assert_int_equal(ds.pixels[96 + i], c_px(x, y));
                /* 8x4 RGBA: alpha dropped, center 4x4 (x = 2..5) */
                assert_int_equal(ds.pixels[144 + i], d_px(x + 2, y, c));
            }
    dt_dataset_free(&ds);

    /* test split: labels from train/'s classes; 2x2 and 16x8 images */
    assert_int_equal(dt_dataset_load_folder(path_of("f1"), DT_SPLIT_TEST,
                                            &opts_rgb4, &ds), DT_OK);
    assert_int_equal(ds.n, 2);
    assert_int_equal(ds.nclasses, 2);
    assert_int_equal(ds.labels[0], 0);
    assert_int_equal(ds.labels[1], 1);
    for (int i = 0; i < 48; i++) {
        assert_int_equal(ds.pixels[i], 90);
        assert_true(abs(ds.pixels[48 + i] - 77) <= 2);
    }
    dt_dataset_free(&ds);

    /* one channel: RGB as ITU-R 601 luma, gray as it is */
    dt_folder_opts_t gray = {1, 4, 4, 0, 0};
    assert_int_equal(dt_dataset_load_folder(path_of("f1"), DT_SPLIT_TRAIN,
                                            &gray, &ds), DT_OK);
    assert_int_equal(ds.sample_len, 16);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            unsigned luma = (299u * a_px(x, y, 0) + 587u * a_px(x, y, 1) +
                             114u * a_px(x, y, 2) + 500u) / 1000u;
            assert_int_equal(ds.pixels[y * 4 + x], luma);
            assert_int_equal(ds.pixels[32 + y * 4 + x], c_px(x, y));
        }
    dt_dataset_free(&ds);

    /* the per-sample decode on its own: floats pixel/255, CHW */
    dt_image_spec_t spec = {3, 4, 4};
    float f[48];
    char err[256];
    assert_int_equal(dt_image_decode(path_of("f1/train/dog/d.png"), &spec, f,
                                     err, sizeof err), DT_OK);
    for (int c = 0; c < 3; c++)
        assert_true(fabsf(f[c * 16 + 2 * 4 + 1] -
                          d_px(1 + 2, 2, c) / 255.0f) < 1e-5f);
    /* a flat 2x2 image stays flat enlarged to any size (7x5) */
    dt_image_spec_t big = {3, 7, 5};
    float g[3 * 7 * 5];
    assert_int_equal(dt_image_decode(path_of("f1/test/cat/t.png"), &big, g,
                                     err, sizeof err), DT_OK);
    for (int i = 0; i < 3 * 7 * 5; i++)
        assert_true(fabsf(g[i] - 90 / 255.0f) < 1e-5f);
}

static void test_folder_bad_images(void **state)
{
    (void)state;
    make_folder("f2", 1);
    const char *bad = path_of("f2/train/cat/zz_bad.png");
    dt_dataset_t ds;
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_dataset_load_folder(path_of("f2"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds), DT_ERR_INVALID);
    char *log = capture_end(&c);
    char want[700];
    snprintf(want, sizeof want, "%s: corrupt PNG: ", bad);
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, "truncated"));
    assert_non_null(strstr(log, "bad_images = skip"));
    free(log);
    assert_null(ds.pixels);

    /* skip: exactly that file is left out, one line names it */
    dt_folder_opts_t skip = opts_rgb4;
    skip.skip_bad = 1;
    capture_begin(&c);
    assert_int_equal(dt_dataset_load_folder(path_of("f2"), DT_SPLIT_TRAIN,
                                            &skip, &ds), DT_OK);
    log = capture_end(&c);
    snprintf(want, sizeof want, "skipping %s: corrupt PNG", bad);
    assert_non_null(strstr(log, want));
    assert_null(strstr(strstr(log, want) + 1, "skipping"));
    free(log);
    assert_int_equal(ds.n, 4);
    assert_int_equal(ds.npaths, 4);
    const char *names[4] = {"f2/train/cat/a.png", "f2/train/cat/b.jpg",
                            "f2/train/dog/c.png", "f2/train/dog/d.png"};
    const uint8_t want_labels[4] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++)
        assert_string_equal(ds.paths[i], path_of(names[i]));
    assert_memory_equal(ds.labels, want_labels, 4);
    assert_int_equal(ds.pixels[144 + 5], d_px(1 + 2, 1, 0));
    dt_dataset_free(&ds);

    /* many bad files: 10 named, then a count */
    mkdirs("f3/train/a");
    mkdirs("f3/train/b");
    uint8_t px[4] = {1, 2, 3, 4};
    write_png(path_of("f3/train/a/ok.png"), 2, 2, 1, px);
    write_png(path_of("f3/train/b/ok.png"), 2, 2, 1, px);
    for (int i = 0; i < 13; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "f3/train/b/bad%02d.jpg", i);
        write_bytes(path_of(rel), "<html>oops</html>", 17);
    }
    capture_begin(&c);
    assert_int_equal(dt_dataset_load_folder(path_of("f3"), DT_SPLIT_TRAIN,
                                            &skip, &ds), DT_OK);
    log = capture_end(&c);
    int lines = 0;
    for (char *p = log; (p = strstr(p, "skipping ")); p++)
        lines++;
    assert_int_equal(lines, 10);
    assert_non_null(strstr(log, "bad09.jpg: not a PNG or JPEG image (the "
                                "file starts with bytes 3c 68 74 6d)"));
    assert_null(strstr(log, "bad10.jpg: not"));
    assert_non_null(strstr(log, "skipped 3 more unreadable images"));
    assert_non_null(strstr(log, "(13 in all)"));
    free(log);
    assert_int_equal(ds.n, 2);
    dt_dataset_free(&ds);

    /* a class whose every image is unreadable */
    assert_int_equal(unlink(path_of("f3/train/b/ok.png")), 0);
    capture_begin(&c);
    assert_int_equal(dt_dataset_load_folder(path_of("f3"), DT_SPLIT_TRAIN,
                                            &skip, &ds), DT_ERR_INVALID);
    log = capture_end(&c);
    assert_non_null(strstr(log, "f3/train/b: all 13 images of this class "
                                "were skipped"));
    free(log);

    /* a truncated JPEG and an empty file, decoded on their own */
    uint8_t buf[8192];
    size_t n = png_bytes(path_of("f2/train/cat/b.jpg"), buf, sizeof buf);
    write_bytes(path_of("cut.jpg"), buf, n - n / 3);
    write_bytes(path_of("empty.png"), "", 0);
    dt_image_spec_t spec = {3, 4, 4};
    float f[48];
    char err[512];
    assert_int_equal(dt_image_decode(path_of("cut.jpg"), &spec, f, err,
                                     sizeof err), DT_ERR_INVALID);
    snprintf(want, sizeof want, "%s: corrupt JPEG: ", path_of("cut.jpg"));
    assert_non_null(strstr(err, want));
    assert_int_equal(dt_image_decode(path_of("empty.png"), &spec, f, err,
                                     sizeof err), DT_ERR_INVALID);
    assert_non_null(strstr(err, "empty.png: is empty"));
    assert_int_equal(dt_image_decode(path_of("nothere.png"), &spec, f, err,
                                     sizeof err), DT_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "nothere.png: cannot open"));
}

static void test_folder_layout_errors(void **state)
{
    (void)state;
    make_folder("f4", 0);
    dt_dataset_t ds;
    capture_t c;
    capture_begin(&c);
    /* an empty class folder */
    mkdirs("f4/train/eel");
    assert_int_equal(dt_dataset_load_folder(path_of("f4"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds), DT_ERR_INVALID);
    assert_int_equal(rmdir(path_of("f4/train/eel")), 0);
    /* a test class that training lacks */
    mkdirs("f4/test/fox");
    assert_int_equal(dt_dataset_load_folder(path_of("f4"), DT_SPLIT_TEST,
                                            &opts_rgb4, &ds), DT_ERR_INVALID);
    assert_int_equal(rmdir(path_of("f4/test/fox")), 0);
    /* no test/ beside train/: the layout, not a missing path */
    assert_int_equal(rename(path_of("f4/test"), path_of("f4/test-off")), 0);
    assert_int_equal(dt_dataset_load_folder(path_of("f4"), DT_SPLIT_TEST,
                                            &opts_rgb4, &ds), DT_ERR_INVALID);
    assert_int_equal(rename(path_of("f4/test-off"), path_of("f4/test")), 0);
    /* no train/ in a folder of other things (the path names train/
     * itself): the layout, which a restart meets again; in a missing or
     * empty folder (storage not mounted yet): not found, which may pass */
    mkdirs("f5/train");
    mkdirs("f4e");
    assert_int_equal(dt_dataset_load_folder(path_of("f4/train"),
                                            DT_SPLIT_TRAIN, &opts_rgb4, &ds),
                     DT_ERR_INVALID);
    assert_int_equal(dt_dataset_load_folder(path_of("f4e"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds),
                     DT_ERR_NOT_FOUND);
    assert_int_equal(dt_dataset_load_folder(path_of("f4-gone"),
                                            DT_SPLIT_TRAIN, &opts_rgb4, &ds),
                     DT_ERR_NOT_FOUND);
    /* an empty train/ or test/ (a mount point, its storage not mounted
     * yet), or one holding only lost+found: may pass, as an empty data
     * folder; a data folder holding only lost+found and hidden entries
     * (a fresh volume) is empty too */
    assert_int_equal(dt_dataset_load_folder(path_of("f5"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds),
                     DT_ERR_NOT_FOUND);
    mkdirs("f5/train/lost+found");
    assert_int_equal(dt_dataset_load_folder(path_of("f5"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds),
                     DT_ERR_NOT_FOUND);
    assert_int_equal(rename(path_of("f4/test"), path_of("f4/test-off")), 0);
    mkdirs("f4/test");
    assert_int_equal(dt_dataset_load_folder(path_of("f4"), DT_SPLIT_TEST,
                                            &opts_rgb4, &ds),
                     DT_ERR_NOT_FOUND);
    assert_int_equal(rmdir(path_of("f4/test")), 0);
    assert_int_equal(rename(path_of("f4/test-off"), path_of("f4/test")), 0);
    mkdirs("f4v/lost+found");
    mkdirs("f4v/.snapshot");
    assert_int_equal(dt_dataset_load_folder(path_of("f4v"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds),
                     DT_ERR_NOT_FOUND);
    /* no class folders, only images: the layout */
    write_bytes(path_of("f5/train/1.png"), "x", 1);
    assert_int_equal(dt_dataset_load_folder(path_of("f5"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds), DT_ERR_INVALID);
    /* lost+found is never a class (a volume mounted at train/) */
    make_folder("f4l", 0);
    mkdirs("f4l/train/lost+found");
    mkdirs("f4l/test/lost+found");
    assert_int_equal(dt_dataset_load_folder(path_of("f4l"), DT_SPLIT_TEST,
                                            &opts_rgb4, &ds), DT_OK);
    assert_int_equal(ds.nclasses, 2);
    dt_dataset_free(&ds);
    /* one class: nothing to classify (dtctl leaves it to this message) */
    mkdirs("f5b/train/only");
    assert_int_equal(dt_dataset_load_folder(path_of("f5b"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &ds), DT_ERR_INVALID);
    char *log = capture_end(&c);
    char want[700];
    snprintf(want, sizeof want, "%s: empty class folder",
             path_of("f4/train/eel"));
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, "f4/test/fox: a class that"));
    assert_non_null(strstr(log, "no train/ folder there"));
    assert_non_null(strstr(log, "f5/train: an empty folder, no class "
                                "folders (may pass: its storage not mounted "
                                "yet?)"));
    assert_non_null(strstr(log, "f4/test: an empty folder"));
    assert_non_null(strstr(log, "f5/train: no class folders: put each"));
    assert_non_null(strstr(log, "f5b/train: one class folder ('only'): a "
                                "classifier needs at least 2 classes"));
    free(log);
    assert_null(ds.pixels);
}

static void test_folder_config(void **state)
{
    (void)state;
    make_folder("f6", 1);
    const char *kv[] = {"dataset", "folder", "path", path_of("f6"),
                        "image_size", "4", "bad_images", "skip",
                        "mean", "0.5", "std", "0.5", NULL};
    dt_config_t *cfg = config_with(kv);
    dt_dataset_t ds;
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds), DT_OK);
    free(capture_end(&c));
    assert_int_equal(ds.n, 4);
    assert_int_equal(ds.channels, 3);
    assert_int_equal(ds.height, 4);
    assert_true(fabsf(ds.std[2] - 0.5f) < 1e-6f);
    dt_dataset_free(&ds);
    assert_int_equal(dt_config_set(cfg, "data", "image_size", "2x3",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_config_set(cfg, "data", "channels", "1", DT_SRC_CLI,
                                   "--set"), DT_OK);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds), DT_OK);
    assert_int_equal(ds.height, 2);
    assert_int_equal(ds.width, 3);
    assert_int_equal(ds.sample_len, 6);
    dt_dataset_free(&ds);
    /* dtctl's side: the same keys, the shape they give */
    int shape[3];
    assert_int_equal(dt_dataset_check_config(cfg), DT_OK);
    assert_int_equal(dt_dataset_config_shape(cfg, shape), DT_OK);
    assert_int_equal(shape[0] * 10000 + shape[1] * 100 + shape[2], 10203);

    /* each refused by the workers (dt_dataset_load) and by dtctl
     * (dt_dataset_check_config) alike */
    const char *bad[][2] = {{"image_size", "4x"}, {"image_size", "0"},
                            {"channels", "2"}, {"bad_images", "ignore"},
                            {"decode", "loader"}};
    capture_begin(&c);
    for (size_t i = 0; i < 5; i++) {
        dt_config_t *b = config_with(kv);
        assert_int_equal(dt_config_set(b, "data", bad[i][0], bad[i][1],
                                       DT_SRC_CLI, "--set"), DT_OK);
        assert_int_equal(dt_dataset_load(b, DT_SPLIT_TRAIN, &ds),
                         DT_ERR_CONFIG);
        assert_int_equal(dt_dataset_check_config(b), DT_ERR_CONFIG);
        dt_config_free(b);
    }
    const char *nosize[] = {"dataset", "folder", "path", path_of("f6"),
                            NULL};
    dt_config_t *b = config_with(nosize);
    assert_int_equal(dt_dataset_load(b, DT_SPLIT_TRAIN, &ds), DT_ERR_CONFIG);
    assert_int_equal(dt_dataset_check_config(b), DT_ERR_CONFIG);
    assert_int_equal(dt_dataset_config_shape(b, shape), DT_ERR_NOT_FOUND);
    dt_config_free(b);
    /* channels is the folder's: elsewhere it may only confirm */
    const char *stl[] = {"dataset", "stl10", "path", path_of("stl"),
                         "channels", "1", NULL};
    b = config_with(stl);
    assert_int_equal(dt_dataset_load(b, DT_SPLIT_TEST, &ds), DT_ERR_CONFIG);
    assert_int_equal(dt_dataset_check_config(b), DT_ERR_CONFIG);
    dt_config_free(b);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "--set: [data] image_size = '4x': give N"));
    assert_non_null(strstr(log, "image_size = '0'"));
    assert_non_null(strstr(log, "--set: [data] channels = 2: use 1 "
                                "(grayscale) or 3"));
    assert_non_null(strstr(log, "--set: [data] bad_images = 'ignore'"));
    assert_non_null(strstr(log, "--set: [data] bad_images = skip needs "
                                "decode = load (--set: decode = loader)"));
    assert_non_null(strstr(log, "image_size is not set"));
    assert_non_null(strstr(log, "--set: [data] channels = 1, but stl10 "
                                "images have 3"));
    free(log);
    dt_config_free(cfg);
}

/* ---- decode = loader ------------------------------------------------------ */

/* 3 classes x 8 images of assorted sizes, PNG and JPEG (RGB and gray). */
static void make_mixed_folder(const char *root)
{
    uint8_t px[12 * 10 * 3];
    char rel[256];
    for (int k = 0; k < 3; k++) {
        snprintf(rel, sizeof rel, "%s/train/k%d", root, k);
        mkdirs(rel);
        for (int i = 0; i < 8; i++) {
            int w = 6 + (i % 3) * 3, h = 6 + (i % 2) * 4;
            int ch = i % 4 == 3 ? 1 : 3;
            for (int j = 0; j < w * h * ch; j++)
                px[j] = (uint8_t)(k * 70 + j * 13 + i * 29);
            snprintf(rel, sizeof rel, "%s/train/k%d/%02d.%s", root, k, i,
                     i % 2 ? "jpg" : "png");
            if (i % 2)
                write_jpeg(path_of(rel), w, h, ch, px);
            else
                write_png(path_of(rel), w, h, ch, px);
        }
    }
}

static void test_folder_decode_loader(void **state)
{
    (void)state;
    make_mixed_folder("dl");
    dt_folder_opts_t o = {3, 5, 5, 0, 0}, lz = o;
    lz.lazy = 1;
    dt_dataset_t a, b;
    assert_int_equal(dt_dataset_load_folder(path_of("dl"), DT_SPLIT_TRAIN,
                                            &o, &a), DT_OK);
    assert_int_equal(dt_dataset_load_folder(path_of("dl"), DT_SPLIT_TRAIN,
                                            &lz, &b), DT_OK);
    assert_false(a.decode_on_gather);
    assert_true(b.decode_on_gather);
    assert_null(b.pixels); /* nothing decoded yet */
    assert_int_equal(a.n, 24);
    assert_int_equal(b.n, 24);
    assert_int_equal(b.nclasses, 3);
    assert_int_equal(b.sample_len, 75);
    assert_memory_equal(a.labels, b.labels, 24);
    for (size_t i = 0; i < 24; i++)
        assert_string_equal(a.paths[i], b.paths[i]);
    float mean[3] = {0.4f, 0.5f, 0.3f}, std[3] = {0.2f, 0.3f, 0.25f};
    assert_int_equal(dt_dataset_set_norm(&a, mean, 3, std, 3), DT_OK);
    assert_int_equal(dt_dataset_set_norm(&b, mean, 3, std, 3), DT_OK);

    /* the plain gather, every sample in a shuffled order */
    size_t idx[24];
    for (size_t i = 0; i < 24; i++)
        idx[i] = (i * 7 + 3) % 24;
    float xa[24 * 75], xb[24 * 75];
    int32_t ya[24], yb[24];
    assert_int_equal(dt_dataset_gather(&a, idx, 24, xa, ya), DT_OK);
    assert_int_equal(dt_dataset_gather(&b, idx, 24, xb, yb), DT_OK);
    assert_memory_equal(xa, xb, sizeof xa);
    assert_memory_equal(ya, yb, sizeof ya);

    /* augmented */
    dt_augment_t aug = {.crop_pad = 2, .hflip = true, .seed = 9};
    uint8_t scratch[75];
    for (uint64_t e = 0; e < 3; e++) {
        memset(xb, 0, sizeof xb);
        assert_int_equal(dt_augment_gather(&a, &aug, e, idx, 24, scratch,
                                           xa, ya), DT_OK);
        assert_int_equal(dt_augment_gather(&b, &aug, e, idx, 24, scratch,
                                           xb, yb), DT_OK);
        assert_memory_equal(xa, xb, sizeof xa);
        assert_memory_equal(ya, yb, sizeof ya);
    }

    /* through the pipeline: 2 loader threads decoding vs the cache, two
     * epochs of batches of 5 (the last of an epoch smaller) */
    dt_pipeline_opts_t po = {.batch = 5, .rank = 1, .world = 2, .seed = 3,
                             .end_epoch = 2, .threads = 2, .prefetch = 3,
                             .aug = aug};
    dt_pipeline_t *pa = NULL, *pb = NULL;
    po.threads = 0;
    assert_int_equal(dt_pipeline_new(&a, &po, &pa), DT_OK);
    po.threads = 2;
    assert_int_equal(dt_pipeline_new(&b, &po, &pb), DT_OK);
    assert_int_equal(dt_pipeline_seek(pa, 0, 0), DT_OK);
    assert_int_equal(dt_pipeline_seek(pb, 0, 0), DT_OK);
    uint64_t steps = dt_pipeline_steps(pa);
    assert_int_equal(steps, 3);
    for (uint64_t s = 0; s < 2 * steps; s++) {
        dt_batch_t ba, bb;
        assert_int_equal(dt_pipeline_next(pa, &ba, NULL), DT_OK);
        assert_int_equal(dt_pipeline_next(pb, &bb, NULL), DT_OK);
        assert_int_equal(ba.count, bb.count);
        assert_int_equal(ba.epoch, bb.epoch);
        assert_int_equal(ba.step, bb.step);
        assert_memory_equal(ba.x, bb.x, ba.count * 75 * sizeof(float));
        assert_memory_equal(ba.y, bb.y, ba.count * sizeof(int32_t));
    }
    dt_pipeline_free(pa);
    dt_pipeline_free(pb);
    dt_dataset_free(&a);

    /* an image that went bad after the listing: the batch that needs it
     * fails, naming it, in the loader thread as in the step, with a
     * status of its own (the pipeline's own errors are DT_ERR_INVALID;
     * dt-train exits 65 for this one, not restarted) */
    write_bytes(path_of("dl/train/k1/04.png"), "\x89PNG\r\n\x1a\nxx", 10);
    capture_t c;
    capture_begin(&c);
    size_t one = 8 + 4;
    assert_int_equal(dt_dataset_gather(&b, &one, 1, xb, yb), DT_ERR_BAD_DATA);
    po.threads = 1;
    po.aug.crop_pad = 0;
    po.aug.hflip = false;
    po.batch = 24;
    po.world = 1;
    po.rank = 0;
    assert_int_equal(dt_pipeline_new(&b, &po, &pb), DT_OK);
    assert_int_equal(dt_pipeline_seek(pb, 0, 0), DT_OK);
    dt_batch_t bb;
    assert_int_equal(dt_pipeline_next(pb, &bb, NULL), DT_ERR_BAD_DATA);
    dt_pipeline_free(pb);
    char *log = capture_end(&c);
    char want[700];
    snprintf(want, sizeof want, "%s: corrupt PNG",
             path_of("dl/train/k1/04.png"));
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, "decode = loader decodes each image when"));
    free(log);
    dt_dataset_free(&b);

    /* bad_images = skip needs the images read at load */
    lz.skip_bad = 1;
    capture_begin(&c);
    assert_int_equal(dt_dataset_load_folder(path_of("dl"), DT_SPLIT_TRAIN,
                                            &lz, &b), DT_ERR_CONFIG);
    log = capture_end(&c);
    assert_non_null(strstr(log, "bad_images = skip needs decode = load"));
    free(log);

    /* the [data] key */
    const char *kv[] = {"dataset", "folder", "path", path_of("dl"),
                        "image_size", "5", "decode", "loader", NULL};
    dt_config_t *cfg = config_with(kv);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &b), DT_OK);
    assert_true(b.decode_on_gather);
    assert_int_equal(b.n, 24);
    dt_dataset_free(&b);
    assert_int_equal(dt_config_set(cfg, "data", "decode", "lazy", DT_SRC_CLI,
                                   "--set"), DT_OK);
    capture_begin(&c);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &b), DT_ERR_CONFIG);
    log = capture_end(&c);
    assert_non_null(strstr(log, "[data] decode = 'lazy': use load"));
    free(log);
    dt_config_free(cfg);
}
/* ---- subsets and unusual PNGs --------------------------------------------- */

/* train_samples on a folder, stored class by class, keeps samples spread
 * over the list (floor(k * n / N)), not the first class's: 2 of cat/a,
 * cat/b, dog/c, dog/d are a and c, with their paths and pixels, for
 * decode = load and loader; 5 of 3 classes x 8 hold every class. */
static void test_folder_subset(void **state)
{
    (void)state;
    make_folder("sub", 0);
    dt_dataset_t full, ds;
    assert_int_equal(dt_dataset_load_folder(path_of("sub"), DT_SPLIT_TRAIN,
                                            &opts_rgb4, &full), DT_OK);
    const char *kv[] = {"dataset", "folder", "path", path_of("sub"),
                        "image_size", "4", "train_samples", "2", NULL};
    dt_config_t *cfg = config_with(kv);
    for (int lazy = 0; lazy < 2; lazy++) {
        assert_int_equal(dt_config_set(cfg, "data", "decode",
                                       lazy ? "loader" : "load", DT_SRC_CLI,
                                       "--set"), DT_OK);
        assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds), DT_OK);
        assert_int_equal(ds.n, 2);
        assert_int_equal(ds.npaths, 2);
        assert_int_equal(ds.labels[0], 0);
        assert_int_equal(ds.labels[1], 1);
        assert_string_equal(ds.paths[0], full.paths[0]);
        assert_string_equal(ds.paths[1], full.paths[2]);
        size_t idx[2] = {0, 1}, want[2] = {0, 2};
        float x[96], xf[96];
        int32_t y[2], yf[2];
        assert_int_equal(dt_dataset_gather(&ds, idx, 2, x, y), DT_OK);
        assert_int_equal(dt_dataset_gather(&full, want, 2, xf, yf), DT_OK);
        assert_memory_equal(x, xf, sizeof x);
        assert_memory_equal(y, yf, sizeof y);
        dt_dataset_free(&ds);
    }
    dt_dataset_free(&full);
    dt_config_free(cfg);

    make_mixed_folder("sub3");
    const char *kv3[] = {"dataset", "folder", "path", path_of("sub3"),
                         "image_size", "5", "train_samples", "5", NULL};
    cfg = config_with(kv3);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds), DT_OK);
    const uint8_t labels[5] = {0, 0, 1, 1, 2}; /* samples 0 4 9 14 19 */
    assert_int_equal(ds.n, 5);
    assert_memory_equal(ds.labels, labels, 5);
    assert_string_equal(ds.paths[2], path_of("sub3/train/k1/01.jpg"));
    assert_string_equal(ds.paths[4], path_of("sub3/train/k2/03.jpg"));
    dt_dataset_free(&ds);
    dt_config_free(cfg);
}

/* A palette PNG with a tRNS chunk (transparent entries): libpng expands
 * it to RGBA; the alpha is dropped like any other, the colours kept. */
static void test_png_palette_trns(void **state)
{
    (void)state;
    const png_color pal[3] = {{255, 0, 0}, {0, 128, 255}, {10, 20, 30}};
    const png_byte trans[2] = {0, 128};
    FILE *f = fopen(path_of("pal.png"), "wb");
    assert_non_null(f);
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
                                            NULL, NULL);
    png_infop info = png_create_info_struct(p);
    png_init_io(p, f);
    png_set_IHDR(p, info, 4, 4, 8, PNG_COLOR_TYPE_PALETTE,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_PLTE(p, info, pal, 3);
    png_set_tRNS(p, info, trans, 2, NULL);
    png_write_info(p, info);
    uint8_t row[4];
    for (int y = 0; y < 4; y++) {
        for (int x = 0; x < 4; x++)
            row[x] = (uint8_t)((x + y) % 3);
        png_write_row(p, row);
    }
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    fclose(f);

    dt_image_spec_t spec = {3, 4, 4};
    uint8_t px[48];
    char err[512] = "";
    assert_int_equal(dt_image_decode_u8(path_of("pal.png"), &spec, px, err,
                                        sizeof err), DT_OK);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            const png_color *c = &pal[(x + y) % 3];
            assert_int_equal(px[0 * 16 + y * 4 + x], c->red);
            assert_int_equal(px[1 * 16 + y * 4 + x], c->green);
            assert_int_equal(px[2 * 16 + y * 4 + x], c->blue);
        }
}

/* A gray PNG of w x h (one byte per pixel, value 7). */
static void write_gray_png(const char *path, int w, int h)
{
    uint8_t *px = malloc((size_t)w * (size_t)h);
    assert_non_null(px);
    memset(px, 7, (size_t)w * (size_t)h);
    write_png(path, w, h, 1, px);
    free(px);
}

/* Wider or taller than dt reads: dt's message, not libpng's "Invalid IHDR
 * data" (a user limit that made a valid file look corrupt). */
static void test_png_too_large(void **state)
{
    (void)state;
    write_gray_png(path_of("wide.png"), 16385, 1);
    write_gray_png(path_of("tall.png"), 1, 16385);
    write_gray_png(path_of("edge.png"), 16384, 1);
    dt_image_spec_t spec = {1, 2, 2};
    uint8_t px[4];
    char err[512], want[700];
    const char *name[2] = {"wide.png", "tall.png"};
    for (int i = 0; i < 2; i++) {
        err[0] = 0;
        assert_int_equal(dt_image_decode_u8(path_of(name[i]), &spec, px, err,
                                            sizeof err), DT_ERR_INVALID);
        snprintf(want, sizeof want, "%s: image is %s; dt reads images of "
                 "1..16384 pixels a side", path_of(name[i]),
                 i ? "1x16385" : "16385x1");
        assert_string_equal(err, want);
    }
    assert_int_equal(dt_image_decode_u8(path_of("edge.png"), &spec, px, err,
                                        sizeof err), DT_OK);
    assert_int_equal(px[0], 7);
}

/* ---- damaged, incomplete and special files -------------------------------- */

/* A call that hangs (opening a named pipe for reading waits for a writer)
 * fails the test instead of hanging it. */
static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "FAIL: a call hung (opening a named pipe?)\n";
    ssize_t n = write(STDOUT_FILENO, m, sizeof m - 1);
    (void)n;
    _exit(1);
}

static void hang_guard(unsigned seconds)
{
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

/* The log of loading root's split with o, which must give want. */
static char *load_log(const char *root, dt_split_t split,
                      const dt_folder_opts_t *o, dt_status_t want)
{
    dt_dataset_t ds;
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_dataset_load_folder(path_of(root), split, o, &ds);
    char *log = capture_end(&c);
    assert_int_equal(st, want);
    if (st == DT_OK)
        dt_dataset_free(&ds);
    return log;
}

/* An entry among the class folders that cannot be followed (a dangling
 * link, a link loop) is an error naming it: left out, it would renumber
 * every later class. */
static void test_folder_broken_links(void **state)
{
    (void)state;
    make_folder("f7", 0);
    char want[700];
    assert_int_equal(symlink("/nonexistent", path_of("f7/train/aa_cat")), 0);
    for (int split = 0; split < 2; split++) {
        char *log = load_log("f7", split ? DT_SPLIT_TEST : DT_SPLIT_TRAIN,
                             &opts_rgb4, DT_ERR_INVALID);
        snprintf(want, sizeof want, "%s: a broken symbolic link (to "
                 "/nonexistent: No such file or directory) among the class "
                 "folders", path_of("f7/train/aa_cat"));
        assert_non_null(strstr(log, want));
        free(log);
    }
    assert_int_equal(unlink(path_of("f7/train/aa_cat")), 0);
    const char *loops[2] = {"f7/train/zz_loop", "f7/test/bb_loop"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(symlink(strrchr(loops[i], '/') + 1,
                                 path_of(loops[i])), 0);
        char *log = load_log("f7", i ? DT_SPLIT_TEST : DT_SPLIT_TRAIN,
                             &opts_rgb4, DT_ERR_INVALID);
        snprintf(want, sizeof want, "%s: a symbolic link loop (to %s: ",
                 path_of(loops[i]), strrchr(loops[i], '/') + 1);
        assert_non_null(strstr(log, want));
        free(log);
        assert_int_equal(unlink(path_of(loops[i])), 0);
    }
    free(load_log("f7", DT_SPLIT_TRAIN, &opts_rgb4, DT_OK));
}

/* train/ or test/ itself a link (img/test -> /mnt/nfs/test): to a
 * target not there (its storage not mounted yet) it may pass, and the
 * error names the link and its target (not "no test/ folder there"); a
 * link loop, or a file where the folder should be, stays the layout. */
static void test_folder_split_links(void **state)
{
    (void)state;
    make_folder("f10", 0);
    char want[1200];
    assert_int_equal(rename(path_of("f10/test"), path_of("f10/test-off")),
                     0);
    assert_int_equal(symlink("/nonexistent/nfs/test", path_of("f10/test")),
                     0);
    char *log = load_log("f10", DT_SPLIT_TEST, &opts_rgb4, DT_ERR_NOT_FOUND);
    snprintf(want, sizeof want, "[data] path %s: a symbolic link to "
             "/nonexistent/nfs/test that cannot be followed: No such file "
             "or directory (may pass", path_of("f10/test"));
    assert_non_null(strstr(log, want));
    assert_null(strstr(log, "no test/ folder there"));
    free(log);
    assert_int_equal(unlink(path_of("f10/test")), 0);
    assert_int_equal(symlink("test", path_of("f10/test")), 0);
    free(load_log("f10", DT_SPLIT_TEST, &opts_rgb4, DT_ERR_INVALID));
    assert_int_equal(unlink(path_of("f10/test")), 0);
    write_bytes(path_of("f10/test"), "x", 1);
    free(load_log("f10", DT_SPLIT_TEST, &opts_rgb4, DT_ERR_INVALID));
    assert_int_equal(unlink(path_of("f10/test")), 0);
    assert_int_equal(rename(path_of("f10/test-off"), path_of("f10/test")),
                     0);
    /* train/ a link to a folder: followed */
    assert_int_equal(rename(path_of("f10/train"), path_of("f10/train-off")),
                     0);
    assert_int_equal(symlink("train-off", path_of("f10/train")), 0);
    free(load_log("f10", DT_SPLIT_TEST, &opts_rgb4, DT_OK));
}

/* dt_dataset_load_folder(root's train split) in a child process run by a
 * user who does not own the files (nobody when this test runs as root,
 * whom permissions do not stop): its status, or 1 (the child failed). */
static dt_status_t load_as_other_user(const char *root)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 &&
            (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
             setuid(65534) != 0))
            _exit(99);
        dt_dataset_t ds;
        dt_status_t st = dt_dataset_load_folder(path_of(root),
                                                DT_SPLIT_TRAIN, &opts_rgb4,
                                                &ds);
        _exit(st == DT_OK ? 0 : 100 - (int)st); /* errors are negative */
    }
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) ||
        WEXITSTATUS(ws) == 99)
        return (dt_status_t)1;
    return WEXITSTATUS(ws) == 0 ? DT_OK
                                : (dt_status_t)(100 - WEXITSTATUS(ws));
}

/* A stat of train/ the system refuses (EACCES here; EIO, ESTALE and
 * ETIMEDOUT of network storage alike) in a folder that holds data: may
 * pass (DT_ERR_IO), not the layout. */
static void test_folder_split_stat_refused(void **state)
{
    (void)state;
    make_folder("f11", 0);
    /* others may list f11 but not look inside its entries */
    assert_int_equal(chmod(dir, 0711), 0);
    assert_int_equal(chmod(path_of("f11"), 0644), 0);
    capture_t c;
    capture_begin(&c);
    dt_status_t st = load_as_other_user("f11");
    char *log = capture_end(&c);
    assert_int_equal(chmod(path_of("f11"), 0755), 0);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_int_equal(st, DT_ERR_IO);
    char want[700];
    snprintf(want, sizeof want, "[data] path %s: cannot tell whether "
             "train/ is there: Permission denied", path_of("f11"));
    assert_non_null(strstr(log, want));
    free(log);
}

/* A 32x32 gray JPEG in memory with a restart marker after every MCU. */
static size_t jpeg_with_restarts(uint8_t **out)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned long len = 0;
    *out = NULL;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, out, &len);
    c.image_width = 32;
    c.image_height = 32;
    c.input_components = 1;
    c.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    c.restart_interval = 1;
    jpeg_start_compress(&c, TRUE);
    uint8_t row[32];
    for (int y = 0; y < 32; y++) {
        for (int x = 0; x < 32; x++)
            row[x] = (uint8_t)(x * 7 + y * 5 + (x * y) % 13);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return len;
}

/* Where marker FF m first occurs in buf at or after from, or 0. */
static size_t find_marker(const uint8_t *buf, size_t len, size_t from,
                          uint8_t m)
{
    for (size_t i = from; i + 1 < len; i++)
        if (buf[i] == 0xff && buf[i + 1] == m)
            return i;
    return 0;
}

/* A damaged restart marker: libjpeg warns (JWRN_MUST_RESYNC) and goes on
 * with blocks misplaced or gray, so dt refuses the file. */
static void test_jpeg_bad_restart(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t n = jpeg_with_restarts(&buf);
    dt_image_spec_t spec = {1, 32, 32};
    uint8_t px[32 * 32];
    char err[512] = "";
    write_bytes(path_of("rst.jpg"), buf, n);
    assert_int_equal(dt_image_decode_u8(path_of("rst.jpg"), &spec, px, err,
                                        sizeof err), DT_OK);
    size_t sos = find_marker(buf, n, 2, 0xda);
    size_t rst1 = find_marker(buf, n, sos, 0xd1);
    assert_true(sos > 0 && rst1 > sos);
    buf[rst1 + 1] = 0xd5;
    write_bytes(path_of("rst.jpg"), buf, n);
    free(buf);
    assert_int_equal(dt_image_decode_u8(path_of("rst.jpg"), &spec, px, err,
                                        sizeof err), DT_ERR_INVALID);
    assert_non_null(strstr(err, "rst.jpg: corrupt JPEG: "));
    assert_non_null(strstr(err, "found marker 0xd5 instead of RST1"));
}

/* name's bytes (at most cap) in buf. */
static size_t file_bytes(const char *name, uint8_t *buf, size_t cap)
{
    return png_bytes(path_of(name), buf, cap);
}

/* Decoded as RGB 16x16: the status; the pixels in px. */
static dt_status_t decode16(const char *name, uint8_t *px, char *err,
                            size_t errlen)
{
    dt_image_spec_t spec = {3, 16, 16};
    err[0] = 0;
    return dt_image_decode_u8(path_of(name), &spec, px, err, errlen);
}

/* Files whose data is complete but whose end is missing (a JPEG without
 * its EOI marker, a PNG without its IEND chunk) load, as in PIL, to the
 * pixels of the whole file; files cut inside the image data do not. */
static void test_image_missing_end(void **state)
{
    (void)state;
    uint8_t px[16 * 16 * 3], want[16 * 16 * 3], got[16 * 16 * 3];
    uint8_t buf[16384];
    char err[512];
    for (int i = 0; i < 16 * 16 * 3; i++)
        px[i] = (uint8_t)(i * 37 + (i / 48) * 11);
    write_jpeg(path_of("whole.jpg"), 16, 16, 3, px);
    write_png(path_of("whole.png"), 16, 16, 3, px);

    size_t n = file_bytes("whole.jpg", buf, sizeof buf);
    assert_true(n < sizeof buf && buf[n - 2] == 0xff && buf[n - 1] == 0xd9);
    write_bytes(path_of("noeoi.jpg"), buf, n - 2);
    assert_int_equal(decode16("whole.jpg", want, err, sizeof err), DT_OK);
    assert_int_equal(decode16("noeoi.jpg", got, err, sizeof err), DT_OK);
    assert_memory_equal(got, want, sizeof want);
    /* cut anywhere inside the compressed data: refused */
    size_t sos = find_marker(buf, n, 2, 0xda);
    size_t data = sos + 2 + (size_t)(buf[sos + 2] << 8 | buf[sos + 3]);
    assert_true(sos > 0 && data + 8 < n);
    for (size_t cut = data + 1; cut < n - 2; cut++) {
        write_bytes(path_of("cut.jpg"), buf, cut);
        assert_int_equal(decode16("cut.jpg", got, err, sizeof err),
                         DT_ERR_INVALID);
        assert_non_null(strstr(err, "cut.jpg: corrupt JPEG: "));
    }

    n = file_bytes("whole.png", buf, sizeof buf);
    assert_true(n < sizeof buf && memcmp(buf + n - 8, "IEND", 4) == 0);
    write_bytes(path_of("noiend.png"), buf, n - 12);
    assert_int_equal(decode16("whole.png", want, err, sizeof err), DT_OK);
    assert_int_equal(decode16("noiend.png", got, err, sizeof err), DT_OK);
    assert_memory_equal(got, want, sizeof want);
    /* cut in the middle of the image data (rows missing): refused */
    size_t idat = 0;
    for (size_t i = 8; i + 8 < n && !idat; i++)
        if (memcmp(buf + i, "IDAT", 4) == 0)
            idat = i + 4;
    assert_true(idat > 0);
    size_t idat_len = (size_t)buf[idat - 6] << 8 | buf[idat - 5];
    write_bytes(path_of("cut.png"), buf, idat + idat_len / 2);
    assert_int_equal(decode16("cut.png", got, err, sizeof err),
                     DT_ERR_INVALID);
    assert_non_null(strstr(err, "cut.png: corrupt PNG: the file ends "
                                "early"));
}

/* A named pipe where an image should be is refused at once (opening it
 * for reading would wait for a writer forever), alone and in a folder,
 * like any unreadable image: an error, or skipped with bad_images = skip,
 * or with decode = loader an error when a batch needs it. */
static void test_image_not_regular(void **state)
{
    (void)state;
    make_folder("f8", 0);
    const char *pipe = path_of("f8/train/cat/zz_pipe.png");
    char err[512] = "", want[700];
    assert_int_equal(mkfifo(pipe, 0600), 0);
    hang_guard(30);
    dt_image_spec_t spec = {3, 4, 4};
    uint8_t px[48];
    assert_int_equal(dt_image_decode_u8(pipe, &spec, px, err, sizeof err),
                     DT_ERR_INVALID);
    snprintf(want, sizeof want, "%s: is a named pipe (FIFO), not a regular "
             "file", pipe);
    assert_string_equal(err, want);
    assert_int_equal(dt_image_decode_u8(path_of("f8/train"), &spec, px, err,
                                        sizeof err), DT_ERR_INVALID);
    assert_non_null(strstr(err, "train: is a directory, not a file"));

    char *log = load_log("f8", DT_SPLIT_TRAIN, &opts_rgb4, DT_ERR_INVALID);
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, "bad_images = skip"));
    free(log);
    dt_folder_opts_t skip = opts_rgb4;
    skip.skip_bad = 1;
    log = load_log("f8", DT_SPLIT_TRAIN, &skip, DT_OK);
    snprintf(want, sizeof want, "skipping %s: is a named pipe", pipe);
    assert_non_null(strstr(log, want));
    free(log);
    dt_folder_opts_t lazy = opts_rgb4;
    lazy.lazy = 1;
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load_folder(path_of("f8"), DT_SPLIT_TRAIN,
                                            &lazy, &ds), DT_OK);
    assert_string_equal(ds.paths[2], pipe);
    const uint8_t *p;
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_dataset_sample(&ds, 2, px, &p), DT_ERR_BAD_DATA);
    free(capture_end(&c));
    dt_dataset_free(&ds);
    alarm(0);
}

/* ---- out of memory -------------------------------------------------------- */

#ifndef __SANITIZE_ADDRESS__
static dt_status_t load_folder_huge(void)
{
    dt_dataset_t ds;
    dt_folder_opts_t o = {3, 16384, 16384, 0, 0};
    return dt_dataset_load_folder(path_of("oom"), DT_SPLIT_TRAIN, &o, &ds);
}

static dt_status_t load_stl_many(void)
{
    dt_dataset_t ds;
    return dt_dataset_load_stl10(path_of("oom_X.bin"), path_of("oom_y.bin"),
                                 &ds);
}
#endif

/* Out of memory while loading: a line says how much, for what, and what
 * to change (a child under an address-space limit loads). */
static void test_out_of_memory(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    fprintf(stderr, "SKIP: ASan reserves terabytes of address space: no "
                    "memory limit to run out of\n");
    skip();
#else
    char *log;
    /* the decoded cache: 4 images of 3x16384x16384 bytes (3 GiB) */
    make_folder("oom", 0);
    assert_int_equal(with_room(load_folder_huge, 256u << 20, &log),
                     DT_ERR_NOMEM);
    char want[700];
    snprintf(want, sizeof want, "%s/train: cannot allocate 3221225472 bytes "
             "(3072.0 MiB) for the decoded images (4 images of "
             "3x16384x16384 bytes): set [data] decode = loader",
             path_of("oom"));
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, "or a smaller [data] image_size"));
    free(log);

    /* STL-10: 40000 labels, so 40000 images of 27648 bytes (1.1 GB) */
    uint8_t *l = malloc(40000);
    assert_non_null(l);
    memset(l, 3, 40000);
    write_bytes(path_of("oom_y.bin"), l, 40000);
    write_bytes(path_of("oom_X.bin"), l, 1);
    free(l);
    assert_int_equal(with_room(load_stl_many, 256u << 20, &log),
                     DT_ERR_NOMEM);
    assert_non_null(strstr(log, "oom_X.bin: cannot allocate 1105920000 "
                                "bytes (1054.7 MiB) for 40000 images of "
                                "3x96x96 bytes"));
    free(log);
#endif
}
#endif /* PNG and JPEG */

static void test_folder_without_codecs(void **state)
{
    (void)state;
    if (dt_image_have_png() && dt_image_have_jpeg()) {
        fprintf(stderr, "SKIP: dt was built with libpng and libjpeg; the "
                        "messages for a build without them are not "
                        "reachable\n");
        skip();
    }
    /* Without either library, a folder is refused naming the package. */
    mkdirs("nc/train/a");
    write_bytes(path_of("nc/train/a/x.png"), "\x89PNG\r\n\x1a\n....", 12);
    write_bytes(path_of("nc/train/a/y.jpg"), "\xff\xd8\xff\xe0....", 8);
    dt_dataset_t ds;
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_dataset_load_folder(path_of("nc"), DT_SPLIT_TRAIN,
                                            &(dt_folder_opts_t){3, 4, 4, 1, 0},
                                            &ds), DT_ERR_UNSUPPORTED);
    char *log = capture_end(&c);
    assert_true(strstr(log, "apt-get install libpng-dev") ||
                strstr(log, "apt-get install libjpeg62-turbo-dev"));
    free(log);
}

#ifndef HAVE_CODECS
static void skip_without_codecs(void **state)
{
    (void)state;
    fprintf(stderr, "SKIP: dt was built without %s%s%s: the image-folder "
            "tests need both (apt-get install libpng-dev "
            "libjpeg62-turbo-dev, then configure again)\n",
            dt_image_have_png() ? "" : "libpng",
            !dt_image_have_png() && !dt_image_have_jpeg() ? " and " : "",
            dt_image_have_jpeg() ? "" : "libjpeg");
    skip();
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cifar100),
        cmocka_unit_test(test_stl10),
#ifdef HAVE_CODECS
        cmocka_unit_test(test_folder_pixels),
        cmocka_unit_test(test_folder_bad_images),
        cmocka_unit_test(test_folder_layout_errors),
        cmocka_unit_test(test_folder_config),
        cmocka_unit_test(test_folder_decode_loader),
        cmocka_unit_test(test_folder_subset),
        cmocka_unit_test(test_png_palette_trns),
        cmocka_unit_test(test_png_too_large),
        cmocka_unit_test(test_folder_broken_links),
        cmocka_unit_test(test_folder_split_links),
        cmocka_unit_test(test_folder_split_stat_refused),
        cmocka_unit_test(test_jpeg_bad_restart),
        cmocka_unit_test(test_image_missing_end),
        cmocka_unit_test(test_image_not_regular),
        cmocka_unit_test(test_out_of_memory),
#else
        cmocka_unit_test(skip_without_codecs),
#endif
        cmocka_unit_test(test_folder_without_codecs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
