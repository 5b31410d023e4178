/* metrics_jsonl.c — one JSON object per line per epoch (--metrics FILE). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "metrics.h"

struct dt_jsonl {
    FILE *f;
    char *path;
};

/* A regular file whose last line has no newline (a write cut by a full
 * disk or a size limit, or a crash): cut back to its last whole line, so
 * that appending does not glue the next object onto the torn one. */
static void drop_torn_tail(FILE *f, const char *path)
{
    struct stat sb;
    int fd = fileno(f);
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0)
        return;
    int rd = open(path, O_RDONLY | O_CLOEXEC); /* f is append-only */
    if (rd < 0)
        return;
    off_t end = sb.st_size, keep = end;
    char c = '\n';
    /* a line is a few hundred bytes: a longer tail is not ours to cut */
    while (keep > 0 && end - keep < 65536 &&
           pread(rd, &c, 1, keep - 1) == 1 && c != '\n')
        keep--;
    close(rd);
    if (keep == end || (keep > 0 && c != '\n'))
        return;
    if (ftruncate(fd, keep) != 0)
        dt_warn("%s: cannot cut its torn last line: %s", path,
                strerror(errno));
    else
        dt_warn("%s: its last line was cut short (%lld bytes without a "
                "newline, a write that failed): removed before appending",
                path, (long long)(end - keep));
}

dt_status_t dt_jsonl_open(const char *path, dt_jsonl_t **out)
{
    *out = NULL;
    dt_jsonl_t *j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        return DT_ERR_NOMEM;
    }
    j->f = fopen(path, "a");
    if (!j->f) {
        dt_error("%s: cannot open the metrics file: %s (check --metrics)",
                 path, strerror(errno));
        free(j->path);
        free(j);
        return DT_ERR_IO;
    }
    drop_torn_tail(j->f, path);
    *out = j;
    return DT_OK;
}

dt_status_t dt_jsonl_truncate(dt_jsonl_t *j)
{
    struct stat sb;
    /* A pipe or a device (/dev/stdout) has nothing to empty. */
    if (fstat(fileno(j->f), &sb) != 0 || !S_ISREG(sb.st_mode))
        return DT_OK;
    if (fflush(j->f) != 0 || ftruncate(fileno(j->f), 0) != 0) {
        dt_error("%s: cannot empty the metrics file for a fresh run: %s "
                 "(check --metrics)", j->path, strerror(errno));
        return DT_ERR_IO;
    }
    return DT_OK;
}

/* JSON has no NaN or infinity: those become null. */
static void num(FILE *f, const char *key, double v, const char *fmt,
                int last)
{
    fprintf(f, "\"%s\":", key);
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("null", f);
    fputs(last ? "}\n" : ",", f);
}

/* The epoch's line, whole, into a buffer (*line, malloc'd). */
static dt_status_t format_epoch(const dt_epoch_metrics_t *m, char **line,
                                size_t *len)
{
    FILE *f = open_memstream(line, len);
    if (!f)
        return DT_ERR_NOMEM;
    fprintf(f, "{\"epoch\":%llu,\"step\":%llu,", (unsigned long long)m->epoch,
            (unsigned long long)m->step);
    num(f, "train_loss", m->train_loss, "%.6f", 0);
    num(f, "test_loss", m->test_loss, "%.6f", 0);
    num(f, "test_accuracy", m->test_accuracy, "%.6f", 0);
    num(f, "lr", m->lr, "%.8g", 0);
    num(f, "samples_per_sec", m->samples_per_sec, "%.1f", 0);
    num(f, "comm_fraction", m->comm_fraction, "%.4f", 0);
    num(f, "data_wait", m->data_wait, "%.4f", 0);
    num(f, "epoch_seconds", m->epoch_seconds, "%.3f", 1);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(*line);
        *line = NULL;
        return DT_ERR_NOMEM;
    }
    return DT_OK;
}

/* One line per write, and a line that could not be written whole is
 * taken back (readers of JSON lines fail on a torn one). */
static dt_status_t write_line(dt_jsonl_t *j, char *line, size_t len);

dt_status_t dt_jsonl_write_epoch(dt_jsonl_t *j, const dt_epoch_metrics_t *m)
{
    char *line = NULL;
    size_t len = 0;
    DT_CHECK(format_epoch(m, &line, &len));
    return write_line(j, line, len);
}

dt_status_t dt_jsonl_write_eval(dt_jsonl_t *j, uint64_t epoch, uint64_t step,
                                double test_loss, double test_accuracy)
{
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f)
        return DT_ERR_NOMEM;
    fprintf(f, "{\"event\":\"eval\",\"epoch\":%llu,\"step\":%llu,",
            (unsigned long long)epoch, (unsigned long long)step);
    num(f, "test_loss", test_loss, "%.6f", 0);
    num(f, "test_accuracy", test_accuracy, "%.6f", 1);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(line);
        return DT_ERR_NOMEM;
    }
    return write_line(j, line, len);
}

/* line (freed here) as one write; one that could not be written whole
 * is taken back. */
static dt_status_t write_line(dt_jsonl_t *j, char *line, size_t len)
{
    FILE *f = j->f;
    struct stat sb;
    int regular = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode);
    off_t before = regular ? sb.st_size : 0;
    int ok = fwrite(line, 1, len, f) == len && fflush(f) == 0 && !ferror(f);
    int err = errno;
    free(line);
    if (ok)
        return DT_OK;
    if (regular && ftruncate(fileno(f), before) != 0)
        dt_warn("%s: cannot take back the line written in part: %s",
                j->path, strerror(errno));
    dt_warn("%s: cannot write metrics: %s; no more are written there "
            "(training and checkpoints go on; free space or fix --metrics)",
            j->path, strerror(err));
    return DT_ERR_IO;
}

void dt_jsonl_close(dt_jsonl_t *j)
{
    if (!j)
        return;
    fclose(j->f);
    free(j->path);
    free(j);
}
