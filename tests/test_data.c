/* test_data.c — the IDX and CIFAR-10 readers on good and damaged files,
 * normalization (NaN/infinity refused), CIFAR-10 found plain or .gz, a
 * named pipe or directory at a data file's path, the digest the workers
 * compare, and the real Fashion-MNIST files when installed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef DT_HAVE_ZLIB
#include <zlib.h>
#endif

#include "data/dataset.h"
#include "data/idx.h"
#include "stderr_capture.h"
#include "mem_room.h"

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

static char dir[] = "/tmp/dt-test-data-XXXXXX";

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
    static char buf[8][256];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* An IDX U8 file: header for dims, then `len` bytes of data. */
static size_t make_idx(unsigned char *buf, int type, int ndims,
                       const uint32_t *dims, const void *data, size_t len)
{
    size_t n = 0;
    buf[n++] = 0;
    buf[n++] = 0;
    buf[n++] = (unsigned char)type;
    buf[n++] = (unsigned char)ndims;
    for (int i = 0; i < ndims; i++) {
        buf[n++] = (unsigned char)(dims[i] >> 24);
        buf[n++] = (unsigned char)(dims[i] >> 16);
        buf[n++] = (unsigned char)(dims[i] >> 8);
        buf[n++] = (unsigned char)dims[i];
    }
    memcpy(buf + n, data, len);
    return n + len;
}

/* Three 2x2 images and their labels. */
static void write_small_pair(const char *img, const char *lab, int nlab,
                             unsigned char bad_label)
{
    unsigned char pix[12], labels[4] = {0, 9, 4, 1}, buf[64];
    for (int i = 0; i < 12; i++)
        pix[i] = (unsigned char)(i * 20);
    uint32_t d3[3] = {3, 2, 2}, d1[1] = {(uint32_t)nlab};
    write_bytes(img, buf, make_idx(buf, 0x08, 3, d3, pix, 12));
    if (bad_label)
        labels[2] = bad_label;
    write_bytes(lab, buf, make_idx(buf, 0x08, 1, d1, labels, (size_t)nlab));
}

static char *expect_failure(dt_status_t want, const char *img,
                            const char *lab)
{
    dt_dataset_t ds;
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_dataset_load_idx(img, lab, 10, &ds);
    char *log = capture_end(&c);
    assert_int_equal(st, want);
    assert_null(ds.pixels);
    return log;
}

static void test_idx_good(void **state)
{
    (void)state;
    write_small_pair(path_of("img"), path_of("lab"), 3, 0);
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load_idx(path_of("img"), path_of("lab"), 10,
                                         &ds), DT_OK);
    assert_int_equal(ds.n, 3);
    assert_int_equal(ds.height, 2);
    assert_int_equal(ds.width, 2);
    assert_int_equal(ds.sample_len, 4);
    assert_int_equal(ds.labels[1], 9);
    assert_int_equal(ds.pixels[5], 100);
    /* normalization: (p/255 - 0.5) / 0.25 */
    float mean = 0.5f, sd = 0.25f;
    assert_int_equal(dt_dataset_set_norm(&ds, &mean, 1, &sd, 1), DT_OK);
    size_t idx[2] = {2, 1};
    float x[8];
    int32_t y[2];
    dt_dataset_gather(&ds, idx, 2, x, y);
    assert_int_equal(y[0], 4);
    assert_int_equal(y[1], 9);
    for (int i = 0; i < 4; i++) {
        assert_true(fabsf(x[i] - ((8 + i) * 20 / 255.0f - 0.5f) / 0.25f) <
                    1e-5f);
        assert_true(fabsf(x[4 + i] - ((4 + i) * 20 / 255.0f - 0.5f) / 0.25f) <
                    1e-5f);
    }
    dt_dataset_truncate(&ds, 2);
    assert_int_equal(ds.n, 2);
    dt_dataset_free(&ds);
}

