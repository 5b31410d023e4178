/* test_metrics.c — TensorBoard event files read back record by record
 * (framing CRCs checked, protobuf fields decoded independently), the JSONL
 * metrics line, a fresh run's emptied metrics file, write failures that
 * warn (naming the file and errno) rather than fail, CRC-32C against its
 * published check value. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "stderr_capture.h"

static char dir[] = "/tmp/dt-test-metrics-XXXXXX";

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

static void test_crc32c(void **state)
{
    (void)state;
    /* the standard check value of CRC-32C */
    assert_int_equal(dt_crc32c(0, "123456789", 9), 0xE3069283u);
    /* incremental == one shot */
    uint32_t a = dt_crc32c(0, "1234", 4);
    assert_int_equal(dt_crc32c(a, "56789", 5), 0xE3069283u);
    uint32_t crc = 0xE3069283u;
    assert_int_equal(dt_crc32c_masked("123456789", 9),
                     ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

static void test_varint(void **state)
{
    (void)state;
    unsigned char b[10];
    assert_int_equal(dt_pb_varint(b, 0), 1);
    assert_int_equal(b[0], 0);
    assert_int_equal(dt_pb_varint(b, 300), 2);
    assert_int_equal(b[0], 0xac);
    assert_int_equal(b[1], 0x02);
    assert_int_equal(dt_pb_varint(b, UINT64_MAX), 10);
}

/* ---- an independent little protobuf reader ---------------------------------- */

typedef struct pb {
    const unsigned char *p, *end;
} pb_t;

static uint64_t rd_varint(pb_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; r->p < r->end; shift += 7) {
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("varint runs past the end");
    return 0;
}

static uint64_t rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

typedef struct event {
    double wall_time;
    int64_t step;
    char version[32];
    char tag[64];
    float value;
    int has_value;
} event_t;

static void parse_value(pb_t r, event_t *ev)
{
    while (r.p < r.end) {
        uint64_t key = rd_varint(&r);
        if (key == (1 << 3 | 2)) {
            uint64_t n = rd_varint(&r);
            assert_true(n < sizeof ev->tag);
            memcpy(ev->tag, r.p, n);
            ev->tag[n] = 0;
            r.p += n;
        } else if (key == (2 << 3 | 5)) {
            uint32_t u = (uint32_t)rd_le(r.p, 4);
            memcpy(&ev->value, &u, 4);
            ev->has_value = 1;
            r.p += 4;
        } else {
            fail_msg("unexpected Value field key %llu",
                     (unsigned long long)key);
        }
    }
}

static void parse_event(const unsigned char *p, size_t len, event_t *ev)
{
    pb_t r = {p, p + len};
    memset(ev, 0, sizeof *ev);
    while (r.p < r.end) {
        uint64_t key = rd_varint(&r);
        switch (key) {
        case 1 << 3 | 1: {
            uint64_t u = rd_le(r.p, 8);
            memcpy(&ev->wall_time, &u, 8);
            r.p += 8;
            break;
        }
        case 2 << 3 | 0: ev->step = (int64_t)rd_varint(&r); break;
        case 3 << 3 | 2: {
            uint64_t n = rd_varint(&r);
            assert_true(n < sizeof ev->version);
            memcpy(ev->version, r.p, n);
            r.p += n;
            break;
        }
        case 5 << 3 | 2: { /* Summary { repeated Value value = 1 } */
            uint64_t n = rd_varint(&r);
            pb_t s = {r.p, r.p + n};
            assert_true(s.end <= r.end);
            assert_int_equal(rd_varint(&s), 1 << 3 | 2);
            uint64_t vn = rd_varint(&s);
            assert_true(s.p + vn == s.end);
            parse_value((pb_t){s.p, s.p + vn}, ev);
            r.p += n;
            break;
        }
        default:
            fail_msg("unexpected Event field key %llu",
                     (unsigned long long)key);
        }
    }
    assert_true(r.p == r.end);
}

/* Read every TFRecord of the file, checking both CRCs of each. */
static size_t read_events(const char *path, event_t *evs, size_t max)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = 0;
    unsigned char head[12];
    while (fread(head, 1, 12, f) == 12) {
        assert_true(n < max);
        uint64_t len = rd_le(head, 8);
        assert_int_equal((uint32_t)rd_le(head + 8, 4),
                         dt_crc32c_masked(head, 8));
        unsigned char *data = malloc(len + 4);
        assert_int_equal(fread(data, 1, len + 4, f), len + 4);
        assert_int_equal((uint32_t)rd_le(data + len, 4),
                         dt_crc32c_masked(data, len));
        parse_event(data, len, &evs[n++]);
        free(data);
    }
    assert_true(feof(f));
    fclose(f);
    return n;
}

