/* plan_colocation.c — dtctl plan --colocation: how much slower a step's
 * compute runs when k workers share a host and N of them meet at every
 * allreduce, measured here rather than assumed.
 *
 * The planner's layer times are each layer's fastest on an idle machine.
 * A synchronous step waits for the slowest of its N workers, and workers
 * that share a host share its memory bandwidth, caches and clock boost:
 * on the lent device's 16 cores (session 8) the MLP's per-worker rate
 * fell 27% from 1 to 8 workers with a core each while the plan's
 * allreduce added 0.2 ms, and the plan missed by 25-33%. So: run k copies
 * of the job's model at once (k = the plan's workers per host), record
 * every step's wall time, and take the expected slowest of N such steps
 * from their distribution (order statistics of the samples, as if the
 * steps were independent draws):
 *
 *     E[max of N] = sum_i x_(i) ((i/m)^N - ((i-1)/m)^N),  x sorted, m samples
 *
 * The compute factor at N is that over the fastest step of one copy
 * alone; dt-plan-sim multiplies the step's compute by it
 * (compute_factor = N F). The samples can be saved
 * (--save-colocation) and planned elsewhere (--colocation FILE): measured
 * where the job runs, planned where SimGrid is. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/clock.h>
#include <dt/log.h>
#include <dt/nn.h>
#include "base/line_read.h"
#include "plan_cli.h"

#define MIN_STEPS 8
#define MAX_STEPS 400
#define BUDGET_S 1.5 /* per k: about this long at k = 1's speed */

/* One copy: the model on one CPU thread, two warm-up steps, a byte on
 * ready, then steps timed after the parent's go; the times to out; then
 * untimed steps until the parent closes stop. */
static void copy_main(const char *layers, const int d[4], int batch,
                      int steps, int ready, int go, int stop, int out)
{
    dt_model_t *m;
    dt_device_t *dev;
    float *x;
    int *y;
    double *t = malloc((size_t)steps * sizeof *t);
    if (!t || plan_model_setup(layers, d, batch, &dev, &m, &x, &y) != 0)
        _exit(1);
    float *p, *g;
    size_t np = 0;
    if (dt_model_params(m, &p, &g, &np) != DT_OK)
        _exit(1);
    float *v = calloc(np ? np : 1, sizeof *v);
    if (!v)
        _exit(1);
    char c = 1;
    for (int i = -2; i < steps; i++) {
        if (i == 0) { /* ready closed after: a copy that died before
                         its byte leaves the parent an end of file, not
                         a wait */
            if (write(ready, &c, 1) != 1)
                _exit(1);
            close(ready);
            if (read(go, &c, 1) != 1)
                _exit(1);
        }
        float loss;
        double t0 = dt_clock_now();
        if (dt_model_forward(m, x, y, batch, 1, &loss, NULL) != DT_OK ||
            dt_model_backward(m, NULL, NULL) != DT_OK)
            _exit(1);
        for (size_t j = 0; j < np; j++) { /* SGD with momentum */
            v[j] = 0.9f * v[j] + g[j];
            p[j] -= 1e-9f * v[j];
        }
        if (i >= 0)
            t[i] = dt_clock_now() - t0;
    }
    size_t left = (size_t)steps * sizeof *t;
    const char *b = (const char *)t;
    while (left) {
        ssize_t w = write(out, b, left);
        if (w <= 0)
            _exit(1);
        b += w;
        left -= (size_t)w;
    }
    /* untimed steps until every copy is done (the parent closes stop):
     * the slower copies' last timed steps keep their neighbours */
    struct pollfd pf = {.fd = stop, .events = POLLIN};
    while (poll(&pf, 1, 0) == 0) {
        float loss;
        if (dt_model_forward(m, x, y, batch, 1, &loss, NULL) != DT_OK ||
            dt_model_backward(m, NULL, NULL) != DT_OK)
            break;
    }
    _exit(0);
}

