/* plan_model.c — see plan_model.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/line_read.h"
#include "plan_model.h"

/* The library's defaults (core/coll/coll_internal.h), restated: dtctl
 * plan must not link the collectives' internals. */
#define SMALL (256u << 10)
#define RING_POW2 (32u << 20)
#define RING_3 (128u << 20)
#define RING_ODD (1u << 20)
#define HIER (512u << 10)

void dt_plan_thresholds_default(dt_plan_thresholds_t *t)
{
    t->small_bytes = SMALL;
    t->ring_bytes = 0;
    t->hier_bytes = HIER;
}

static size_t ring_from(const dt_plan_thresholds_t *t, int n)
{
    if (t->ring_bytes)
        return t->ring_bytes;
    if (n <= 2)
        return 0;
    if (n == 3)
        return RING_3;
    if ((n & (n - 1)) == 0)
        return RING_POW2;
    return RING_ODD;
}

dt_plan_alg_t dt_plan_choose(const dt_plan_thresholds_t *t, int n,
                             size_t bytes)
{
    if (n <= 1 || bytes < t->small_bytes)
        return DT_PLAN_RD;
    if (bytes < ring_from(t, n))
        return DT_PLAN_HALVING;
    return DT_PLAN_RING;
}

const char *dt_plan_alg_name(dt_plan_alg_t a)
{
    return a == DT_PLAN_RD          ? "doubling"
           : a == DT_PLAN_HALVING   ? "halving"
           : a == DT_PLAN_ALLGATHER ? "allgather"
                                    : "ring";
}

void dt_plan_coeffs(dt_plan_alg_t a, int n, double bytes, double c[3])
{
    c[0] = c[1] = c[2] = 0;
    if (n <= 1)
        return;
    int p2 = 1, lg = 0;
    while (p2 * 2 <= n) {
        p2 *= 2;
        lg++;
    }
    int fold = n > p2;
    if (a == DT_PLAN_ALLGATHER) { /* n - 1 steps of bytes / n, no sums */
        c[0] = n - 1.0;
        c[1] = (double)(n - 1) / n * bytes;
        return;
    }
    if (a == DT_PLAN_RING) {
        c[0] = 2.0 * (n - 1);
        c[1] = 2.0 * (n - 1) / n * bytes;
        c[2] = (double)(n - 1) / n * bytes;
        return;
    }
    if (a == DT_PLAN_RD) {
        c[0] = lg;
        c[1] = lg * bytes;
        c[2] = lg * bytes;
    } else {
        c[0] = 2.0 * lg;
        c[1] = 2.0 * (p2 - 1) / p2 * bytes;
        c[2] = (double)(p2 - 1) / p2 * bytes;
    }
    if (fold) { /* the extra ranks hand their vector in and get it back */
        c[0] += 2;
        c[1] += 2 * bytes;
        c[2] += bytes;
    }
}

double dt_plan_cost(dt_plan_alg_t a, int n, double bytes, double alpha,
                    double beta, double gamma)
{
    double c[3];
    dt_plan_coeffs(a, n, bytes, c);
    return c[0] * alpha + c[1] * beta + c[2] * gamma;
}

/* Solve the k x k normal equations (k <= 3) by Gaussian elimination. */
static int solve(int k, double A[3][3], double b[3], double x[3])
{
    for (int i = 0; i < k; i++) {
        int p = i;
        for (int r = i + 1; r < k; r++)
            if (fabs(A[r][i]) > fabs(A[p][i]))
                p = r;
        if (fabs(A[p][i]) < 1e-300)
            return -1;
        for (int j = 0; j < k; j++) {
            double t = A[i][j];
            A[i][j] = A[p][j];
            A[p][j] = t;
        }
        double t = b[i];
        b[i] = b[p];
        b[p] = t;
        for (int r = i + 1; r < k; r++) {
            double f = A[r][i] / A[i][i];
            for (int j = i; j < k; j++)
                A[r][j] -= f * A[i][j];
            b[r] -= f * b[i];
        }
    }
    for (int i = k - 1; i >= 0; i--) {
        double s = b[i];
        for (int j = i + 1; j < k; j++)
            s -= A[i][j] * x[j];
        x[i] = s / A[i][i];
    }
    return 0;
}

static int fit_k(const dt_plan_sample_t *s, size_t m, int k, double x[3])
{
    /* Columns scaled to unit size so that seconds-per-byte terms (1e-10)
     * and per-round terms (1e-5) condition alike. */
    double scale[3] = {0, 0, 0};
    for (size_t i = 0; i < m; i++) {
        double c[3];
        dt_plan_coeffs(s[i].alg, s[i].n, s[i].bytes, c);
        for (int j = 0; j < k; j++)
            if (fabs(c[j]) / s[i].seconds > scale[j])
                scale[j] = fabs(c[j]) / s[i].seconds;
    }
    for (int j = 0; j < k; j++)
        if (scale[j] == 0)
            return -1;
    double A[3][3] = {{0}}, b[3] = {0};
    for (size_t i = 0; i < m; i++) {
        double c[3], w = 1.0 / s[i].seconds; /* relative residuals */
        dt_plan_coeffs(s[i].alg, s[i].n, s[i].bytes, c);
        for (int j = 0; j < k; j++)
            c[j] = c[j] * w / scale[j];
        for (int r = 0; r < k; r++) {
            for (int j = 0; j < k; j++)
                A[r][j] += c[r] * c[j];
            b[r] += c[r] * s[i].seconds * w;
        }
    }
    /* Collinear columns (ring-only samples: beta and gamma in a fixed
     * ratio) give a singular system or a negative coefficient: the caller
     * then fits alpha and one per-byte cost. */
    if (solve(k, A, b, x) != 0)
        return -1;
    for (int j = 0; j < k; j++)
        x[j] /= scale[j];
    return 0;
}

