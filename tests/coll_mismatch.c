/* coll_mismatch.c — a worker for tests/coll_mismatch.sh: the ranks of a
 * job call collectives that do not match (the user's bug) and must all get
 * an error at once, never DT_OK with wrong data and never a wait for the
 * timeout; dt_finalize after it must return at once too.
 *
 * MISMATCH_CASE picks what every rank calls / what rank MISMATCH_RANK
 * (default 1) calls instead, on buffers of ones:
 *   count        allreduce of 100 float32 (sum) / of 200
 *   count_large  allreduce of 100000 float32 (sum) / of 200000
 *   kind         barrier / allreduce of 4 float32 (sum)
 *   dtype        allreduce of 100 float32 (sum) / of 100 int32 (sum)
 *   dtype_width  allreduce of 100 float32 (sum) / of 100 float64 (sum)
 *   op           allreduce of 100 float32 (sum) / (max)
 *   root         broadcast of 100 float32 from rank 0 / from rank 1
 *   none         allreduce of 100 float32 (sum) on every rank (control)
 *
 * Each rank prints one line per call, "coll_mismatch: rank R: CALL: STATUS
 * after S s", the status as dt_status_str names it, and exits 0 (the test
 * reads the lines); 1 when the control's result is wrong, 2 when the job
 * cannot start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/clock.h>
#include <dt/dt.h>

#define MAX_COUNT 200000

static int rank;

static void report(const char *call, dt_status_t st, double start)
{
    printf("coll_mismatch: rank %d: %s: %s after %.2f s\n", rank, call,
           dt_status_str(st), dt_clock_now() - start);
    fflush(stdout);
}

static dt_status_t allreduce(void *buf, size_t count, dt_dtype_t t,
                             dt_redop_t op)
{
    return dt_allreduce(buf, buf, count, t, op);
}

/* This rank's call of the case (other: the rank that differs). */
static dt_status_t call(const char *c, int other, void *buf)
{
    if (strcmp(c, "count") == 0)
        return allreduce(buf, other ? 200 : 100, DT_FLOAT32, DT_SUM);
    if (strcmp(c, "count_large") == 0)
        return allreduce(buf, other ? 200000 : 100000, DT_FLOAT32, DT_SUM);
    if (strcmp(c, "kind") == 0)
        return other ? allreduce(buf, 4, DT_FLOAT32, DT_SUM) : dt_barrier();
    if (strcmp(c, "dtype") == 0)
        return allreduce(buf, 100, other ? DT_INT32 : DT_FLOAT32, DT_SUM);
    if (strcmp(c, "dtype_width") == 0)
        return allreduce(buf, 100, other ? DT_FLOAT64 : DT_FLOAT32, DT_SUM);
    if (strcmp(c, "op") == 0)
        return allreduce(buf, 100, DT_FLOAT32, other ? DT_MAX : DT_SUM);
    if (strcmp(c, "root") == 0)
        return dt_broadcast(buf, 100, DT_FLOAT32, other ? 1 : 0);
    if (strcmp(c, "none") == 0)
        return allreduce(buf, 100, DT_FLOAT32, DT_SUM);
    fprintf(stderr, "coll_mismatch: unknown MISMATCH_CASE '%s'\n", c);
    exit(2);
}

/* Ones of the type this rank's call uses (MAX_COUNT 4-byte elements, or
 * half as many of 8 bytes). */
static void ones(const char *c, int other, void *buf)
{
    int is_int = other && strcmp(c, "dtype") == 0;
    int is_f64 = other && strcmp(c, "dtype_width") == 0;
    for (size_t i = 0; i < (is_f64 ? MAX_COUNT / 2 : MAX_COUNT); i++) {
        if (is_int)
            ((int *)buf)[i] = 1;
        else if (is_f64)
            ((double *)buf)[i] = 1.0;
        else
            ((float *)buf)[i] = 1.0f;
    }
}

int main(void)
{
    const char *c = getenv("MISMATCH_CASE");
    const char *odd = getenv("MISMATCH_RANK");
    if (!c || dt_init() != DT_OK)
        return 2;
    rank = dt_rank();
    int other = rank == (odd ? atoi(odd) : 1);
    float *buf = malloc(MAX_COUNT * sizeof *buf);
    if (!buf)
        return 2;
    ones(c, other, buf);
    double start = dt_clock_now();
    dt_status_t st = call(c, other, buf);
    /* The control's sum of ones is the number of ranks. */
    for (int i = 0; st == DT_OK && strcmp(c, "none") == 0 && i < 100; i++)
        if (buf[i] != (float)dt_size()) {
            printf("coll_mismatch: rank %d: none: element %d is %g, not "
                   "%d\n", rank, i, (double)buf[i], dt_size());
            return 1;
        }
    report(c, st, start);
    start = dt_clock_now();
    report("dt_finalize", dt_finalize(), start);
    free(buf);
    return 0;
}