static void test_idx_bad_norm(void **state)
{
    (void)state;
    write_small_pair(path_of("img"), path_of("lab"), 3, 0);
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load_idx(path_of("img"), path_of("lab"), 10,
                                         &ds), DT_OK);
    float mean[2] = {0, 0}, sd = 0.0f;
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_dataset_set_norm(&ds, mean, 1, &sd, 1),
                     DT_ERR_CONFIG);
    assert_int_equal(dt_dataset_set_norm(&ds, mean, 2, mean, 1),
                     DT_ERR_CONFIG);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "std must be greater than 0"));
    assert_non_null(strstr(log, "1 value or one per channel"));
    free(log);
    dt_dataset_free(&ds);
}

/* Multi-byte elements are big-endian in the file. */
static void test_idx_int32_byte_order(void **state)
{
    (void)state;
    unsigned char data[8] = {0x01, 0x02, 0x03, 0x04, 0xff, 0xff, 0xff, 0xfe};
    unsigned char buf[64];
    uint32_t d[1] = {2};
    write_bytes(path_of("i32"), buf, make_idx(buf, 0x0C, 1, d, data, 8));
    dt_idx_t x;
    assert_int_equal(dt_idx_read(path_of("i32"), &x), DT_OK);
    assert_int_equal(x.count, 2);
    assert_int_equal(((int32_t *)x.data)[0], 0x01020304);
    assert_int_equal(((int32_t *)x.data)[1], -2);
    dt_idx_free(&x);
}

static void test_idx_bad_header(void **state)
{
    (void)state;
    unsigned char buf[64], pix[4] = {0};
    uint32_t d[1] = {4};
    size_t n = make_idx(buf, 0x08, 1, d, pix, 4);
    struct { size_t at; unsigned char v; const char *msg; } cases[] = {
        {0, 0x12, "not an IDX file: magic starts with 0x1200"},
        {2, 0x07, "unknown IDX element type 0x07"},
        {3, 0, "IDX header has 0 dimensions"},
        {3, 9, "IDX header has 9 dimensions"},
    };
    dt_idx_t x;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unsigned char copy[64];
        memcpy(copy, buf, n);
        copy[cases[i].at] = cases[i].v;
        write_bytes(path_of("bad"), copy, n);
        capture_t c;
        capture_begin(&c);
        assert_int_equal(dt_idx_read(path_of("bad"), &x), DT_ERR_INVALID);
        char *log = capture_end(&c);
        assert_non_null(strstr(log, cases[i].msg));
        assert_non_null(strstr(log, path_of("bad")));
        free(log);
    }
    /* a zero dimension, and a header cut short */
    uint32_t zero[1] = {0};
    write_bytes(path_of("bad"), buf, make_idx(buf, 0x08, 1, zero, pix, 0));
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_idx_read(path_of("bad"), &x), DT_ERR_INVALID);
    write_bytes(path_of("bad"), buf, 6);
    assert_int_equal(dt_idx_read(path_of("bad"), &x), DT_ERR_INVALID);
    write_bytes(path_of("bad"), buf, 2);
    assert_int_equal(dt_idx_read(path_of("bad"), &x), DT_ERR_INVALID);
    assert_int_equal(dt_idx_read(path_of("missing"), &x), DT_ERR_NOT_FOUND);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "dimension 0 is 0"));
    assert_non_null(strstr(log, "truncated IDX header"));
    assert_non_null(strstr(log, "shorter than the 4-byte header"));
    assert_non_null(strstr(log, "missing: cannot open"));
    free(log);
}

static void test_idx_truncated_and_trailing(void **state)
{
    (void)state;
    unsigned char buf[64], pix[12] = {0};
    uint32_t d[3] = {3, 2, 2};
    size_t n = make_idx(buf, 0x08, 3, d, pix, 12);
    dt_idx_t x;
    capture_t c;
    capture_begin(&c);
    write_bytes(path_of("cut"), buf, n - 1);
    assert_int_equal(dt_idx_read(path_of("cut"), &x), DT_ERR_INVALID);
    buf[n] = 7;
    write_bytes(path_of("long"), buf, n + 1);
    assert_int_equal(dt_idx_read(path_of("long"), &x), DT_ERR_INVALID);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "cut: truncated: the header announces 3x2x2 "
                                "elements (12 bytes of data) but the file "
                                "ends after 11"));
    assert_non_null(strstr(log, "long: has bytes after the 3x2x2 elements"));
    free(log);
}

