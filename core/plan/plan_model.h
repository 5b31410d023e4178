/* plan_model.h — dtctl plan's cost model (docs/PLAN.md): the allreduce
 * algorithm dt picks for a size and rank count (mirrors coll_allreduce.c
 * and dt_coll_ring_bytes), its alpha-beta-gamma cost, and the least-squares
 * fit of alpha (s per message round), beta (s per byte on the wire) and
 * gamma (s per byte reduced) from `dtctl bench allreduce` tables. Plain C,
 * no SimGrid: dtctl and the tests use it; dt-plan-sim mirrors the choice. */
#ifndef DT_PLAN_MODEL_H
#define DT_PLAN_MODEL_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    DT_PLAN_RD = 0,      /* recursive doubling (below allreduce_small)   */
    DT_PLAN_HALVING = 1, /* recursive halving/doubling (Rabenseifner)    */
    DT_PLAN_RING = 2,    /* pipelined ring                               */
    DT_PLAN_ALLGATHER = 3 /* a measured allgather (the ring's second half:
                             no reduction), for the fit only          */
} dt_plan_alg_t;

typedef struct {
    size_t small_bytes; /* [collectives] allreduce_small (256K)           */
    size_t ring_bytes;  /* [collectives] allreduce_ring (0: by N)         */
    size_t hier_bytes;  /* [collectives] hier_min (512K)                  */
} dt_plan_thresholds_t;

void dt_plan_thresholds_default(dt_plan_thresholds_t *t);
dt_plan_alg_t dt_plan_choose(const dt_plan_thresholds_t *t, int n,
                             size_t bytes);
const char *dt_plan_alg_name(dt_plan_alg_t a);

/* Coefficients of alpha, beta, gamma in the cost of algorithm a on n
 * ranks and `bytes` bytes: t = c[0] alpha + c[1] beta + c[2] gamma. */
void dt_plan_coeffs(dt_plan_alg_t a, int n, double bytes, double c[3]);
double dt_plan_cost(dt_plan_alg_t a, int n, double bytes, double alpha,
                    double beta, double gamma);

typedef struct {
    int n;
    double bytes, seconds;
    dt_plan_alg_t alg;
} dt_plan_sample_t;

/* Least squares of the samples' times (weighted by 1/t: relative error)
 * on the three coefficients; gamma is dropped (0) and alpha, beta refitted
 * when it comes out negative or the samples cannot separate it.
 * Returns 0, or -1 when fewer than 2 samples or a singular system. */
int dt_plan_fit(const dt_plan_sample_t *s, size_t m, double *alpha,
                double *beta, double *gamma);

/* Rows of a `dtctl bench allreduce` table ("  bytes count time(us) ...")
 * into samples for n ranks, each with the algorithm t picks (t NULL: the
 * ring); a `dtctl bench allgather` table (its header says "allgather:")
 * gives DT_PLAN_ALLGATHER samples, which pin alpha and beta apart from
 * gamma. Whole lines in bounded memory (base/line_read.h): a file named
 * by mistake (/dev/zero) ends the reading instead of looping for ever.
 * Returns how many were added (at most cap - *m), or -1 with *stop set. */
typedef struct {
    int line;        /* the line that stopped it; 0: out of memory */
    const char *why; /* "a NUL byte (binary data)", "out of memory", ... */
} dt_plan_bench_stop_t;
long dt_plan_parse_bench(FILE *f, int n, const dt_plan_thresholds_t *t,
                         dt_plan_sample_t *s, size_t *m, size_t cap,
                         dt_plan_bench_stop_t *stop);

/* Samples of the same rank count, size and algorithm (repeated sweeps)
 * merged into the fastest of them, in place: a sweep that another
 * process slowed for a moment does not become the link's cost. */
void dt_plan_keep_fastest(dt_plan_sample_t *s, size_t *m);

/* What a plan takes, checked by dtctl (naming the option or file:line)
 * and again by dt-plan-sim: beyond these SimGrid's clock stalls or runs
 * to infinity (a deadlock it reports by killing the step). */
#define DT_PLAN_RATE_MIN (1.0 / 8)  /* bytes/s: 1 bit/s                  */
#define DT_PLAN_RATE_MAX (1e16 / 8) /* bytes/s: 1e16 bit/s               */
#define DT_PLAN_RATE_RANGE "1bit/s to 1e16bit/s"
#define DT_PLAN_LATENCY_MAX 1.0     /* s: a link's latency, an alpha     */
#define DT_PLAN_SECONDS_MAX 1e9     /* s: one worker's step, a data wait */
#define DT_PLAN_PARAMS_MAX 1e13     /* --model-params                    */
#define DT_PLAN_BYTES_MAX 1e15      /* one gradient event's bytes        */
/* Workers a plan simulates (hosts x GPUs a host): every worker's flows
 * are, and SimGrid 3.32 scans its list of detached comms as each ends,
 * so the time grows as N^2 (docs/PLAN.md; 65536 took half an hour). */
#define DT_PLAN_WORKERS_MAX 8192
#define DT_PLAN_WORKERS_TIME "8192 take 30 to 80 s here"

/* "25Gbit", "100Gbit/s", "800Mbit", "12GB/s" -> bytes per second.
 * Returns 0, or -1 (not a rate with a unit in DT_PLAN_RATE_RANGE). */
int dt_plan_parse_rate(const char *s, double *out);

/* A parameter count: 138357544, 138.4M, 25.6e6 (decimal k/M/G), at most
 * DT_PLAN_PARAMS_MAX. 0 or -1. */
int dt_plan_parse_count(const char *s, double *out);

#endif
