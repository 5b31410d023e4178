/* work_load.c — unequal shares of each global batch ([cluster] work_load):
 * the weights from the configuration, and work_load = auto's rebalancing
 * from measured compute times (docs/TRAINING.md, "Unequal shares"). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "train.h"

/* The smallest weight relative to the largest (auto). */
#define MIN_WEIGHT DT_WORK_LOAD_MIN_WEIGHT
/* auto: the new weights are this much of the measured speeds and the rest
 * the old weights (smoothing against a noisy epoch). */
#define SMOOTHING 0.75

void dt_work_load_format(const double *w, int world, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int r = 0; r < world && at < len; r++) {
        int k = snprintf(buf + at, len - at, "%s%.2f", r ? "," : "", w[r]);
        if (k < 0)
            break;
        at += (size_t)k;
    }
}

dt_status_t dt_work_load_from_config(const dt_config_t *cfg, int world,
                                     double **weights, bool *is_auto)
{
    *weights = NULL;
    *is_auto = false;
    const char *text = dt_config_get(cfg, "cluster", "work_load");
    if (!text)
        return DT_OK;
    const char *where = "default";
    dt_config_origin(cfg, "cluster", "work_load", NULL, &where);
    while (isspace((unsigned char)*text))
        text++;
    if (!*text)
        return DT_OK;
    if (strcmp(text, "auto") == 0) {
        *is_auto = true;
        return DT_OK;
    }
    double *w = malloc((size_t)(world > 0 ? world : 1) * sizeof *w);
    if (!w)
        return DT_ERR_NOMEM;
    int n = 0;
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        const char *e = end;
        while (isspace((unsigned char)*e))
            e++;
        if (end == p || errno || (*e && *e != ',') || !isfinite(v)) {
            int len = (int)strcspn(p, ",");
            dt_error("%s: [cluster] work_load = '%s': '%.*s' is not a "
                     "number; write one weight per worker (e.g. 1,1,2,2) "
                     "or auto", where, text, len, p);
            free(w);
            return DT_ERR_CONFIG;
        }
        if (!(v > 0.0)) {
            dt_error("%s: [cluster] work_load = '%s': weight %d is %g; "
                     "every weight must be above 0 (each worker needs a "
                     "share)", where, text, n + 1, v);
            free(w);
            return DT_ERR_CONFIG;
        }
        if (n < world)
            w[n] = v;
        n++;
        if (!*e)
            break;
        p = e + 1;
    }
    if (n != world) {
        dt_error("%s: [cluster] work_load = '%s' has %d weight%s for %d "
                 "worker%s; give one per worker (rank order) or auto",
                 where, text, n, n == 1 ? "" : "s", world,
                 world == 1 ? "" : "s");
        free(w);
        return DT_ERR_CONFIG;
    }
    *weights = w;
    return DT_OK;
}

dt_status_t dt_trainer_rebalance(dt_trainer_t *t)
{
    int n = t->world;
    if (n <= 1)
        return DT_OK;
    /* Every rank's compute time per sample: each fills its own entry. */
    double *tps = calloc((size_t)n, sizeof *tps);
    double *w = malloc((size_t)n * sizeof *w);
    if (!tps || !w) {
        free(tps);
        free(w);
        return DT_ERR_NOMEM;
    }
    tps[t->rank] = t->compute_samples
                       ? t->compute_seconds / (double)t->compute_samples
                       : 0.0;
    dt_status_t st = dt_allreduce(tps, tps, (size_t)n, DT_FLOAT64, DT_SUM);
    if (st != DT_OK)
        goto out;
    double fastest = 0.0, slowest = 0.0, wmax = 0.0;
    int slow = 0;
    for (int r = 0; r < n; r++) {
        if (tps[r] > 0 && (fastest == 0.0 || tps[r] < fastest))
            fastest = tps[r];
        if (tps[r] > slowest) {
            slowest = tps[r];
            slow = r;
        }
    }
    if (fastest <= 0.0) /* nothing measured: keep the weights */
        goto out;
    double oldmax = 0.0;
    for (int r = 0; r < n; r++) {
        double old = t->work_load ? t->work_load[r] : 1.0;
        oldmax = old > oldmax ? old : oldmax;
    }
    for (int r = 0; r < n; r++) {
        double speed = tps[r] > 0 ? fastest / tps[r] : 1.0; /* <= 1 */
        double old = (t->work_load ? t->work_load[r] : 1.0) / oldmax;
        w[r] = SMOOTHING * speed + (1.0 - SMOOTHING) * old;
        wmax = w[r] > wmax ? w[r] : wmax;
    }
    for (int r = 0; r < n; r++) {
        w[r] /= wmax;
        if (w[r] < MIN_WEIGHT)
            w[r] = MIN_WEIGHT;
        /* Two decimals, as logged and checkpointed: every rank agrees and
         * the log says exactly what is used. */
        w[r] = round(w[r] * 100.0) / 100.0;
        if (w[r] < 0.01)
            w[r] = 0.01;
    }
    if (t->rank == 0) {
        char buf[4096];
        dt_work_load_format(w, n, buf, sizeof buf);
        dt_info("epoch %llu: work_load %s (rank %d slower: %.1fx the step "
                "time per sample)", (unsigned long long)t->epoch + 1, buf,
                slow, slowest / fastest);
    }
    if (!t->work_load) {
        t->work_load = w;
        w = NULL;
    } else {
        memcpy(t->work_load, w, (size_t)n * sizeof *w);
    }
    st = dt_pipeline_set_shares(t->pipe, t->work_load);
    if (st == DT_ERR_INVALID) /* a bug: within the floor, they fit */
        dt_error("work_load = auto: the weights above give a rank more "
                 "samples a step than the loaders hold (their smallest is "
                 "kept at 1/20 of the largest)");
    if (st == DT_OK && t->epoch + 1 < t->epochs)
        st = dt_pipeline_seek(t->pipe, t->epoch + 1, 0);
out:
    free(tps);
    free(w);
    return st;
}
