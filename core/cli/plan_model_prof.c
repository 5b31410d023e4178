/* plan_model_prof.c — dtctl plan's model profile (plan_cli.h): forward,
 * backward between gradient events and the optimizer, measured here on
 * the CPU, as rooflines of a device (--device-bandwidth), from a
 * --layer-times file or from a parameter count (--model-params). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/clock.h>
#include <dt/log.h>
#include <dt/nn.h>
#include "base/line_read.h"
#include "plan_cli.h"
#include "run_trainer.h"

/* ---- the model, measured here -------------------------------------- */

typedef struct {
    double last, *t, *bytes;
    size_t n, cap;
} ready_log_t;

static dt_status_t on_ready(void *arg, size_t offset, size_t len)
{
    (void)offset;
    ready_log_t *r = arg;
    double now = dt_clock_now();
    if (r->n < r->cap) {
        r->t[r->n] = now - r->last;
        r->bytes[r->n] = (double)len * sizeof(float);
        r->n++;
    }
    r->last = now;
    return DT_OK;
}


int plan_input_dims(const dt_config_t *cfg, const char *given, int d[4])
{
    if (given)
        return sscanf(given, "%d,%d,%d,%d", &d[0], &d[1], &d[2], &d[3]) == 4
                   ? 0 : -1;
    char why[4400];
    dt_status_t st = run_trainer_input_shape_why(cfg, d, why, sizeof why);
    if (st == DT_ERR_NOT_FOUND)
        dt_error("plan: the input shape of the image folder is not known "
                 "here (%s): give --input C,H,W,CLASSES", why);
    return st == DT_OK ? 0 : -1;
}

/* --device-flops F with --device-bandwidth B: each layer's forward a
 * roofline, max(its FLOPs / F, the bytes it moves / B) for the batch
 * (activations at elem bytes, its float32 parameters read once);
 * backward twice that (two products; x and dy read, dx written, dW
 * read-modified), once for the first layer with parameters (no dx) and
 * nothing below it (dt_model_backward stops there); an event where a
 * layer has parameters, as dt_model_backward calls grad_sync after the
 * layer's backward; the
 * optimizer (SGD with momentum: p, g, v read, p and v written) at B.
 * Nothing timed here: the model is only parsed. */
int plan_roofline_model(const char *layers, const int d[4], int batch,
                        double rate, double bw, size_t elem,
                        model_prof_t *mp)
{
    dt_model_t *m = NULL;
    if (dt_model_parse(layers, "[model] layers", d[0], d[1], d[2], d[3], &m,
                       NULL) != DT_OK)
        return -1;
    int L = dt_model_nlayers(m);
    double *fwd = calloc((size_t)L + 1, sizeof *fwd);
    mp->bwd = calloc((size_t)L + 1, sizeof *mp->bwd);
    mp->bytes = calloc((size_t)L + 1, sizeof *mp->bytes);
    if (!fwd || !mp->bwd || !mp->bytes) {
        free(fwd);
        dt_model_free(m);
        return -1;
    }
    double nparams = 0;
    mp->forward = 0;
    for (int i = 0; i < L; i++) {
        double f, b;
        size_t p;
        dt_model_layer_cost(m, i, elem, &f, &b, &p);
        double tc = f * batch / rate, tm = (b * batch + 4.0 * p) / bw;
        fwd[i] = tc > tm ? tc : tm;
        mp->forward += fwd[i];
        nparams += (double)p;
    }
    int first = 0; /* the first layer with parameters */
    for (; first < L; first++) {
        double f, b;
        size_t p;
        dt_model_layer_cost(m, first, elem, &f, &b, &p);
        if (p)
            break;
    }
    double acc = 0;
    mp->n = 0;
    for (int i = L - 1; i >= first; i--) {
        double f, b;
        size_t p;
        dt_model_layer_cost(m, i, elem, &f, &b, &p);
        acc += (i == first ? 1 : 2) * fwd[i];
        if (p) {
            mp->bwd[mp->n] = acc;
            mp->bytes[mp->n++] = 4.0 * (double)p;
            acc = 0;
        }
    }
    mp->bwd[mp->n] = acc; /* after the last gradient: no bytes */
    mp->bytes[mp->n++] = 0;
    mp->optimizer = 20.0 * nparams / bw;
    mp->flops = dt_model_flops(m);
    free(fwd);
    dt_model_free(m);
    return 0;
}

int plan_model_launches(const dt_model_t *m)
{
    int L = dt_model_nlayers(m), first = 0;
    for (; first < L; first++) { /* backward stops at the first with params */
        double f, b;
        size_t p;
        dt_model_layer_cost(m, first, 4, &f, &b, &p);
        if (p)
            break;
    }
    return L + (L - first) + 1;
}

