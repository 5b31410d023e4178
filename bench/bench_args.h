/* bench_args.h — the options the allreduce benchmarks share (dt's worker,
 * the Open MPI one, the TCP floor) and dtctl bench, which checks them with
 * this same parser before it starts any worker: one parser, so dtctl and
 * the workers cannot disagree on what a value means. Header-only (static
 * inline: a program may use a part of it): each benchmark is one program. */
#ifndef DT_BENCH_ARGS_H
#define DT_BENCH_ARGS_H

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sizes: one float32 at least; at most 1024T, far past any machine, so
 * size * factor never wraps a size_t. */
#define BENCH_SIZE_MIN 4
#define BENCH_SIZE_MAX ((size_t)1 << 50)
#define BENCH_COUNT_MAX 10000000 /* --iters, --warmup */
#define BENCH_FACTOR_MAX 1024

#define BENCH_SIZES_ALLOWED                                                  \
    "want MIN:MAX, bytes from 4 (one float32) to 1024T with an optional "    \
    "K/M/G/T, MIN <= MAX (e.g. 4K:256M; 4K:4K for one size)"

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

static inline bench_args_t bench_defaults(void)
{
    return (bench_args_t){4096, 256u << 20, 2, 20, 3, 0, 0};
}

/* "4K", "256M", "1G" -> bytes in *out. -1 unless digits (no sign: strtoull
 * takes "-1" as 2^64 - 1), one optional K/M/G/T[B], within
 * BENCH_SIZE_MIN..BENCH_SIZE_MAX. */
static inline int bench_parse_size(const char *s, size_t *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || errno || v > BENCH_SIZE_MAX >> shift ||
        v << shift < BENCH_SIZE_MIN)
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

/* A whole number in lo..hi (strtol alone takes "2x" as 2, and atoi wraps
 * 99999999999); -1 otherwise. */
static inline int bench_parse_int(const char *s, long lo, long hi, int *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* --sizes MIN:MAX into a; -1 with why in err. */
static inline int bench_parse_sizes(const char *v, bench_args_t *a, char *err,
                                    size_t errlen)
{
    const char *colon = strchr(v, ':');
    char lo[32], why[80] = "";
    if (!colon || (size_t)(colon - v) >= sizeof lo) {
        snprintf(why, sizeof why, "not MIN:MAX");
    } else {
        memcpy(lo, v, (size_t)(colon - v));
        lo[colon - v] = '\0';
        if (bench_parse_size(lo, &a->min_bytes) != 0)
            snprintf(why, sizeof why, "MIN '%s' is not such a size", lo);
        else if (bench_parse_size(colon + 1, &a->max_bytes) != 0)
            snprintf(why, sizeof why, "MAX '%.40s' is not such a size",
                     colon + 1);
        else if (a->max_bytes < a->min_bytes)
            snprintf(why, sizeof why, "MIN is above MAX");
    }
    if (*why)
        snprintf(err, errlen, "--sizes '%s': %s; " BENCH_SIZES_ALLOWED, v,
                 why);
    return *why ? -1 : 0;
}

/* A value and the words naming what it may be; -1 (err said) unless one. */
static inline int bench_pick(const char *name, const char *v,
                             const char *one, const char *two, int *is_two,
                             char *err, size_t errlen)
{
    if (strcmp(v, one) && strcmp(v, two)) {
        snprintf(err, errlen, "--%s '%s': want %s or %s", name, v, one, two);
        return -1;
    }
    *is_two = !strcmp(v, two);
    return 0;
}

/* Option `name` (without "--") = v into a. 0; -1 for a bad value (err
 * names it and what is allowed); -2 for an option the benchmarks lack. */
static inline int bench_set_opt(bench_args_t *a, const char *name,
                                const char *v, char *err, size_t errlen)
{
    int *num = !strcmp(name, "iters")    ? &a->iters
               : !strcmp(name, "warmup") ? &a->warmup
               : !strcmp(name, "factor") ? &a->factor
                                         : NULL;
    if (!strcmp(name, "sizes"))
        return bench_parse_sizes(v, a, err, errlen);
    if (!strcmp(name, "op"))
        return bench_pick(name, v, "allreduce", "allgather", &a->allgather,
                          err, errlen);
    if (!strcmp(name, "stat"))
        return bench_pick(name, v, "median", "mean", &a->mean, err, errlen);
    if (!num)
        return -2;
    long lo = num == &a->iters ? 1 : num == &a->factor ? 2 : 0;
    long hi = num == &a->factor ? BENCH_FACTOR_MAX : BENCH_COUNT_MAX;
    if (bench_parse_int(v, lo, hi, num) == 0)
        return 0;
    snprintf(err, errlen, "--%s '%s': want a whole number from %ld to %ld",
             name, v, lo, hi);
    return -1;
}

/* The bytes a size moves: whole floats (a size not a multiple of 4
 * overstated algbw); allgather: every rank's equal part. 0: under one
 * float per rank. Every benchmark prints this, so tables join on it. */
static inline size_t bench_shown_bytes(size_t bytes, int ranks, int allgather)
{
    size_t per = allgather ? (size_t)ranks : 1;
    return bytes / sizeof(float) / per * per * sizeof(float);
}

/* Whether any size of a moves a float per rank at n ranks; -1 (err says
 * what MAX needs) if none does. */
static inline int bench_check_ranks(const bench_args_t *a, int n, char *err,
                                    size_t errlen)
{
    if (bench_shown_bytes(a->max_bytes, n, a->allgather) > 0)
        return 0;
    snprintf(err, errlen, "--sizes %zu:%zu: allgather at %d ranks needs MAX "
             "of at least %zu bytes (one float32 per rank)", a->min_bytes,
             a->max_bytes, n, (size_t)n * sizeof(float));
    return -1;
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

/* The program's name without libtool's path and "lt-" prefix. */
static inline const char *bench_prog(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    const char *p = slash ? slash + 1 : argv0;
    return strncmp(p, "lt-", 3) == 0 ? p + 3 : p;
}

static inline void bench_usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--sizes MIN:MAX] [--factor F] [--iters K] "
            "[--warmup W] [--op allreduce|allgather] [--stat median|mean]"
            "\n  sizes in bytes "
            "with K/M/G/T (default 4K:256M), next size = size * F (default "
            "2); allgather: the size is every rank's gathered total\n",
            prog);
}

/* --sizes MIN:MAX  --factor F  --iters K  --warmup W  --op allreduce|
 * allgather  --stat median|mean. 0 on success; 2 after saying why. */
static inline int bench_parse_args(int argc, char **argv, bench_args_t *a)
{
    static const char *const names[] = {"sizes", "iters", "factor",
                                        "warmup", "op", "stat"};
    const char *prog = bench_prog(argv[0]);
    *a = bench_defaults();
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        size_t k = 0;
        char opt[16], err[256];
        for (; k < sizeof names / sizeof *names && !v; k++) {
            snprintf(opt, sizeof opt, "--%s", names[k]);
            v = bench_opt(argc, argv, &i, opt);
        }
        if (!v) {
            fprintf(stderr, "%s: unknown option or missing value '%s'\n",
                    prog, argv[i]);
            bench_usage(prog);
            return 2;
        }
        if (bench_set_opt(a, names[k - 1], v, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", prog, err);
            return 2;
        }
    }
    return 0;
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
