/* dt_allreduce_bench.c — one worker of `dtctl bench allreduce`: times
 * dt_allreduce over a range of sizes and prints (rank 0) an nccl-tests
 * style table. Each sample is the slowest rank's time for one call, all
 * ranks released together by a barrier; the table shows the median. The
 * check column verifies every element of the last result on every rank.
 *
 * With [collectives] compression = bf16 | fp16 (e.g. --set
 * collectives.compression=bf16; workers see DT_COLLECTIVES_COMPRESSION)
 * the sizes, algbw and busbw stay those of the float32 vector the caller
 * reduces: the effective bandwidth, the wire carrying half of it. The
 * check then allows the 16-bit rounding (relative 2^-7 for bf16, 2^-10
 * for fp16, per rounding step: 1% and 0.2% of the value).
 *
 * --op allgather (`dtctl bench allgather`) times dt_allgather instead:
 * the size is the gathered total, each rank sending size / N; no
 * reduction, so its rounds cost the transport alone (what `dtctl plan
 * --measure` fits alpha and beta from, apart from the reduction).
 *
 * The header's "# data path:" line (dt_collectives_path) says whether the
 * transport carried the data at all: on one host the ranks meet in shared
 * memory unless [collectives] shm = off. */
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/dt.h>
#include "bench_args.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Relative error the check allows: 0 without compression. */
static double tolerance(void)
{
    const char *z = getenv("DT_COLLECTIVES_COMPRESSION");
    if (!z || !*z || !strcmp(z, "none") || !strcmp(z, "off") ||
        !strcmp(z, "no"))
        return 0;
    return strstr(z, "bf") ? 1e-2 : 2e-3;
}

static int run_size(size_t bytes, const bench_args_t *a, float *send,
                    float *recv, int *wrong_out, double *median)
{
    size_t count = bytes / sizeof(float);
    int n = bench_iters_for(a, bytes), rank = dt_rank(), size = dt_size();
    double *samples = malloc((size_t)n * sizeof *samples);
    if (!samples) {
        fprintf(stderr, "dt_allreduce_bench: cannot allocate %d samples\n",
                n);
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        send[i] = bench_input(rank, i);
    size_t per = count / (size_t)size; /* allgather: each rank's part */
    for (int it = -a->warmup; it < n; it++) {
        if (dt_barrier() != DT_OK)
            return 1;
        double t0 = now();
        dt_status_t st = a->allgather
                             ? dt_allgather(send, recv, per, DT_FLOAT32)
                             : dt_allreduce(send, recv, count, DT_FLOAT32,
                                            DT_SUM);
        if (st != DT_OK)
            return 1;
        double t = now() - t0;
        if (it < 0)
            continue;
        if (dt_allreduce(&t, &samples[it], 1, DT_FLOAT64, DT_MAX) != DT_OK)
            return 1;
    }
    int32_t wrong = 0;
    double tol = tolerance();
    if (a->allgather) /* rank r's part holds its inputs */
        for (size_t i = 0; i < per * (size_t)size; i++)
            wrong += recv[i] != bench_input((int)(i / per), i % per);
    else
        for (size_t i = 0; i < count; i++) {
            float e = bench_expect(size, i);
            wrong += tol ? fabs(recv[i] - e) > tol * fabs(e) : recv[i] != e;
        }
    if (dt_allreduce(&wrong, wrong_out, 1, DT_INT32, DT_SUM) != DT_OK)
        return 1;
    *median = bench_stat(a, samples, n);
    free(samples);
    return 0;
}

/* Two buffers of max bytes; on failure every rank says how many bytes it
 * wanted (a MAX past the memory here otherwise ended in a bare exit 1). */
static int alloc_buffers(const bench_args_t *a, float **send, float **recv)
{
    size_t bytes = a->max_bytes / sizeof(float) * sizeof(float);
    *send = malloc(bytes);
    *recv = malloc(bytes);
    if (*send && *recv)
        return 0;
    fprintf(stderr, "dt_allreduce_bench: rank %d: cannot allocate 2 buffers "
            "of %zu bytes (--sizes MAX): give a smaller MAX\n", dt_rank(),
            bytes);
    return 1;
}

static void print_header(const bench_args_t *a)
{
    bench_header("dt", dt_size(), a);
    /* On one host the ranks meet in shared memory by default: say so,
     * or a transport's author reads these rows as its own. */
    printf("# data path: %s\n", dt_collectives_path());
    if (tolerance() > 0 && !a->allgather) /* allgather: never 16-bit */
        printf("# compression = %s: bytes, algbw and busbw count the "
               "float32 vector (the wire carries half)\n",
               getenv("DT_COLLECTIVES_COMPRESSION"));
}

int main(int argc, char **argv)
{
    bench_args_t a;
    char err[256];
    if (bench_parse_args(argc, argv, &a) != 0)
        return 2;
    if (dt_init() != DT_OK)
        return 1;
    int n = dt_size();
    if (bench_check_ranks(&a, n, err, sizeof err) != 0) {
        if (dt_rank() == 0)
            fprintf(stderr, "dt_allreduce_bench: %s\n", err);
        dt_finalize();
        return 2;
    }
    float *send = NULL, *recv = NULL;
    int rc = alloc_buffers(&a, &send, &recv), bad = 0;
    if (dt_rank() == 0 && rc == 0)
        print_header(&a);
    for (size_t b = a.min_bytes; rc == 0 && b <= a.max_bytes;
         b *= (size_t)a.factor) {
        size_t shown = bench_shown_bytes(b, n, a.allgather);
        if (!shown) { /* allgather: each rank's part would be empty */
            if (dt_rank() == 0)
                printf("# %zu bytes: under one float32 per rank at %d "
                       "ranks, skipped\n", b, n);
            continue;
        }
        int wrong = 0;
        double med = 0;
        rc = run_size(b, &a, send, recv, &wrong, &med);
        if (rc == 0 && dt_rank() == 0)
            bench_row_bus(shown, med, (a.allgather ? 1.0 : 2.0) *
                                          (double)(n - 1) / (double)n,
                          wrong);
        bad |= wrong != 0;
    }
    free(send);
    free(recv);
    dt_status_t st = dt_finalize();
    return rc ? rc : bad ? 3 : st == DT_OK ? 0 : 1;
}