/* k copies at once, steps each: their k * steps times into c's slot. */
static int run_copies(const char *layers, const int d[4], int batch, int k,
                      int steps, coloc_t *c)
{
    int ready[2], go[2] = {-1, -1}, stop[2] = {-1, -1};
    pid_t *pid = calloc((size_t)k, sizeof *pid);
    int *out = calloc((size_t)k, sizeof *out);
    double *t = malloc((size_t)k * steps * sizeof *t);
    int rc = -1, started = 0;
    if (!pid || !out || !t || pipe(ready)) {
        free(pid);
        free(out);
        free(t);
        return -1;
    }
    if (pipe(go) || pipe(stop)) {
        int fds[6] = {ready[0], ready[1], go[0], go[1], stop[0], stop[1]};
        for (int i = 0; i < 6; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        free(pid);
        free(out);
        free(t);
        return -1;
    }
    fflush(NULL);
    for (; started < k; started++) {
        int o[2];
        if (pipe(o))
            break;
        pid[started] = fork();
        if (pid[started] < 0) {
            close(o[0]);
            close(o[1]);
            break;
        }
        if (pid[started] == 0) {
            close(o[0]);
            close(ready[0]);
            close(go[1]);
            close(stop[1]);
            for (int j = 0; j < started; j++) /* the earlier copies' */
                close(out[j]);
            copy_main(layers, d, batch, steps, ready[1], go[0], stop[0],
                      o[1]);
        }
        close(o[1]);
        out[started] = o[0];
    }
    close(ready[1]);
    close(go[0]);
    close(stop[0]);
    char ch;
    int ok = started == k;
    for (int i = 0; ok && i < k; i++) /* every copy built and warm */
        ok = read(ready[0], &ch, 1) == 1;
    for (int i = 0; ok && i < k; i++)
        ok = write(go[1], "g", 1) == 1;
    close(go[1]);
    close(ready[0]);
    for (int i = 0; i < started; i++) {
        size_t want = (size_t)steps * sizeof *t, got = 0;
        char *b = (char *)(t + (size_t)i * steps);
        while (ok && got < want) {
            ssize_t r = read(out[i], b + got, want - got);
            if (r <= 0)
                ok = 0;
            else
                got += (size_t)r;
        }
        close(out[i]);
    }
    close(stop[1]); /* every copy's times read: they may stop */
    for (int i = 0; i < started; i++) {
        int st = 0;
        if (!ok)
            kill(pid[i], SIGKILL);
        waitpid(pid[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            ok = 0;
    }
    if (ok && c->nk < PLAN_COLOC_MAX) {
        c->k[c->nk] = k;
        c->t[c->nk] = t;
        c->n[c->nk++] = (size_t)k * steps;
        t = NULL;
        rc = 0;
    }
    free(pid);
    free(out);
    free(t);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int plan_colocation_measure(const char *layers, const int d[4], int batch,
                            const int *ks, int nk, coloc_t *c)
{
    memset(c, 0, sizeof *c);
    c->batch = batch;
    /* k = 1 first: its speed sets the steps every k runs */
    if (run_copies(layers, d, batch, 1, MIN_STEPS, c) != 0) {
        dt_error("plan: --colocation: cannot run the model '%s' here",
                 layers);
        return -1;
    }
    double sum = 0;
    for (size_t i = 0; i < c->n[0]; i++)
        sum += c->t[0][i];
    double mean = sum / (double)c->n[0];
    int steps = mean > 0 ? (int)(BUDGET_S / mean) : MAX_STEPS;
    steps = steps < MIN_STEPS ? MIN_STEPS : steps > MAX_STEPS ? MAX_STEPS
                                                              : steps;
    free(c->t[0]);
    c->nk = 0;
    for (int i = 0; i < nk; i++) {
        int seen = 0;
        for (int j = 0; j < c->nk; j++)
            seen |= c->k[j] == ks[i];
        if (seen)
            continue;
        if (run_copies(layers, d, batch, ks[i], steps, c) != 0) {
            dt_error("plan: --colocation: %d copies of the model at once "
                     "failed (or more than %d values of k)", ks[i],
                     PLAN_COLOC_MAX);
            plan_colocation_free(c);
            return -1;
        }
        qsort(c->t[c->nk - 1], c->n[c->nk - 1], sizeof(double), cmp_double);
    }
    return 0;
}

static const coloc_t *sample_of(const coloc_t *c, int k, size_t *slot)
{
    for (int i = 0; i < c->nk; i++)
        if (c->k[i] == k) {
            *slot = (size_t)i;
            return c;
        }
    return NULL;
}

double plan_colocation_factor(const coloc_t *c, int k, int n)
{
    size_t a, b;
    if (!sample_of(c, 1, &a) || !sample_of(c, k, &b) || !c->n[a] ||
        !c->n[b] || n < 1)
        return 0;
    const double *x = c->t[b];
    double m = (double)c->n[b], e = 0, prev = 0;
    for (size_t i = 1; i <= c->n[b]; i++) {
        double cur = pow((double)i / m, n);
        e += x[i - 1] * (cur - prev);
        prev = cur;
    }
    return c->t[a][0] > 0 ? e / c->t[a][0] : 0; /* sorted: [0] fastest */
}

int plan_colocation_write(const char *path, const coloc_t *c)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        dt_error("plan: cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    fprintf(f, "# dtctl plan --save-colocation: each step's compute "
               "seconds with k copies of the model at once on this host\n"
               "batch %lld\n", c->batch);
    for (int i = 0; i < c->nk; i++) {
        fprintf(f, "k %d", c->k[i]);
        for (size_t j = 0; j < c->n[i]; j++)
            fprintf(f, " %.9g", c->t[i][j]);
        fputc('\n', f);
    }
    if ((ferror(f) | fclose(f)) != 0 || rename(tmp, path) != 0) {
        dt_error("plan: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* One "k K SECONDS..." line's samples, sorted, in *out: 0; -1 if
 * malformed; -2 out of memory (not the file's fault: said apart). */
static int parse_samples(const char *s, double **out, size_t *n)
{
    size_t cap = 64;
    double *t = malloc(cap * sizeof *t);
    char *end;
    *n = 0;
    *out = NULL;
    if (!t)
        return -2;
    for (;;) {
        double v = strtod(s, &end);
        if (end == s)
            break;
        if (!(v > 0) || v > 1e6 || *n == 1000000) { /* a million steps:
                                                        not ours */
            free(t);
            return -1;
        }
        if (*n == cap) {
            double *bigger = realloc(t, 2 * cap * sizeof *t);
            if (!bigger) {
                free(t);
                return -2;
            }
            t = bigger;
            cap *= 2;
        }
        t[(*n)++] = v;
        s = end;
    }
    if (!*n || s[strspn(s, " \t\r\n")] != '\0') {
        free(t);
        return -1;
    }
    qsort(t, *n, sizeof *t, cmp_double);
    *out = t;
    return 0;
}

int plan_colocation_read(const char *path, coloc_t *c)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f) {
        dt_error("plan: --colocation %s: %s (a file from "
                 "--save-colocation, or 'measure')", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int ln = 0, rc = 0, nul;
    ssize_t got = DT_LINE_END;
    while (rc == 0 && ((got = dt_line_read(f, &line, &cap, &nul)) > 0 ||
                       got == DT_LINE_TOO_LONG)) {
        ln++;
        if (got == DT_LINE_TOO_LONG || nul) { /* a device, a data file */
            dt_error("plan: %s:%d: %s: not a colocation file (check the "
                     "path: --save-colocation FILE writes one)", path, ln,
                     nul ? "a NUL byte (binary data)"
                         : "a line longer than " DT_LINE_MAX_TEXT);
            rc = -1;
            break;
        }
        long long bt;
        int k, used = 0;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        if (sscanf(line, "batch %lld", &bt) == 1 && bt > 0) {
            c->batch = bt;
            continue;
        }
        int dup = 0;
        if (sscanf(line, "k %d%n", &k, &used) == 1)
            for (int j = 0; j < c->nk; j++)
                dup |= c->k[j] == k;
        if (sscanf(line, "k %d%n", &k, &used) != 1 || k < 1 || dup ||
            (line[used] != ' ' && line[used] != '\t') ||
            c->nk == PLAN_COLOC_MAX) {
            dt_error("plan: %s:%d: expected 'k K SECONDS...' (K a whole "
                     "number, once each, at most %d such lines) or 'batch "
                     "B'", path, ln, PLAN_COLOC_MAX);
            rc = -1;
            break;
        }
        size_t n;
        double *t;
        int bad = parse_samples(line + used, &t, &n);
        if (bad) {
            if (bad == -2)
                dt_error("plan: %s:%d: out of memory", path, ln);
            else
                dt_error("plan: %s:%d: k %d: positive step seconds "
                         "expected", path, ln, k);
            rc = -1;
            break;
        }
        c->k[c->nk] = k;
        c->t[c->nk] = t;
        c->n[c->nk++] = n;
    }
    free(line);
    fclose(f);
    if (rc == 0 && got == DT_LINE_NOMEM) { /* not the end of the file */
        dt_error("plan: %s:%d: out of memory reading this line", path,
                 ln + 1);
        rc = -1;
    }
    size_t one;
    if (rc == 0 && !sample_of(c, 1, &one)) {
        dt_error("plan: %s: no 'k 1' line (the model alone)", path);
        rc = -1;
    }
    if (rc != 0)
        plan_colocation_free(c);
    return rc;
}

void plan_colocation_free(coloc_t *c)
{
    for (int i = 0; i < c->nk; i++)
        free(c->t[i]);
    memset(c, 0, sizeof *c);
}

/* The Ns dt-plan-sim runs (1, 2, 4, ..., max), as its main() does. */
static int sim_ns(int max, int *ns)
{
    int n = 0;
    for (int w = 1; w <= max; w *= 2) {
        ns[n++] = w;
        if (w > max / 2)
            break; /* and no overflow */
    }
    if (ns[n - 1] != max)
        ns[n++] = max;
    return n;
}

int plan_colocation_ks(int gpus, int max_workers, int *ks)
{
    int ns[64], nn = sim_ns(max_workers, ns), nk = 0;
    for (int i = 0; i < nn; i++) {
        int k = ns[i] < gpus ? ns[i] : gpus, seen = 0;
        for (int j = 0; j < nk; j++)
            seen |= ks[j] == k;
        if (!seen)
            ks[nk++] = k;
    }
    return nk;
}

int plan_colocation_spec(const coloc_t *c, int gpus, int max_workers,
                         const char *src, FILE *spec)
{
    int ns[64], nn = sim_ns(max_workers, ns);
    printf("# co-located compute (%s): the step's compute times the slowest "
           "of N steps with k workers per host over one alone:", src);
    for (int i = 0; i < nn; i++) {
        int k = ns[i] < gpus ? ns[i] : gpus;
        double f = plan_colocation_factor(c, k, ns[i]);
        if (!(f > 0)) {
            printf("\n");
            dt_error("plan: --colocation %s has no step times for %d "
                     "co-located copies (k %d): measure it with the same "
                     "--gpus-per-host", src, k, k);
            return -1;
        }
        printf(" N=%d x%.3f (k %d)", ns[i], f, k);
        fprintf(spec, "compute_factor = %d %.6f\n", ns[i], f);
    }
    printf("\n");
    return 0;
}