/* A 13-byte file whose header claims 2 GiB (0x8000 x 0x10000 bytes): the
 * reader must find it truncated without asking for the claimed size. A
 * child under a 512 MiB address-space limit reads it: an allocation of
 * the claim would fail there (DT_ERR_NOMEM) instead of the clear error. */
static void test_idx_huge_claim_tiny_file(void **state)
{
    (void)state;
    const unsigned char file[13] = {0, 0, 0x08, 2, 0, 0, 0x80, 0,
                                    0, 1, 0, 0, 42};
    write_bytes(path_of("huge"), file, sizeof file);
    capture_t c;
    capture_begin(&c);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        /* ASan and TSan reserve terabytes of shadow address space: no
         * limit there (the normal build checks the allocation; these the
         * message and the memory safety; under the limit TSan cannot map
         * its own memory and the child dies). */
        struct rlimit lim = {512u << 20, 512u << 20};
        if (setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(3);
#endif
        dt_idx_t x;
        dt_status_t st = dt_idx_read(path_of("huge"), &x);
        fflush(stderr);
        _exit(st == DT_ERR_INVALID ? 0 : st == DT_ERR_NOMEM ? 2 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char *log = capture_end(&c);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_non_null(strstr(log, "huge: truncated: the header announces "
                                "32768x65536 elements (2147483648 bytes of "
                                "data) but the file ends after 1"));
    assert_null(strstr(log, "cannot allocate"));
    free(log);
}

static void test_idx_mismatched_pair(void **state)
{
    (void)state;
    write_small_pair(path_of("img"), path_of("lab"), 4, 0);
    char *log = expect_failure(DT_ERR_INVALID, path_of("img"),
                               path_of("lab"));
    assert_non_null(strstr(log, "has 4 labels but"));
    assert_non_null(strstr(log, "has 3 images"));
    free(log);
    write_small_pair(path_of("img"), path_of("lab"), 3, 10);
    log = expect_failure(DT_ERR_INVALID, path_of("img"), path_of("lab"));
    assert_non_null(strstr(log, "label 10 of sample 2 is out of range 0..9"));
    free(log);
    /* files swapped */
    log = expect_failure(DT_ERR_INVALID, path_of("lab"), path_of("img"));
    assert_non_null(strstr(log, "is it a labels file?"));
    free(log);
}

#ifdef DT_HAVE_ZLIB
static void write_gz(const char *path, const void *data, size_t len)
{
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, data, (unsigned)len), (int)len);
    gzclose(g);
}

static void test_idx_gzip(void **state)
{
    (void)state;
    unsigned char pix[12], buf[64];
    for (int i = 0; i < 12; i++)
        pix[i] = (unsigned char)(200 - i);
    uint32_t d[3] = {3, 2, 2};
    size_t n = make_idx(buf, 0x08, 3, d, pix, 12);
    write_gz(path_of("img.gz"), buf, n);
    dt_idx_t x;
    assert_int_equal(dt_idx_read(path_of("img.gz"), &x), DT_OK);
    assert_int_equal(x.count, 12);
    assert_memory_equal(x.data, pix, 12);
    dt_idx_free(&x);

    /* A gzip file cut in the middle of its stream. */
    struct stat st;
    assert_int_equal(stat(path_of("img.gz"), &st), 0);
    assert_int_equal(truncate(path_of("img.gz"), st.st_size - 10), 0);
    capture_t c;
    capture_begin(&c);
    assert_int_not_equal(dt_idx_read(path_of("img.gz"), &x), DT_OK);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, path_of("img.gz")));
    free(log);
}
#endif

/* ---- CIFAR-10 ------------------------------------------------------------- */