static void test_tensorboard_file(void **state)
{
    (void)state;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/runs", dir);
    dt_tb_t *tb = NULL;
    assert_int_equal(dt_tb_open(sub, &tb), DT_OK);
    assert_non_null(strstr(dt_tb_path(tb), "/runs/events.out.tfevents."));
    assert_int_equal(dt_tb_scalar(tb, "train/loss", 1, 2.25f), DT_OK);
    assert_int_equal(dt_tb_scalar(tb, "test/accuracy", 1, 0.875f), DT_OK);
    assert_int_equal(dt_tb_scalar(tb, "train/loss", 300, 0.3125f), DT_OK);
    char path[512];
    snprintf(path, sizeof path, "%s", dt_tb_path(tb));
    dt_tb_close(tb);

    event_t ev[8];
    assert_int_equal(read_events(path, ev, 8), 4);
    assert_string_equal(ev[0].version, "brain.Event:2");
    assert_false(ev[0].has_value);
    assert_true(ev[0].wall_time > 1.5e9);
    assert_string_equal(ev[1].tag, "train/loss");
    assert_int_equal(ev[1].step, 1);
    assert_true(ev[1].value == 2.25f);
    assert_string_equal(ev[2].tag, "test/accuracy");
    assert_true(ev[2].value == 0.875f);
    assert_int_equal(ev[3].step, 300);
    assert_true(ev[3].value == 0.3125f);
    assert_true(ev[3].wall_time >= ev[1].wall_time);
}

static void test_jsonl(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/m.jsonl", dir);
    dt_jsonl_t *j = NULL;
    assert_int_equal(dt_jsonl_open(path, &j), DT_OK);
    dt_epoch_metrics_t m = {.epoch = 2, .step = 1876, .train_loss = 0.5,
                            .test_loss = NAN, .test_accuracy = 0.8912,
                            .lr = 0.05, .samples_per_sec = 12345.67,
                            .comm_fraction = 0.125, .data_wait = 0.03125,
                            .epoch_seconds = 4.5};
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_OK);
    m.epoch = 3;
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_OK);
    dt_jsonl_close(j);
    FILE *f = fopen(path, "r");
    char line[1024];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line,
        "{\"epoch\":2,\"step\":1876,\"train_loss\":0.500000,"
        "\"test_loss\":null,\"test_accuracy\":0.891200,\"lr\":0.05,"
        "\"samples_per_sec\":12345.7,\"comm_fraction\":0.1250,"
        "\"data_wait\":0.0312,\"epoch_seconds\":4.500}\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "{\"epoch\":3,"));
    assert_null(fgets(line, sizeof line, f));
    fclose(f);
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* A fresh run empties the file it opened for appending; a pipe or a
 * device has nothing to empty. */
static void test_jsonl_truncate(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    dt_epoch_metrics_t m = {.epoch = 1, .step = 10};
    dt_jsonl_t *j = NULL;
    assert_int_equal(dt_jsonl_open(path, &j), DT_OK);
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_OK);
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_OK);
    dt_jsonl_close(j);
    assert_int_equal(dt_jsonl_open(path, &j), DT_OK); /* appends */
    assert_int_equal(dt_jsonl_truncate(j), DT_OK);
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_OK);
    dt_jsonl_close(j);
    assert_int_equal(count_lines(path), 1);
    assert_int_equal(dt_jsonl_open("/dev/null", &j), DT_OK);
    assert_int_equal(dt_jsonl_truncate(j), DT_OK);
    dt_jsonl_close(j);
}

