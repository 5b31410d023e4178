/* allreduce.c — the worker C API end to end: every collective on
 * rank-dependent data, checked exactly on every rank.
 *
 *   dtctl run -n 4 -- ./allreduce        (or ./allreduce alone: one rank)
 *
 * Exits 0 when every check passed on this rank; otherwise prints the first
 * mismatch (rank, test, index, value, expected) and exits 1. Uses only
 * <dt/dt.h>. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/dt.h>

/* Odd counts on purpose: not divisible by the number of ranks, smaller than
 * it, and large enough to take the pipelined ring. */
static const size_t counts[] = {0, 1, 3, 7, 1023, 4099, 65537, 1048579};

static int rank, size;

static int fail(const char *test, size_t count, size_t i, double got,
                double want)
{
    fprintf(stderr,
            "allreduce example: rank %d of %d: %s (count %zu) wrong at "
            "index %zu: got %.17g, want %.17g\n",
            rank, size, test, count, i, got, want);
    return 1;
}

static int check_status(const char *what, dt_status_t st)
{
    if (st == DT_OK)
        return 0;
    fprintf(stderr, "allreduce example: rank %d: %s failed: %s\n", rank, what,
            dt_status_str(st));
    return 1;
}

/* Sum over ranks r of (r + 1) * k. */
static double rank_sum(double k) { return k * size * (size + 1) / 2.0; }

static float input(size_t i) { return (float)((rank + 1) * (int)(i % 97 + 1)); }

static int test_float32_sum(size_t n, int in_place)
{
    size_t bytes = (n ? n : 1) * sizeof(float);
    float *send = calloc(1, bytes), *out = calloc(1, bytes);
    if (!send || !out) {
        free(send);
        free(out);
        return fail("float32 sum: out of memory", n, 0, 0, 0);
    }
    float *recv = in_place ? send : out;
    for (size_t i = 0; i < n; i++)
        send[i] = input(i);
    int bad = check_status("dt_allreduce float32",
                           dt_allreduce(send, recv, n, DT_FLOAT32, DT_SUM));
    for (size_t i = 0; !bad && i < n; i++)
        if (recv[i] != (float)rank_sum((double)(i % 97 + 1)))
            bad = fail(in_place ? "float32 sum in place" : "float32 sum", n, i,
                       recv[i], rank_sum((double)(i % 97 + 1)));
    /* Out of place must leave the input alone. */
    for (size_t i = 0; !bad && !in_place && i < n; i++)
        if (send[i] != input(i))
            bad = fail("float32 sum: input changed", n, i, send[i], input(i));
    free(send);
    free(out);
    return bad;
}

static int test_float64_avg(size_t n)
{
    double *buf = calloc(n ? n : 1, sizeof *buf);
    int bad = !buf;
    for (size_t i = 0; !bad && i < n; i++)
        buf[i] = (double)(rank + 1) * (double)(i + 1);
    bad = bad || check_status("dt_allreduce float64 avg",
                              dt_allreduce(buf, buf, n, DT_FLOAT64, DT_AVG));
    for (size_t i = 0; !bad && i < n; i++) {
        double want = rank_sum((double)(i + 1)) / size;
        if (fabs(buf[i] - want) > 1e-12 * fabs(want))
            bad = fail("float64 avg", n, i, buf[i], want);
    }
    free(buf);
    return bad;
}

static int test_int32_max_min(size_t n)
{
    int32_t *a = calloc(n ? n : 1, sizeof *a);
    int32_t *b = calloc(n ? n : 1, sizeof *b);
    int bad = !a || !b;
    /* The maximum moves between ranks with i; the minimum is negative. */
    for (size_t i = 0; !bad && i < n; i++) {
        a[i] = (int32_t)((rank + (int)i) % size) * 3 + (int32_t)i;
        b[i] = -(int32_t)rank * 5 - (int32_t)(i % 11);
    }
    bad = bad || check_status("dt_allreduce int32 max",
                              dt_allreduce(a, a, n, DT_INT32, DT_MAX)) ||
          check_status("dt_allreduce int32 min",
                       dt_allreduce(b, b, n, DT_INT32, DT_MIN));
    for (size_t i = 0; !bad && i < n; i++) {
        int32_t wmax = (int32_t)(size - 1) * 3 + (int32_t)i;
        int32_t wmin = -(int32_t)(size - 1) * 5 - (int32_t)(i % 11);
        if (a[i] != wmax)
            bad = fail("int32 max", n, i, a[i], wmax);
        else if (b[i] != wmin)
            bad = fail("int32 min", n, i, b[i], wmin);
    }
    free(a);
    free(b);
    return bad;
}

