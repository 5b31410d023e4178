/* layer_times.c — the trainer's own per-layer times for dtctl plan
 * (layer_times.h). Synchronizing the compute stream at every gradient
 * event slows the timed steps: what it buys is each layer's time alone,
 * which is what the simulation replays (it overlaps the buckets
 * itself). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "layer_times.h"

#define FIRST_STEP 2 /* 0-based: steps 3 to 7 */
#define STEPS 5

struct dt_layer_timer {
    char *path;
    dt_device_t *dev;
    size_t batch;
    dt_status_t (*ready)(void *, size_t, size_t);
    void *ready_arg;
    double t0, last, fwd, opt, opt_t0;
    double *cur, *best, *bytes; /* per event; the tail after the last */
    size_t n, cap, events;      /* this step's count; the first step's */
    int timed;                  /* steps folded in                     */
    int written;                /* ... and in the file                 */
    int opt_timed;              /* steps whose optimizer ran           */
    uint64_t base, seen;        /* the first step this process ran;
                                   the steps it began since            */
    bool started;
    bool broken;                /* timing stopped (said why)           */
};

dt_status_t dt_layer_timer_new(const char *path, dt_device_t *dev,
                               size_t batch, dt_layer_timer_t **out)
{
    *out = NULL;
    if (!path || !*path)
        return DT_OK;
    dt_layer_timer_t *lt = calloc(1, sizeof *lt);
    if (!lt || !(lt->path = strdup(path))) {
        free(lt);
        return DT_ERR_NOMEM;
    }
    lt->dev = dev;
    lt->batch = batch;
    lt->fwd = lt->opt = 1e30;
    /* An unwritable path fails the job now, not after its third step;
     * an earlier run's file goes, so what is there is this run's. */
    char tmp[4200];
    FILE *f = NULL;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) < sizeof tmp)
        f = fopen(tmp, "w");
    if (!f) {
        dt_error("[train] layer_times = %s: cannot write %s: %s (a "
                 "writable file path)", path, tmp,
                 strlen(path) + 5 > sizeof tmp ? "path too long"
                                               : strerror(errno));
        free(lt->path);
        free(lt);
        return DT_ERR_IO;
    }
    fclose(f);
    remove(tmp);
    remove(path);
    *out = lt;
    return DT_OK;
}

void dt_layer_timer_free(dt_layer_timer_t *lt)
{
    if (!lt)
        return;
    if (lt->written > 0 && lt->written < STEPS)
        dt_info("layer times: %d of %d steps timed before training ended "
                "(%s has their fastest)", lt->written, STEPS, lt->path);
    else if (lt->written == 0 && !lt->broken)
        dt_warn("[train] layer_times = %s: nothing timed: this run began "
                "%llu step%s and timing starts at its step %d (train more "
                "steps)", lt->path, (unsigned long long)lt->seen,
                lt->seen == 1 ? "" : "s", FIRST_STEP + 1);
    free(lt->cur);
    free(lt->best);
    free(lt->bytes);
    free(lt->path);
    free(lt);
}

bool dt_layer_timer_on(dt_layer_timer_t *lt, uint64_t step)
{
    if (!lt || lt->broken)
        return false;
    if (!lt->started) {
        lt->started = true;
        lt->base = step;
    }
    if (step - lt->base + 1 > lt->seen)
        lt->seen = step - lt->base + 1;
    /* timed < STEPS: a rollback into the window does not time again */
    return lt->timed < STEPS && step - lt->base >= FIRST_STEP &&
           step - lt->base < FIRST_STEP + STEPS;
}

static double synced_now(dt_layer_timer_t *lt, dt_status_t *st)
{
    *st = dt_device_sync(lt->dev);
    return dt_clock_now();
}

dt_status_t dt_layer_timer_begin(dt_layer_timer_t *lt,
                                 dt_status_t (*ready)(void *, size_t, size_t),
                                 void *ready_arg)
{
    dt_status_t st;
    lt->ready = ready;
    lt->ready_arg = ready_arg;
    lt->n = 0;
    lt->t0 = synced_now(lt, &st);
    return st;
}

/* Event i of this step took `dt` seconds (and carries `bytes`). */
static dt_status_t note(dt_layer_timer_t *lt, double dt, double bytes)
{
    if (lt->n == lt->cap) {
        size_t cap = lt->cap ? 2 * lt->cap : 64;
        double *c = realloc(lt->cur, cap * sizeof *c);
        if (!c)
            return DT_ERR_NOMEM;
        lt->cur = c;
        double *b = realloc(lt->bytes, cap * sizeof *b);
        if (!b)
            return DT_ERR_NOMEM;
        lt->bytes = b;
        lt->cap = cap;
    }
    lt->cur[lt->n] = dt;
    lt->bytes[lt->n++] = bytes;
    return DT_OK;
}