static void write_cifar(const char *path, int records, int cut,
                        unsigned char label0)
{
    size_t len = (size_t)records * 3073;
    unsigned char *b = calloc(1, len);
    assert_non_null(b);
    for (int r = 0; r < records; r++) {
        b[(size_t)r * 3073] = (unsigned char)(r == 0 ? label0 : r % 10);
        for (int i = 0; i < 3072; i++)
            b[(size_t)r * 3073 + 1 + i] = (unsigned char)(r + i);
    }
    write_bytes(path, b, len - (size_t)cut);
    free(b);
}

static void test_cifar(void **state)
{
    (void)state;
    write_cifar(path_of("a.bin"), 3, 0, 7);
    write_cifar(path_of("b.bin"), 2, 0, 5);
    const char *paths[2] = {path_of("a.bin"), path_of("b.bin")};
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load_cifar10(paths, 2, &ds), DT_OK);
    assert_int_equal(ds.n, 5);
    assert_int_equal(ds.channels, 3);
    assert_int_equal(ds.sample_len, 3072);
    assert_int_equal(ds.labels[0], 7);
    assert_int_equal(ds.labels[3], 5);
    assert_int_equal(ds.labels[4], 1);
    assert_int_equal(ds.pixels[4 * 3072 + 10], (unsigned char)(1 + 10));
    /* channel planes normalized with their own constants */
    float mean[3] = {0.0f, 0.5f, 1.0f}, sd[3] = {1.0f, 0.5f, 2.0f};
    assert_int_equal(dt_dataset_set_norm(&ds, mean, 3, sd, 3), DT_OK);
    size_t idx = 1;
    float *x = malloc(3072 * sizeof *x);
    int32_t y;
    dt_dataset_gather(&ds, &idx, 1, x, &y);
    for (int c = 0; c < 3; c++) {
        float p = (float)(unsigned char)(1 + c * 1024 + 3);
        assert_true(fabsf(x[c * 1024 + 3] - (p / 255.0f - mean[c]) / sd[c]) <
                    1e-5f);
    }
    free(x);
    dt_dataset_free(&ds);
}

static void test_cifar_damaged(void **state)
{
    (void)state;
    dt_dataset_t ds;
    const char *p[1] = {path_of("cut.bin")};
    capture_t c;
    capture_begin(&c);
    write_cifar(p[0], 2, 100, 3);
    assert_int_equal(dt_dataset_load_cifar10(p, 1, &ds), DT_ERR_INVALID);
    write_cifar(p[0], 2, 0, 10);
    assert_int_equal(dt_dataset_load_cifar10(p, 1, &ds), DT_ERR_INVALID);
    write_bytes(p[0], "", 0);
    assert_int_equal(dt_dataset_load_cifar10(p, 1, &ds), DT_ERR_INVALID);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "cut.bin: truncated: record 1 has 2973 of "
                                "3073 bytes"));
    assert_non_null(strstr(log, "record 0 has label 10, out of range 0..9"));
    assert_non_null(strstr(log, "cut.bin: is empty"));
    free(log);
}

/* ---- configuration and the real data set ----------------------------------- */

static dt_config_t *config_with(const char *const *kv)
{
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    for (; *kv; kv += 2)
        assert_int_equal(dt_config_set(cfg, "data", kv[0], kv[1],
                                       DT_SRC_CLI, "--set"), DT_OK);
    return cfg;
}

#ifdef DT_HAVE_ZLIB
/* rel (under the test directory) replaced by rel.gz. */
static void gzip_file(const char *rel)
{
    char plain[256], gz[260];
    snprintf(plain, sizeof plain, "%s", path_of(rel));
    snprintf(gz, sizeof gz, "%s.gz", plain);
    struct stat st;
    assert_int_equal(stat(plain, &st), 0);
    unsigned char *b = malloc((size_t)st.st_size);
    assert_non_null(b);
    FILE *f = fopen(plain, "rb");
    assert_non_null(f);
    assert_int_equal(fread(b, 1, (size_t)st.st_size, f), st.st_size);
    fclose(f);
    write_gz(gz, b, (size_t)st.st_size);
    free(b);
    assert_int_equal(unlink(plain), 0);
}

/* CIFAR-10 as downloaded and then gzipped (dataset.h: "plain or .gz"):
 * every batch .gz, or some .gz and some plain, in cifar-10-batches-bin/;
 * a batch missing is named. */
