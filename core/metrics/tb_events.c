/* tb_events.c — TensorBoard event files written by hand: TFRecord framing
 * and the handful of Event/Summary protobuf fields scalars need. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <dt/log.h>
#include "base/make_dirs.h"
#include "metrics.h"

struct dt_tb {
    FILE *f;
    char *path;
};

/* Protobuf wire types. */
#define WT_VARINT 0
#define WT_FIXED64 1
#define WT_LEN 2
#define WT_FIXED32 5
#define KEY(field, wt) ((unsigned char)((field) << 3 | (wt)))

size_t dt_pb_varint(unsigned char *buf, uint64_t v)
{
    size_t n = 0;
    do {
        unsigned char b = v & 0x7f;
        v >>= 7;
        buf[n++] = b | (v ? 0x80 : 0);
    } while (v);
    return n;
}

static size_t put_le(unsigned char *buf, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        buf[i] = (unsigned char)(v >> (8 * i));
    return (size_t)bytes;
}

static size_t put_double(unsigned char *buf, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return put_le(buf, u, 8);
}

static size_t put_float(unsigned char *buf, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return put_le(buf, u, 4);
}

/* Summary.Value { tag = 1; simple_value = 2 } */
static size_t encode_value(unsigned char *buf, const char *tag, float value)
{
    size_t n = 0, tlen = strlen(tag);
    buf[n++] = KEY(1, WT_LEN);
    n += dt_pb_varint(buf + n, tlen);
    memcpy(buf + n, tag, tlen);
    n += tlen;
    buf[n++] = KEY(2, WT_FIXED32);
    n += put_float(buf + n, value);
    return n;
}

/* Event { wall_time = 1; step = 2; file_version = 3 | summary = 5 } with
 * Summary { repeated Value value = 1 }. Returns 0 when cap is too small. */
size_t dt_tb_encode_scalar_event(unsigned char *buf, size_t cap,
                                 double wall_time, int64_t step,
                                 const char *tag, float value)
{
    size_t tlen = strlen(tag);
    if (cap < tlen + 64)
        return 0;
    unsigned char val[64 + 256];
    if (tlen > 256)
        return 0;
    size_t vlen = encode_value(val, tag, value), n = 0;
    buf[n++] = KEY(1, WT_FIXED64);
    n += put_double(buf + n, wall_time);
    buf[n++] = KEY(2, WT_VARINT);
    n += dt_pb_varint(buf + n, (uint64_t)step);
    /* summary: one Value, itself length-delimited inside the Summary */
    unsigned char vhead[11];
    size_t vh = 0;
    vhead[vh++] = KEY(1, WT_LEN);
    vh += dt_pb_varint(vhead + vh, vlen);
    buf[n++] = KEY(5, WT_LEN);
    n += dt_pb_varint(buf + n, vh + vlen);
    memcpy(buf + n, vhead, vh);
    n += vh;
    memcpy(buf + n, val, vlen);
    return n + vlen;
}

static size_t encode_version_event(unsigned char *buf, double wall_time)
{
    static const char version[] = "brain.Event:2";
    size_t n = 0;
    buf[n++] = KEY(1, WT_FIXED64);
    n += put_double(buf + n, wall_time);
    buf[n++] = KEY(3, WT_LEN);
    n += dt_pb_varint(buf + n, sizeof version - 1);
    memcpy(buf + n, version, sizeof version - 1);
    return n + sizeof version - 1;
}

/* TFRecord: u64 length, u32 masked crc(length), data, u32 masked crc(data).
 * Fails with errno set, logging nothing. */
static dt_status_t write_record(dt_tb_t *tb, const unsigned char *data,
                                size_t len)
{
    unsigned char head[12], foot[4];
    put_le(head, len, 8);
    put_le(head + 8, dt_crc32c_masked(head, 8), 4);
    put_le(foot, dt_crc32c_masked(data, len), 4);
    if (fwrite(head, 1, sizeof head, tb->f) != sizeof head ||
        fwrite(data, 1, len, tb->f) != len ||
        fwrite(foot, 1, sizeof foot, tb->f) != sizeof foot ||
        fflush(tb->f) != 0)
        return DT_ERR_IO; /* errno says why; the caller says what */
    return DT_OK;
}

static double wall_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

dt_status_t dt_tb_open(const char *dir, dt_tb_t **out)
{
    *out = NULL;
    /* with its parents, as checkpoint_dir */
    DT_CHECK(dt_make_dirs(dir, "TensorBoard log directory", "[train] log_dir",
                          NULL));
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    double now = wall_now();
    dt_tb_t *tb = calloc(1, sizeof *tb);
    if (!tb || asprintf(&tb->path, "%s/events.out.tfevents.%lld.%s.%d", dir,
                        (long long)now, host, (int)getpid()) < 0) {
        free(tb);
        return DT_ERR_NOMEM;
    }
    tb->f = fopen(tb->path, "wb");
    if (!tb->f) {
        dt_error("%s: cannot create TensorBoard event file: %s", tb->path,
                 strerror(errno));
        free(tb->path);
        free(tb);
        return DT_ERR_IO;
    }
    unsigned char buf[64];
    dt_status_t st = write_record(tb, buf, encode_version_event(buf, now));
    if (st != DT_OK) {
        dt_error("%s: cannot write TensorBoard event: %s (check [train] "
                 "log_dir)", tb->path, strerror(errno));
        dt_tb_close(tb);
        return st;
    }
    *out = tb;
    return DT_OK;
}

dt_status_t dt_tb_scalar(dt_tb_t *tb, const char *tag, int64_t step,
                         float value)
{
    unsigned char buf[512];
    size_t n = dt_tb_encode_scalar_event(buf, sizeof buf, wall_now(), step,
                                         tag, value);
    if (n == 0) {
        dt_error("TensorBoard tag '%s' is too long", tag);
        return DT_ERR_INVALID;
    }
    if (write_record(tb, buf, n) != DT_OK) {
        dt_warn("%s: cannot write TensorBoard event: %s; no more are "
                "written there (training and checkpoints go on; free space "
                "or fix [train] log_dir)", tb->path, strerror(errno));
        return DT_ERR_IO;
    }
    return DT_OK;
}

const char *dt_tb_path(const dt_tb_t *tb) { return tb->path; }

void dt_tb_close(dt_tb_t *tb)
{
    if (!tb)
        return;
    if (tb->f)
        fclose(tb->f);
    free(tb->path);
    free(tb);
}