double plan_launch_bound(model_prof_t *mp, int launches, double per_launch)
{
    double gpu = mp->forward + mp->optimizer;
    for (size_t i = 0; i < mp->n; i++)
        gpu += mp->bwd[i];
    double host = launches * per_launch;
    if (!(gpu > 0) || host <= gpu)
        return 1.0;
    double k = host / gpu;
    mp->forward *= k;
    mp->optimizer *= k;
    for (size_t i = 0; i < mp->n; i++)
        mp->bwd[i] *= k;
    return k;
}

int plan_model_setup(const char *layers, const int d[4], int batch,
                     dt_device_t **dev, dt_model_t **m, float **x, int **y)
{
    size_t in = (size_t)d[0] * d[1] * d[2];
    *dev = NULL;
    *m = NULL;
    *x = NULL;
    *y = NULL;
    /* parsed first: a batch this host cannot hold is refused before
     * anything large is allocated */
    if (dt_model_parse(layers, "[model] layers", d[0], d[1], d[2], d[3], m,
                       NULL) != DT_OK ||
        plan_check_measure_memory(*m, d, batch) != 0)
        return *m ? -2 : -1; /* -2: too big for this host, said */
    *x = malloc((size_t)batch * in * sizeof **x);
    *y = malloc((size_t)batch * sizeof **y);
    if (!*x || !*y)
        return -1;
    uint32_t s = 12345;
    for (size_t i = 0; i < (size_t)batch * in; i++) {
        s = s * 1664525u + 1013904223u;
        (*x)[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    }
    for (int i = 0; i < batch; i++)
        (*y)[i] = i % d[3];
    if (dt_device_open("cpu", 0, 1, dev) != DT_OK ||
        dt_model_init(*m, *dev, 1) != DT_OK)
        return -1;
    return 0;
}

int plan_measure_model(const char *layers, const int d[4], int batch,
                       model_prof_t *mp)
{
    int rc = -1;
    dt_model_t *m = NULL;
    dt_device_t *dev = NULL;
    float *x = NULL;
    int *y = NULL;
    ready_log_t r = {0};
    double *best = NULL;
    int said = 0; /* the failure already explained */
    int setup = plan_model_setup(layers, d, batch, &dev, &m, &x, &y);
    if (setup != 0) {
        said = setup == -2;
        goto out;
    }
    r.cap = 4096;
    r.t = calloc(r.cap, sizeof *r.t);
    r.bytes = calloc(r.cap, sizeof *r.bytes);
    best = calloc(r.cap + 1, sizeof *best);
    if (!r.t || !r.bytes || !best)
        goto out;
    mp->forward = 1e30;
    size_t events = 0;
    for (int rep = 0; rep < 6; rep++) { /* the first warms up */
        float loss;
        double t0 = dt_clock_now();
        if (dt_model_forward(m, x, y, batch, 1, &loss, NULL) != DT_OK)
            goto out;
        double t1 = dt_clock_now();
        r.n = 0;
        r.last = t1;
        if (dt_model_backward(m, on_ready, &r) != DT_OK)
            goto out;
        double tail = dt_clock_now() - r.last;
        if (rep == 0) {
            events = r.n;
            for (size_t i = 0; i <= events; i++)
                best[i] = 1e30;
            continue;
        }
        if (t1 - t0 < mp->forward)
            mp->forward = t1 - t0;
        for (size_t i = 0; i < events && i < r.n; i++)
            if (r.t[i] < best[i])
                best[i] = r.t[i];
        if (tail < best[events])
            best[events] = tail;
    }
    mp->flops = dt_model_flops(m);
    /* The optimizer: SGD with momentum over every parameter (3 streams). */
    size_t np = dt_model_nparams(m);
    float *p, *g;
    if (dt_model_params(m, &p, &g, &np) != DT_OK)
        goto out;
    float *v = calloc(np ? np : 1, sizeof *v);
    if (!v)
        goto out;
    mp->optimizer = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = dt_clock_now();
        for (size_t i = 0; i < np; i++) {
            v[i] = 0.9f * v[i] + g[i];
            p[i] -= 1e-9f * v[i];
        }
        double t = dt_clock_now() - t0;
        if (t < mp->optimizer)
            mp->optimizer = t;
    }
    free(v);
    mp->n = events + 1;
    mp->bwd = malloc(mp->n * sizeof *mp->bwd);
    mp->bytes = malloc(mp->n * sizeof *mp->bytes);
    if (!mp->bwd || !mp->bytes)
        goto out;
    for (size_t i = 0; i < events; i++) {
        mp->bwd[i] = best[i];
        mp->bytes[i] = r.bytes[i];
    }
    mp->bwd[events] = best[events]; /* after the last gradient: no bytes */
    mp->bytes[events] = 0;
    rc = 0;
out:
    if (rc && !said)
        dt_error("plan: cannot run the model '%s' here", layers);
    dt_model_free(m);
    if (dev)
        dt_device_close(dev);
    free(x);
    free(y);
    free(r.t);
    free(r.bytes);
    free(best);
    return rc;
}