static int test_broadcast(size_t n, int root)
{
    int32_t *buf = calloc(n ? n : 1, sizeof *buf);
    int bad = !buf;
    for (size_t i = 0; !bad && i < n; i++)
        buf[i] = rank == root ? (int32_t)(root * 100003 + (int)i) : -1;
    bad = bad || check_status("dt_broadcast",
                              dt_broadcast(buf, n, DT_INT32, root));
    for (size_t i = 0; !bad && i < n; i++)
        if (buf[i] != (int32_t)(root * 100003 + (int)i))
            bad = fail("broadcast", n, i, buf[i], root * 100003.0 + (double)i);
    free(buf);
    return bad;
}

static int test_allgather(size_t n)
{
    int32_t *send = calloc(n ? n : 1, sizeof *send);
    int32_t *recv = calloc((n ? n : 1) * (size_t)size, sizeof *recv);
    int bad = !send || !recv;
    for (size_t i = 0; !bad && i < n; i++)
        send[i] = (int32_t)(rank * 1000003 + (int)i);
    bad = bad || check_status("dt_allgather",
                              dt_allgather(send, recv, n, DT_INT32));
    for (int r = 0; !bad && r < size; r++)
        for (size_t i = 0; !bad && i < n; i++)
            if (recv[(size_t)r * n + i] != (int32_t)(r * 1000003 + (int)i))
                bad = fail("allgather", n, (size_t)r * n + i,
                           recv[(size_t)r * n + i], r * 1000003.0 + (double)i);
    free(send);
    free(recv);
    return bad;
}

static int test_reduce_scatter(size_t n)
{
    size_t total = n * (size_t)size;
    float *send = calloc(total ? total : 1, sizeof *send);
    float *recv = calloc(n ? n : 1, sizeof *recv);
    int bad = !send || !recv;
    for (size_t j = 0; !bad && j < total; j++)
        send[j] = (float)((rank + 1) * (int)(j % 89 + 1));
    bad = bad || check_status("dt_reduce_scatter",
                              dt_reduce_scatter(send, recv, n, DT_FLOAT32,
                                                DT_SUM));
    for (size_t i = 0; !bad && i < n; i++) {
        size_t j = (size_t)rank * n + i;
        double want = rank_sum((double)(j % 89 + 1));
        if (recv[i] != (float)want)
            bad = fail("reduce_scatter", n, i, recv[i], want);
    }
    free(send);
    free(recv);
    return bad;
}

int main(void)
{
    dt_status_t st = dt_init();
    if (st != DT_OK) {
        fprintf(stderr, "allreduce example: dt_init failed: %s\n",
                dt_status_str(st));
        return 1;
    }
    rank = dt_rank();
    size = dt_size();
    int bad = rank < 0 || rank >= size || dt_local_rank() < 0 ||
              dt_local_rank() >= dt_local_size();
    if (bad)
        fprintf(stderr, "allreduce example: bad rank %d of %d (local %d of "
                        "%d)\n",
                rank, size, dt_local_rank(), dt_local_size());
    for (size_t k = 0; !bad && k < sizeof counts / sizeof *counts; k++) {
        size_t n = counts[k];
        bad = test_float32_sum(n, 0) || test_float32_sum(n, 1) ||
              test_float64_avg(n) || test_int32_max_min(n) ||
              test_broadcast(n, 0) || test_broadcast(n, size - 1) ||
              test_allgather(n > 65537 ? 65537 : n) ||
              test_reduce_scatter(n > 65537 ? 65537 : n);
    }
    bad = bad || check_status("dt_barrier", dt_barrier());
    if (!bad && rank == 0)
        printf("allreduce example: %d rank%s, all collectives correct\n", size,
               size == 1 ? "" : "s");
    st = dt_finalize();
    if (!bad && st != DT_OK)
        bad = check_status("dt_finalize", st);
    return bad ? 1 : 0;
}