static void test_cifar10_gz(void **state)
{
    (void)state;
    char rel[128];
    assert_int_equal(mkdir(path_of("c10"), 0755), 0);
    assert_int_equal(mkdir(path_of("c10/cifar-10-batches-bin"), 0755), 0);
    for (int i = 1; i <= 5; i++) {
        snprintf(rel, sizeof rel, "c10/cifar-10-batches-bin/data_batch_%d.bin",
                 i);
        write_cifar(path_of(rel), 2, 0, (unsigned char)i);
        if (i != 3) /* one stays plain */
            gzip_file(rel);
    }
    write_cifar(path_of("c10/cifar-10-batches-bin/test_batch.bin"), 3, 0, 8);
    gzip_file("c10/cifar-10-batches-bin/test_batch.bin");
    const char *kv[] = {"dataset", "cifar10", "path", path_of("c10"), NULL};
    dt_config_t *cfg = config_with(kv);
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds), DT_OK);
    assert_int_equal(ds.n, 10);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ds.labels[2 * i], i + 1); /* the files in order */
    assert_int_equal(ds.pixels[9 * 3072 + 5], (unsigned char)(1 + 5));
    dt_dataset_free(&ds);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds), DT_OK);
    assert_int_equal(ds.n, 3);
    assert_int_equal(ds.labels[0], 8);
    dt_dataset_free(&ds);

    assert_int_equal(unlink(path_of("c10/cifar-10-batches-bin/"
                                    "data_batch_5.bin.gz")), 0);
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds),
                     DT_ERR_NOT_FOUND);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "data_batch_5.bin (or .gz): missing"));
    assert_null(strstr(log, "data_batch_4.bin"));
    free(log);
    dt_config_free(cfg);
}

/* The CIFAR reader grows its buffers as it reads (a .gz tells its length
 * only at the end): running out of memory there is logged. A child that
 * may grow by 16 MB reads 20001 records (zeros: a tiny .gz), which take
 * buffers for 10000, 20000, then 40000 records (123 MB: more than libc's
 * reserved arena space could hold). */
#ifndef __SANITIZE_ADDRESS__
static dt_status_t load_many_cifar(void)
{
    const char *p[1] = {path_of("many.bin.gz")};
    dt_dataset_t ds;
    return dt_dataset_load_cifar10(p, 1, &ds);
}
#endif

static void test_cifar_out_of_memory(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    fprintf(stderr, "SKIP: ASan reserves terabytes of address space: no "
                    "memory limit to run out of\n");
    skip();
#else
    gzFile g = gzopen(path_of("many.bin.gz"), "wb");
    assert_non_null(g);
    unsigned char rec[3073] = {0};
    for (int r = 0; r < 20001; r++)
        assert_int_equal(gzwrite(g, rec, sizeof rec), (int)sizeof rec);
    gzclose(g);
    char *log = NULL;
    assert_int_equal(with_room(load_many_cifar, 16u << 20, &log),
                     DT_ERR_NOMEM);
    assert_non_null(strstr(log, "many.bin.gz: cannot allocate "));
    assert_non_null(strstr(log, "CIFAR-10 images of 3x32x32 bytes: each "
                                "worker keeps the whole split in memory"));
    free(log);
#endif
}
#endif

/* mean/std of NaN or infinity would turn every input into NaN: refused,
 * naming the key (strtof parses "nan" and "inf"). */
/* The digest the workers compare (train_data.c): a label, a class name
 * or a file's name changes it; the files' directory (a per-host staged
 * copy) does not. */