/* A metrics or TensorBoard write that fails is a warning naming the file
 * and errno (the trainer then stops that output and goes on). */
static void test_write_failure_warns(void **state)
{
    (void)state;
    dt_jsonl_t *j = NULL;
    dt_epoch_metrics_t m = {.epoch = 1, .step = 10};
    capture_t cap;
    assert_int_equal(dt_jsonl_open("/dev/full", &j), DT_OK);
    capture_begin(&cap);
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_ERR_IO);
    char *log = capture_end(&cap);
    dt_jsonl_close(j);
    assert_non_null(strstr(log, "warning: /dev/full: cannot write metrics: "
                                "No space left on device"));
    assert_null(strstr(log, "error:"));
    free(log);

    char sub[256];
    snprintf(sub, sizeof sub, "%s/full", dir);
    dt_tb_t *tb = NULL;
    assert_int_equal(dt_tb_open(sub, &tb), DT_OK);
    /* larger than the warning, which the limit below also bounds (the
     * captured stderr is a file too) */
    for (int i = 0; i < 100; i++)
        assert_int_equal(dt_tb_scalar(tb, "train/loss", i, 1.0f), DT_OK);
    struct stat sb;
    assert_int_equal(stat(dt_tb_path(tb), &sb), 0);
    /* no byte more may be written (SIGXFSZ ignored: EFBIG instead) */
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)sb.st_size;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    capture_begin(&cap);
    dt_status_t st = dt_tb_scalar(tb, "train/loss", 1, 1.0f);
    log = capture_end(&cap);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    assert_int_equal(st, DT_ERR_IO);
    char want[600];
    snprintf(want, sizeof want, "warning: %s: cannot write TensorBoard "
             "event: File too large", dt_tb_path(tb));
    assert_non_null(strstr(log, want));
    assert_null(strstr(log, "error:"));
    free(log);
    dt_tb_close(tb);
}

/* A metrics line cut by a size limit is taken back (a reader of JSON
 * lines fails on a torn one); a file left with a torn last line (a crash
 * mid-write) is cut back to its last whole line before appending (the
 * next object was glued onto it). */
static void test_jsonl_never_torn(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/torn.jsonl", dir);
    dt_epoch_metrics_t m = {.epoch = 1, .step = 10, .train_loss = 0.5};
    dt_jsonl_t *j = NULL;
    assert_int_equal(dt_jsonl_open(path, &j), DT_OK);
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_OK);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    off_t one = sb.st_size;
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)(one + 40); /* part of a second line fits */
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_jsonl_write_epoch(j, &m);
    char *log = capture_end(&cap);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    dt_jsonl_close(j);
    assert_int_equal(st, DT_ERR_IO);
    free(log);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((long long)sb.st_size, (long long)one);
    /* a torn tail from elsewhere: cut when the file is opened again */
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("{\"epoch\":2,\"te", f);
    fclose(f);
    capture_begin(&cap);
    assert_int_equal(dt_jsonl_open(path, &j), DT_OK);
    log = capture_end(&cap);
    assert_non_null(strstr(log, "its last line was cut short"));
    free(log);
    m.epoch = 3;
    assert_int_equal(dt_jsonl_write_epoch(j, &m), DT_OK);
    dt_jsonl_close(j);
    assert_int_equal(count_lines(path), 2);
    char buf[1024];
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(buf, sizeof buf, f))
        assert_int_equal(strncmp(buf, "{\"epoch\":", 9), 0);
    fclose(f);
    assert_null(strstr(buf, "\"te{"));
}

/* [train] log_dir with parents that do not exist yet: created, as
 * checkpoint_dir is (rank 0 exited "No such file or directory"). */
