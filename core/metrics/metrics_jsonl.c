/* metrics_jsonl.c — one JSON object per line per epoch (--metrics FILE). */
#include <errno.h>
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

dt_status_t dt_jsonl_write_epoch(dt_jsonl_t *j, const dt_epoch_metrics_t *m)
{
    FILE *f = j->f;
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
    if (fflush(f) != 0 || ferror(f)) {
        dt_warn("%s: cannot write metrics: %s; no more are written there "
                "(training and checkpoints go on; free space or fix "
                "--metrics)", j->path, strerror(errno));
        return DT_ERR_IO;
    }
    return DT_OK;
}

void dt_jsonl_close(dt_jsonl_t *j)
{
    if (!j)
        return;
    fclose(j->f);
    free(j->path);
    free(j);
}