static void test_digest(void **state)
{
    (void)state;
    uint8_t labels[4] = {0, 0, 1, 1};
    char *names[2] = {"cat", "dog"};
    char *paths[4] = {"/a/train/cat/1.png", "/a/train/cat/2.png",
                      "/a/train/dog/3.png", "/a/train/dog/4.png"};
    dt_dataset_t ds = {.n = 4, .nclasses = 2, .labels = labels,
                       .class_names = names, .paths = paths, .npaths = 4};
    uint64_t h = dt_dataset_digest(&ds, 0);
    assert_true(h == dt_dataset_digest(&ds, 0));
    labels[1] = 1;
    assert_true(h != dt_dataset_digest(&ds, 0));
    labels[1] = 0;
    names[1] = "dogs";
    assert_true(h != dt_dataset_digest(&ds, 0));
    names[1] = "dog";
    paths[3] = "/a/train/dog/5.png";
    assert_true(h != dt_dataset_digest(&ds, 0));
    char *moved[4] = {"/b/train/cat/1.png", "/b/train/cat/2.png",
                      "/b/train/dog/3.png", "/b/train/dog/4.png"};
    ds.paths = moved;
    assert_true(h == dt_dataset_digest(&ds, 0));
    /* chained: the test split's digest onto the training split's */
    assert_true(dt_dataset_digest(&ds, h) != h);
}

static void test_norm_not_finite(void **state)
{
    (void)state;
    write_small_pair(path_of("t10k-images-idx3-ubyte"),
                     path_of("t10k-labels-idx1-ubyte"), 3, 0);
    const char *bad[][2] = {{"mean", "nan"}, {"std", "inf"},
                            {"std", "-inf"}, {"mean", "0.5,infinity"},
                            {"std", "NaN"}};
    capture_t c;
    dt_dataset_t ds;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *kv[] = {"path", dir, bad[i][0], bad[i][1], NULL};
        dt_config_t *cfg = config_with(kv);
        capture_begin(&c);
        assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds),
                         DT_ERR_CONFIG);
        char *log = capture_end(&c);
        char want[64];
        snprintf(want, sizeof want, "[data] %s: '", bad[i][0]);
        assert_non_null(strstr(log, want));
        assert_non_null(strstr(log, "is not a finite number"));
        free(log);
        assert_null(ds.pixels);
        dt_config_free(cfg);
    }
    /* the same through the API */
    assert_int_equal(dt_dataset_load_idx(path_of("t10k-images-idx3-ubyte"),
                                         path_of("t10k-labels-idx1-ubyte"),
                                         10, &ds), DT_OK);
    float zero = 0.0f, one = 1.0f, inf = INFINITY, nan = NAN;
    capture_begin(&c);
    assert_int_equal(dt_dataset_set_norm(&ds, &zero, 1, &inf, 1),
                     DT_ERR_CONFIG);
    assert_int_equal(dt_dataset_set_norm(&ds, &nan, 1, &one, 1),
                     DT_ERR_CONFIG);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "std must be greater than 0 and finite"));
    assert_non_null(strstr(log, "mean must be a finite number"));
    free(log);
    assert_int_equal(dt_dataset_set_norm(&ds, &zero, 1, &one, 1), DT_OK);
    dt_dataset_free(&ds);
}

static void test_load_config_errors(void **state)
{
    (void)state;
    const char *unknown[] = {"dataset", "imagenet", "path", "/tmp", NULL};
    const char *nodir[] = {"path", "/nonexistent-dt-dir", NULL};
    const char *badnum[] = {"path", dir, "mean", "0.5,abc", NULL};
    dt_dataset_t ds;
    capture_t c;
    capture_begin(&c);
    dt_config_t *cfg = config_with(unknown);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds),
                     DT_ERR_CONFIG);
    dt_config_free(cfg);
    cfg = config_with(nodir);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds),
                     DT_ERR_NOT_FOUND);
    dt_config_free(cfg);
    /* files found in dir (written with the usual names), bad mean */
    write_small_pair(path_of("t10k-images-idx3-ubyte"),
                     path_of("t10k-labels-idx1-ubyte"), 3, 0);
    cfg = config_with(badnum);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds),
                     DT_ERR_CONFIG);
    dt_config_free(cfg);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "dataset 'imagenet' is not known"));
    assert_non_null(strstr(log, "no t10k-images-idx3-ubyte or "
                                "t10k-images-idx3-ubyte.gz there"));
    assert_non_null(strstr(log, "'abc' is not a number"));
    free(log);
    const char *good[] = {"path", dir, "test_samples", "2", NULL};
    cfg = config_with(good);
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds), DT_OK);
    assert_int_equal(ds.n, 2);
    dt_dataset_free(&ds);
    dt_config_free(cfg);
}