int dt_plan_fit(const dt_plan_sample_t *s, size_t m, double *alpha,
                double *beta, double *gamma)
{
    double x[3] = {0, 0, 0};
    if (m >= 3 && fit_k(s, m, 3, x) == 0 && x[0] >= 0 && x[1] >= 0 &&
        x[2] >= 0) {
        *alpha = x[0];
        *beta = x[1];
        *gamma = x[2];
        return 0;
    }
    if (m < 2 || fit_k(s, m, 2, x) != 0)
        return -1;
    if (x[0] < 0)
        x[0] = 0;
    if (x[1] < 0)
        x[1] = 0;
    *alpha = x[0];
    *beta = x[1]; /* the reduction is folded into the per-byte cost */
    *gamma = 0;
    return 0;
}

long dt_plan_parse_bench(FILE *f, int n, const dt_plan_thresholds_t *t,
                         dt_plan_sample_t *s, size_t *m, size_t cap,
                         dt_plan_bench_stop_t *stop)
{
    char *line = NULL;
    size_t line_cap = 0;
    long added = 0;
    int gather = 0; /* the table's header names its collective */
    int ln = 0, nul;
    ssize_t got = DT_LINE_END;
    *stop = (dt_plan_bench_stop_t){0, NULL};
    while (*m < cap &&
           ((got = dt_line_read(f, &line, &line_cap, &nul)) >= 0 ||
            got == DT_LINE_TOO_LONG)) {
        ln++;
        if (got == DT_LINE_TOO_LONG || nul) { /* a device, a data file */
            *stop = (dt_plan_bench_stop_t){
                ln, nul ? "a NUL byte (binary data)"
                        : "a line longer than " DT_LINE_MAX_TEXT};
            break;
        }
        unsigned long long bytes, count;
        double us;
        char check[16], *p = line;
        if (*p == '[' && strchr(p, ']')) /* dtctl run's "[rank] " prefix */
            p = strchr(p, ']') + 1;
        p += strspn(p, " ");
        if (*p == '#' && strstr(p, " allgather: "))
            gather = 1;
        else if (*p == '#' && strstr(p, " allreduce: "))
            gather = 0;
        if (*p == '#' ||
            sscanf(p, "%llu %llu %lf %*f %*f %15s", &bytes, &count, &us,
                   check) != 4 ||
            strcmp(check, "ok") != 0 || us <= 0)
            continue;
        s[*m] = (dt_plan_sample_t){n, (double)bytes, us * 1e-6,
                                   gather ? DT_PLAN_ALLGATHER
                                   : t    ? dt_plan_choose(t, n, bytes)
                                          : DT_PLAN_RING};
        (*m)++;
        added++;
    }
    free(line);
    if (got == DT_LINE_NOMEM)
        *stop = (dt_plan_bench_stop_t){0, "out of memory"};
    return stop->why ? -1 : added;
}

void dt_plan_keep_fastest(dt_plan_sample_t *s, size_t *m)
{
    size_t out = 0;
    for (size_t i = 0; i < *m; i++) {
        size_t j = 0;
        while (j < out && !(s[j].n == s[i].n && s[j].bytes == s[i].bytes &&
                            s[j].alg == s[i].alg))
            j++;
        if (j == out)
            s[out++] = s[i];
        else if (s[i].seconds < s[j].seconds)
            s[j].seconds = s[i].seconds;
    }
    *m = out;
}

/* "25Gbit", "100Gbit/s", "800Mbit", "12GB/s", "3e9B/s" -> bytes/s. */
int dt_plan_parse_rate(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v > 0) || !isfinite(v))
        return -1;
    double mult = 1;
    const char *u = end;
    /* tc's spelling, 25gbit or 100mbit, in lower case: bits only (tc's
     * own "mbps" is bytes, so no lower-case prefix before bps or B) */
    int lower = *u == 'm' || *u == 'g' || *u == 't';
    if (*u == 'K' || *u == 'k')
        mult = 1e3, u++;
    else if (*u == 'M' || *u == 'm')
        mult = 1e6, u++;
    else if (*u == 'G' || *u == 'g')
        mult = 1e9, u++;
    else if (*u == 'T' || *u == 't')
        mult = 1e12, u++;
    double r;
    if (lower && strcmp(u, "bit") && strcmp(u, "bit/s"))
        return -1;
    if (!strcmp(u, "bit") || !strcmp(u, "bit/s") || !strcmp(u, "bps") ||
        !strcmp(u, "b") || !strcmp(u, "b/s"))
        r = v * mult / 8;
    else if (!strcmp(u, "B/s") || !strcmp(u, "Bps") || !strcmp(u, "B"))
        r = v * mult;
    else
        return -1;
    /* 1e300T overflows to inf; 1e-300 would never deliver a byte */
    if (!isfinite(r) || r < DT_PLAN_RATE_MIN || r > DT_PLAN_RATE_MAX)
        return -1;
    *out = r;
    return 0;
}

/* "138357544", "138.4M", "44.7M", "25.6e6", "1.5G": a positive count
 * (decimal k, M, G suffixes: parameters, not bytes). */
int dt_plan_parse_count(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v > 0) || !isfinite(v))
        return -1;
    if (*end == 'k' || *end == 'K')
        v *= 1e3, end++;
    else if (*end == 'M')
        v *= 1e6, end++;
    else if (*end == 'G')
        v *= 1e9, end++;
    if (*end || v < 1 || v > DT_PLAN_PARAMS_MAX)
        return -1;
    *out = v;
    return 0;
}
