/* bench_args.h — the options the allreduce benchmarks share (dt's worker
 * and the Open MPI one), so both measure exactly the same sizes the same
 * way. Header-only (static inline: a program may use a part of it): each
 * benchmark is one program. */
#ifndef DT_BENCH_ARGS_H
#define DT_BENCH_ARGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_args {
    size_t min_bytes, max_bytes;
    int factor;    /* next size = size * factor                      */
    int iters;     /* timed iterations per size (fewer for big ones) */
    int warmup;
    int allgather; /* --op allgather: dt_allreduce_bench only      */
    int mean;      /* --stat mean: the mean of the samples, not the
                      median (what a training loop's throughput sees,
                      slow outliers included)                       */
} bench_args_t;

/* "4K", "256M", "1G" -> bytes; 0 on error. */
static inline size_t bench_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    return *end || end == s ? 0 : (size_t)v;
}

/* Value of option `name` at argv[*i] ("--name V" or "--name=V"), or NULL. */
static inline const char *bench_opt(int argc, char **argv, int *i,
                                    const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* --sizes MIN:MAX  --factor F  --iters K  --warmup W  --op allreduce|
 * allgather  --stat median|mean. 0 on success. */
static inline int bench_parse_args(int argc, char **argv, bench_args_t *a)
{
    *a = (bench_args_t){4096, 256u << 20, 2, 20, 3, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_opt(argc, argv, &i, "--sizes"))) {
            const char *colon = strchr(v, ':');
            char lo[32];
            if (!colon || (size_t)(colon - v) >= sizeof lo)
                goto usage;
            memcpy(lo, v, (size_t)(colon - v));
            lo[colon - v] = '\0';
            a->min_bytes = bench_parse_size(lo);
            a->max_bytes = bench_parse_size(colon + 1);
            if (!a->min_bytes || a->max_bytes < a->min_bytes)
                goto usage;
        } else if ((v = bench_opt(argc, argv, &i, "--iters"))) {
            a->iters = atoi(v);
        } else if ((v = bench_opt(argc, argv, &i, "--factor"))) {
            a->factor = atoi(v);
        } else if ((v = bench_opt(argc, argv, &i, "--warmup"))) {
            a->warmup = atoi(v);
        } else if ((v = bench_opt(argc, argv, &i, "--op"))) {
            if (strcmp(v, "allreduce") && strcmp(v, "allgather"))
                goto usage;
            a->allgather = !strcmp(v, "allgather");
        } else if ((v = bench_opt(argc, argv, &i, "--stat"))) {
            if (strcmp(v, "median") && strcmp(v, "mean"))
                goto usage;
            a->mean = !strcmp(v, "mean");
        } else {
            goto usage;
        }
    }
    if (a->iters < 1 || a->factor < 2 || a->warmup < 0)
        goto usage;
    return 0;
usage:
    fprintf(stderr,
            "usage: %s [--sizes MIN:MAX] [--factor F] [--iters K] "
            "[--warmup W] [--op allreduce|allgather] [--stat median|mean]"
            "\n  sizes in bytes "
            "with K/M/G (default 4K:256M), next size = size * F (default "
            "2); allgather: the size is every rank's gathered total\n",
            argv[0]);
    return 2;
}

/* Iterations for one size: at most K, and about 1 GiB moved in all. */
static inline int bench_iters_for(const bench_args_t *a, size_t bytes)
{
    size_t cap = ((size_t)1 << 30) / bytes;
    int n = a->iters;
    if ((size_t)n > cap)
        n = (int)cap;
    return n < 5 ? 5 : n;
}

static inline int bench_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The statistic --stat asks for: the median (default) or the mean. */
static inline double bench_stat(const bench_args_t *a, double *v, int n)
{
    if (!a->mean)
        return bench_median(v, n);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

static inline const char *bench_stat_name(const bench_args_t *a)
{
    return a->mean ? "mean" : "median";
}

/* Rank r's input element i: small integers, so sums are exact. */
static inline float bench_input(int r, size_t i)
{
    return (float)((r + 1) * (int)(i % 7 + 1));
}

static inline float bench_expect(int n, size_t i)
{
    return (float)(n * (n + 1) / 2 * (int)(i % 7 + 1));
}

static inline void bench_header(const char *who, int n, const bench_args_t *a)
{
    /* as bench_iters_for runs them: at least 5, fewer for large sizes */
    int iters = a->iters < 5 ? 5 : a->iters;
    if (a->allgather)
        printf("# %s allgather: %d ranks, float32, bytes = the gathered "
               "total (each rank sends bytes / %d), %s of up to %d "
               "iterations (%d warm-up)\n", who, n, n, bench_stat_name(a),
               iters, a->warmup);
    else
        printf("# %s allreduce: %d ranks, float32 sum, out of place, %s "
               "of up to %d iterations (%d warm-up)\n",
               who, n, bench_stat_name(a), iters, a->warmup);
    printf("# %12s %12s %11s %11s %11s %6s\n", "bytes", "count",
           "time(us)", "algbw(GB/s)", "busbw(GB/s)", "check");
}

/* busbw = algbw x bus: 2(n-1)/n for allreduce, (n-1)/n for allgather
 * (nccl-tests' factors: what each rank's link carries). */
static inline void bench_row_bus(size_t bytes, double secs, double bus,
                                 long wrong)
{
    double algbw = (double)bytes / secs / 1e9;
    double busbw = algbw * bus;
    char check[32];
    if (wrong)
        snprintf(check, sizeof check, "%ld bad", wrong);
    else
        snprintf(check, sizeof check, "ok");
    printf("  %12zu %12zu %11.2f %11.3f %11.3f %6s\n", bytes, bytes / 4,
           secs * 1e6, algbw, busbw, check);
    fflush(stdout);
}

static inline void bench_row(size_t bytes, double secs, int n, long wrong)
{
    bench_row_bus(bytes, secs, 2.0 * (n - 1) / n, wrong);
}

#endif /* DT_BENCH_ARGS_H */