static void test_fashion_mnist(void **state)
{
    (void)state;
    if (access(FASHION_DIR "/t10k-labels-idx1-ubyte.gz", R_OK) != 0) {
        fprintf(stderr, "SKIP: %s missing (apt-get install "
                "dataset-fashion-mnist)\n", FASHION_DIR);
        skip();
    }
    const char *kv[] = {"mean", "0.2860", "std", "0.3530", NULL};
    dt_config_t *cfg = config_with(kv);
    dt_dataset_t ds;
    assert_int_equal(dt_dataset_load(cfg, DT_SPLIT_TEST, &ds), DT_OK);
    assert_int_equal(ds.n, 10000);
    assert_int_equal(ds.height, 28);
    assert_int_equal(ds.width, 28);
    /* The test set is balanced: 1000 of each of the 10 classes. */
    size_t hist[10] = {0};
    double sum = 0;
    for (size_t i = 0; i < ds.n; i++)
        hist[ds.labels[i]]++;
    for (int k = 0; k < 10; k++)
        assert_int_equal(hist[k], 1000);
    for (size_t i = 0; i < ds.n * ds.sample_len; i++)
        sum += ds.pixels[i];
    /* mean pixel of Fashion-MNIST is about 0.286 (the documented value) */
    double mean = sum / (double)(ds.n * ds.sample_len) / 255.0;
    assert_true(fabs(mean - 0.286) < 0.01);
    dt_dataset_free(&ds);
    dt_config_free(cfg);
}

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

/* A named pipe or a directory where a data file should be: refused at
 * once, saying what it is, not blocking the job or calling the file
 * damaged. */
static void test_data_file_not_regular(void **state)
{
    (void)state;
    assert_int_equal(mkfifo(path_of("pipe-idx"), 0600), 0);
    assert_int_equal(mkfifo(path_of("pipe.bin"), 0600), 0);
    assert_int_equal(mkdir(path_of("dir-idx"), 0700), 0);
    signal(SIGALRM, on_alarm);
    alarm(30);
    dt_idx_t x;
    dt_dataset_t ds;
    const char *paths[1] = {path_of("pipe.bin")};
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_idx_read(path_of("pipe-idx"), &x), DT_ERR_INVALID);
    assert_int_equal(dt_dataset_load_cifar10(paths, 1, &ds), DT_ERR_INVALID);
    assert_int_equal(dt_idx_read(path_of("dir-idx"), &x), DT_ERR_INVALID);
    char *log = capture_end(&c);
    alarm(0);
    char want[400];
    snprintf(want, sizeof want, "%s: is a named pipe (FIFO), not a regular "
             "file", path_of("pipe-idx"));
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, "%s: is a named pipe (FIFO)",
             path_of("pipe.bin"));
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, "%s: is a directory, not a file",
             path_of("dir-idx"));
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, "(give the data file itself"));
    assert_null(strstr(log, "download it again"));
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_good),
        cmocka_unit_test(test_idx_bad_norm),
        cmocka_unit_test(test_idx_int32_byte_order),
        cmocka_unit_test(test_idx_bad_header),
        cmocka_unit_test(test_idx_truncated_and_trailing),
        cmocka_unit_test(test_idx_huge_claim_tiny_file),
        cmocka_unit_test(test_idx_mismatched_pair),
#ifdef DT_HAVE_ZLIB
        cmocka_unit_test(test_idx_gzip),
#endif
        cmocka_unit_test(test_cifar),
        cmocka_unit_test(test_cifar_damaged),
        cmocka_unit_test(test_load_config_errors),
#ifdef DT_HAVE_ZLIB
        cmocka_unit_test(test_cifar10_gz),
        cmocka_unit_test(test_cifar_out_of_memory),
#endif
        cmocka_unit_test(test_norm_not_finite),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_data_file_not_regular),
        cmocka_unit_test(test_fashion_mnist),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