static void test_tb_nested_dir(void **state)
{
    (void)state;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/nest/ed/tb", dir);
    dt_tb_t *tb = NULL;
    assert_int_equal(dt_tb_open(sub, &tb), DT_OK);
    assert_int_equal(dt_tb_scalar(tb, "train/loss", 1, 1.0f), DT_OK);
    struct stat sb;
    assert_int_equal(stat(dt_tb_path(tb), &sb), 0);
    dt_tb_close(tb);
    /* a file where a parent must be: the error names that part */
    char file[256], under[300];
    snprintf(file, sizeof file, "%s/plainfile", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(under, sizeof under, "%s/tb", file);
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_tb_open(under, &tb), DT_ERR_IO);
    char *log = capture_end(&cap);
    assert_non_null(strstr(log, "cannot create TensorBoard log directory"));
    assert_non_null(strstr(log, "[train] log_dir"));
    free(log);
}

static void test_progress_plain(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    dt_progress_t p;
    dt_progress_init(&p, f, 3);
    assert_false(p.tty);
    p.every = 2;
    dt_progress_epoch_start(&p, 0);
    for (uint64_t s = 1; s <= 5; s++)
        dt_progress_step(&p, 1, s, 5, 0.25, 1000.0, 0.125);
    dt_epoch_metrics_t m = {.epoch = 1, .test_accuracy = 0.5};
    dt_progress_epoch_end(&p, &m);
    rewind(f);
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    assert_non_null(strstr(buf, "epoch 1/3  step 2/5  loss 0.2500"));
    assert_non_null(strstr(buf, "step 4/5"));
    assert_non_null(strstr(buf, "data 12.5%"));
    assert_null(strstr(buf, "step 3/5"));
    assert_null(strchr(buf, '\r'));
    assert_non_null(strstr(buf, "test_accuracy 50.00%"));
}

/* The ETA counts the steps this start ran: a resumed epoch's steps before
 * it took none of the time (its ETA was a third of the truth). */
static void test_progress_eta(void **state)
{
    (void)state;
    /* 10 s for steps 21..30 of 63, resumed at 20: 1 s a step, 33 left */
    assert_float_equal(dt_progress_eta(10.0, 20, 30, 63), 33.0, 1e-12);
    /* a whole epoch: 10 s for 30 steps */
    assert_float_equal(dt_progress_eta(10.0, 0, 30, 63), 11.0, 1e-12);
    assert_float_equal(dt_progress_eta(10.0, 0, 63, 63), 0.0, 1e-12);
    /* nothing measured since the resume */
    assert_true(dt_progress_eta(0.0, 20, 20, 63) < 0.0);
    assert_true(dt_progress_eta(1.0, 0, 0, 63) < 0.0);
}

/* A blow-up's loss reads as 3.177e+36, not 37 digits; a tiny one as
 * 5e-05, not 0.0000; a usual one as before (%.4f). */
static void test_progress_loss_magnitudes(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    dt_progress_t p;
    dt_progress_init(&p, f, 1);
    p.every = 1;
    dt_progress_epoch_start(&p, 0);
    dt_progress_step(&p, 1, 1, 4, 3177449894411672057991985366686498816.0,
                     1.0, 0.0);
    dt_progress_step(&p, 1, 2, 4, 5e-5, 1.0, 0.0);
    dt_progress_step(&p, 1, 3, 4, 999999.5, 1.0, 0.0);
    dt_progress_step(&p, 1, 4, 4, 0.0, 1.0, 0.0);
    dt_epoch_metrics_t m = {.epoch = 1, .train_loss = 2.7e20,
                            .test_loss = 2.3026};
    dt_progress_epoch_end(&p, &m);
    rewind(f);
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    assert_non_null(strstr(buf, "step 1/4  loss 3.177e+36  "));
    assert_non_null(strstr(buf, "step 2/4  loss 5e-05  "));
    assert_non_null(strstr(buf, "step 3/4  loss 999999.5000  "));
    assert_non_null(strstr(buf, "step 4/4  loss 0.0000  "));
    assert_non_null(strstr(buf, "train_loss 2.7e+20  test_loss 2.3026  "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_varint),
        cmocka_unit_test(test_tensorboard_file),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_jsonl_truncate),
        cmocka_unit_test(test_jsonl_never_torn),
        cmocka_unit_test(test_tb_nested_dir),
        cmocka_unit_test(test_write_failure_warns),
        cmocka_unit_test(test_progress_plain),
        cmocka_unit_test(test_progress_eta),
        cmocka_unit_test(test_progress_loss_magnitudes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