/* Only blanks (or nothing) left on the line. */
static int blank(const char *s)
{
    return s[strspn(s, " \t\r\n")] == '\0';
}

/* A number of seconds at s: finite, not negative; *rest after it. */
static int seconds_at(const char *s, double *out, char **rest)
{
    errno = 0;
    *out = strtod(s, rest);
    return *rest == s || errno || !isfinite(*out) || *out < 0 ? -1 : 0;
}

/* --layer-times FILE: "SECONDS BYTES" a line, in the order the gradients
 * are ready (last layer first), e.g. from a GPU run; "forward S" and
 * "optimizer S" lines set those. */
int plan_read_layer_times(const char *path, model_prof_t *mp)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        dt_error("plan: cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL; /* fgets in pieces looped on /dev/zero for ever */
    size_t cap = 0, line_cap = 0;
    int ln = 0, seen_fwd = 0, nul;
    ssize_t got;
    mp->n = 0;
    while ((got = dt_line_read(f, &line, &line_cap, &nul)) >= 0 ||
           got == DT_LINE_TOO_LONG) {
        ln++;
        double a, b;
        char *rest;
        if (got == DT_LINE_TOO_LONG || nul) {
            dt_error("plan: %s:%d: %s: not a layer-times file (check the "
                     "path: --save-layers FILE writes one)", path, ln,
                     nul ? "a NUL byte (binary data)"
                         : "a line longer than " DT_LINE_MAX_TEXT);
            free(line);
            fclose(f);
            return -1;
        }
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        if (!strncmp(line, "batch ", 6)) {
            long long bt = strtoll(line + 6, &rest, 10);
            if (bt < 1 || bt > (1 << 24) || !blank(rest))
                goto bad;
            mp->batch = bt;
        } else if (!strncmp(line, "forward ", 8)) {
            if (seconds_at(line + 8, &a, &rest) || !blank(rest))
                goto bad;
            mp->forward = a;
            seen_fwd = 1;
        } else if (!strncmp(line, "optimizer ", 10)) {
            if (seconds_at(line + 10, &a, &rest) || !blank(rest))
                goto bad;
            mp->optimizer = a;
        } else {
            if (seconds_at(line, &a, &rest))
                goto bad;
            errno = 0;
            b = strtod(rest, &rest);
            if (errno || !isfinite(b) || b < 0 || b > 1e13 || !blank(rest))
                goto bad;
            if (mp->n == cap) {
                cap = cap ? 2 * cap : 64;
                double *w = realloc(mp->bwd, cap * sizeof *w);
                if (w)
                    mp->bwd = w;
                double *y = realloc(mp->bytes, cap * sizeof *y);
                if (y)
                    mp->bytes = y;
                if (!w || !y) {
                    free(line);
                    fclose(f);
                    return -1;
                }
            }
            mp->bwd[mp->n] = a;
            mp->bytes[mp->n++] = b;
        }
        continue;
    bad:
        dt_error("plan: %s:%d: expected 'SECONDS BYTES', 'forward S', "
                 "'optimizer S' or 'batch B' (seconds and bytes finite, not "
                 "negative; B a positive integer)", path, ln);
        free(line);
        fclose(f);
        return -1;
    }
    free(line);
    fclose(f);
    if (got == DT_LINE_NOMEM) {
        dt_error("plan: %s: out of memory", path);
        return -1;
    }
    if (!mp->n) {
        dt_error("plan: %s has no layer line", path);
        return -1;
    }
    if (!seen_fwd)
        dt_warn("plan: %s has no 'forward S' line: the forward pass is "
                "taken as 0", path);
    return 0;
}

/* --model-params N: a model given by its size alone (docs/PLAN.md): N
 * float32 gradients split evenly into L layers; compute in unit times,
 * forward 1/3 and backward 2/3 of the step (backward costs about twice
 * the forward), spread evenly over the layers, no separate optimizer;
 * --samples-per-sec then scales the whole to batch / X. */
int plan_synthetic_model(double params, int layers, model_prof_t *mp)
{
    mp->n = (size_t)layers;
    mp->bwd = malloc(mp->n * sizeof *mp->bwd);
    mp->bytes = malloc(mp->n * sizeof *mp->bytes);
    if (!mp->bwd || !mp->bytes)
        return -1;
    mp->forward = 1.0 / 3;
    mp->optimizer = 0;
    for (size_t i = 0; i < mp->n; i++) {
        mp->bwd[i] = 2.0 / 3 / layers;
        mp->bytes[i] = params * sizeof(float) / layers;
    }
    return 0;
}