dt_status_t dt_layer_timer_ready(void *arg, size_t offset, size_t len)
{
    dt_layer_timer_t *lt = arg;
    dt_status_t st;
    double now = synced_now(lt, &st);
    if (st == DT_OK)
        st = note(lt, now - lt->last, (double)len * sizeof(float));
    if (st != DT_OK)
        return st;
    st = lt->ready(lt->ready_arg, offset, len);
    lt->last = dt_clock_now(); /* the callback's own time is not a layer's */
    return st;
}

dt_status_t dt_layer_timer_mark(dt_layer_timer_t *lt, int what)
{
    dt_status_t st;
    double now = synced_now(lt, &st);
    if (st != DT_OK)
        return st;
    switch (what) {
    case DT_LT_FORWARD_DONE:
        if (now - lt->t0 < lt->fwd)
            lt->fwd = now - lt->t0;
        lt->last = now;
        return DT_OK;
    case DT_LT_BACKWARD_DONE: /* after the last gradient: no bytes */
        return note(lt, now - lt->last, 0);
    case DT_LT_OPT_BEGIN:
        lt->opt_t0 = now;
        return DT_OK;
    default:
        if (now - lt->opt_t0 < lt->opt)
            lt->opt = now - lt->opt_t0;
        lt->opt_timed++;
        return DT_OK;
    }
}

static dt_status_t write_file(const dt_layer_timer_t *lt)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", lt->path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        dt_warn("[train] layer_times = %s: cannot write %s: %s (timing "
                "stopped; training goes on)", lt->path, tmp, strerror(errno));
        return DT_ERR_IO;
    }
    fprintf(f, "# dt trainer: fastest of %d timed steps on %s, seconds and "
               "gradient bytes per gradient event, last layer first\n"
               "batch %zu\nforward %.9g\n", lt->timed, lt->dev->name,
            lt->batch, lt->fwd);
    if (lt->opt_timed)
        fprintf(f, "optimizer %.9g\n", lt->opt);
    else /* skipped (loss-scale overflow) or async in every timed step */
        fprintf(f, "# optimizer not timed: no timed step applied it\n");
    for (size_t i = 0; i < lt->events; i++)
        fprintf(f, "%.9g %.0f\n", lt->best[i], lt->bytes[i]);
    if (fclose(f) != 0 || rename(tmp, lt->path) != 0) {
        dt_warn("[train] layer_times = %s: cannot write it: %s (timing "
                "stopped; training goes on)", lt->path, strerror(errno));
        remove(tmp);
        return DT_ERR_IO;
    }
    return DT_OK;
}

dt_status_t dt_layer_timer_step_done(dt_layer_timer_t *lt)
{
    if (lt->timed == 0) {
        lt->events = lt->n;
        lt->best = malloc((lt->n ? lt->n : 1) * sizeof *lt->best);
        if (!lt->best) { /* training goes on untimed */
            dt_warn("[train] layer_times: out of memory: timing stopped");
            lt->broken = true;
            return DT_OK;
        }
        for (size_t i = 0; i < lt->n; i++)
            lt->best[i] = lt->cur[i];
    } else if (lt->n != lt->events) { /* cannot happen with one model */
        dt_warn("[train] layer_times: step %d had %zu gradient events, the "
                "first timed one %zu: timing stopped", FIRST_STEP + 1 +
                lt->timed, lt->n, lt->events);
        lt->broken = true;
        return DT_OK;
    } else {
        for (size_t i = 0; i < lt->n; i++)
            if (lt->cur[i] < lt->best[i])
                lt->best[i] = lt->cur[i];
    }
    lt->timed++;
    if (write_file(lt) != DT_OK) { /* said; training goes on untimed */
        lt->broken = true;
        return DT_OK;
    }
    lt->written = lt->timed;
    if (lt->timed == STEPS && !lt->opt_timed)
        dt_warn("[train] layer_times: no timed step applied the optimizer "
                "(skipped for overflow, or mode = async): %s has no "
                "optimizer line (dtctl plan counts it 0)", lt->path);
    if (lt->timed == STEPS)
        dt_info("layer times of %s (fastest of steps %d-%d, device "
                "synchronized at each gradient) written to %s: plan with "
                "dtctl plan --layer-times %s", lt->dev->name, FIRST_STEP + 1,
                FIRST_STEP + STEPS, lt->path, lt->path);
    return DT_OK;
}
