/* blas_start.c — OpenBLAS for a cpu device, its threads fitted to the
 * address-space limit (see blas_start.h). Measured with OpenBLAS 0.3.21
 * (Debian, x86-64): each pool thread maps 136 MiB when it starts (its
 * 128 MiB buffer, an 8 MiB stack), the calling thread 128 MiB at its
 * first product, whatever the matrices' size. */
#define _GNU_SOURCE
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <dt/log.h>
#include "base/proc_status.h"
#include "nn/blas_load.h"
#include "nn/blas_room.h"
#include "nn/blas_start.h"

#define MIB_UP(b) (((b) + (1ULL << 20) - 1) >> 20)

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static int pool; /* threads OpenBLAS runs, the calling one included */
static unsigned long long caller_buffer; /* measured; 0: not mapped yet */

/* Address space a thread's stack takes (pthread's default, which
 * OpenBLAS's pool threads get), its guard page included. */
static unsigned long long thread_stack_bytes(void)
{
    pthread_attr_t attr;
    size_t stack = 8u << 20, guard = 4096;
    if (pthread_getattr_default_np(&attr) == 0) {
        pthread_attr_getstacksize(&attr, &stack);
        pthread_attr_getguardsize(&attr, &guard);
        pthread_attr_destroy(&attr);
    }
    return (unsigned long long)stack + guard;
}

/* One product on this thread alone, so that OpenBLAS gives it a buffer
 * now (128^3 is past its small-matrix and direct kernels, which take
 * none); the growth of the mapped bytes: the size of a buffer it mapped,
 * 0 when it reused a free one (or /proc cannot tell). Leaves OpenBLAS at
 * one thread. */
static unsigned long long caller_product(const dt_blas_t *blas)
{
    enum { N = 128 };
    float *m = calloc(3 * N * N, sizeof *m);
    if (!m)
        return 0;
    unsigned long long before = dt_proc_mapped_bytes();
    blas->set_num_threads(1);
    blas->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, m,
                N, m + N * N, N, 1.0f, m + 2 * N * N, N);
    unsigned long long after = dt_proc_mapped_bytes();
    free(m);
    return before && after >= before + (1ULL << 20) ? after - before : 0;
}

/* Grow OpenBLAS's pool to fit threads, each with its buffer mapped
 * before this returns, so that nothing this process maps next can take
 * their room. The new threads map theirs as they start, after
 * openblas_set_num_threads returned, and OpenBLAS hands out a free
 * buffer before it maps one: the first of them may take the caller's
 * (free between products), and the caller then maps another at its next
 * product, made here. Either way the mapped bytes grow by a buffer and a
 * stack per new thread: waited for (10 s at most). */
static void grow_pool(const dt_blas_t *blas, int fit)
{
    unsigned long long buffer =
        caller_buffer ? caller_buffer : DT_BLAS_BUFFER_BYTES;
    unsigned long long grow =
        (unsigned long long)(fit - pool) * (buffer + thread_stack_bytes());
    unsigned long long before = dt_proc_mapped_bytes();
    blas->set_num_threads(fit);
    /* less half a buffer: still all of them, without counting on the
     * stacks to the byte */
    unsigned long long target = before + grow - buffer / 2;
    const struct timespec ms = {0, 1000000};
    int i = 0;
    while (before && dt_proc_mapped_bytes() < target && i++ < 10000) {
        if (caller_buffer)
            caller_product(blas);
        nanosleep(&ms, NULL);
    }
    if (before && i > 10000)
        dt_debug("OpenBLAS's new threads did not map %llu MiB in 10 s",
                 MIB_UP(grow));
    blas->set_num_threads(fit);
    pool = fit;
}

static dt_status_t refuse(unsigned long long limit, unsigned long long room,
                          const dt_blas_cost_t *cost, int threads)
{
    unsigned long long one = dt_blas_bytes_needed(cost, 1, 1) - room;
    unsigned long long all = dt_blas_bytes_needed(cost, threads, 1) - room;
    unsigned long long to = MIB_UP(limit + one);
    char more[160] = "";
    if (threads > 1)
        snprintf(more, sizeof more, " (by %llu MiB for all %d [train] "
                 "threads)", MIB_UP(all), threads);
    dt_error("cpu device: the address-space limit of %llu MiB (ulimit -v, "
             "SGE's h_vmem) leaves %llu MiB free, and OpenBLAS maps a %llu "
             "MiB buffer at the first matrix product (%llu MiB more for "
             "each further [train] thread), retrying for ever a mapping "
             "that does not fit: the job would hang. Raise the limit by at "
             "least %llu MiB%s, to %llu MiB (ulimit -v %llu, or SGE's "
             "-l h_vmem=%lluM), plus what the model and data take",
             limit >> 20, room >> 20, MIB_UP(cost->caller),
             MIB_UP(cost->thread), MIB_UP(one), more, to, to << 10, to);
    return DT_ERR_CONFIG;
}

static void warn_fewer(unsigned long long limit, unsigned long long room,
                       const dt_blas_cost_t *cost, int threads, int fit)
{
    unsigned long long short_of =
        dt_blas_bytes_needed(cost, threads, pool) - room;
    dt_warn("[train] threads = %d, but the address-space limit of %llu MiB "
            "(ulimit -v, SGE's h_vmem) leaves room for the buffers of %d "
            "OpenBLAS thread%s (%llu MiB each with its stack; a thread "
            "whose buffer does not fit would hang the job): running %d. "
            "Raise the limit by %llu MiB for %d, or set [train] threads = "
            "%d (the results round differently with each thread count)",
            threads, limit >> 20, fit, fit == 1 ? "" : "s",
            MIB_UP(cost->thread), fit, MIB_UP(short_of), threads, fit);
}

/* What the threads still need: the caller's buffer until it is mapped,
 * and per pool thread a buffer (as measured once mapped) and a stack. */
static dt_blas_cost_t cost_now(void)
{
    unsigned long long buffer =
        caller_buffer ? caller_buffer : DT_BLAS_BUFFER_BYTES;
    dt_blas_cost_t cost = {.caller = caller_buffer ? 0 : buffer,
                           .thread = buffer + thread_stack_bytes(),
                           .margin = DT_BLAS_ROOM_MARGIN};
    return cost;
}

/* Under a limit: the caller's buffer first (refused when it cannot fit),
 * then as many pool threads as the room left takes. */
static dt_status_t start_in_room(const dt_blas_t *blas, rlim_t limit,
                                 int threads, int *started)
{
    dt_blas_cost_t cost = cost_now();
    unsigned long long room =
        dt_blas_room_now(dt_blas_bytes_needed(&cost, threads, pool));
    if (dt_blas_threads_fitting(room, &cost, 1, pool) < 1)
        return refuse(limit, room, &cost, threads);
    if (!caller_buffer) {
        caller_buffer = caller_product(blas);
        dt_debug("OpenBLAS's buffer: %llu MiB%s",
                 MIB_UP(caller_buffer ? caller_buffer : DT_BLAS_BUFFER_BYTES),
                 caller_buffer ? "" : " (assumed: not measured)");
        cost = cost_now();
        room = dt_blas_room_now(dt_blas_bytes_needed(&cost, threads, pool));
    }
    int fit = dt_blas_threads_fitting(room, &cost, threads, pool);
    if (fit < 1) /* its buffer could not be measured, nor does it fit */
        return refuse(limit, room, &cost, threads);
    if (fit < threads)
        warn_fewer(limit, room, &cost, threads, fit);
    if (fit > pool)
        grow_pool(blas, fit);
    else
        blas->set_num_threads(fit);
    *started = fit;
    return DT_OK;
}

dt_status_t dt_blas_start(int threads, int *started)
{
    struct rlimit as;
    int limited = getrlimit(RLIMIT_AS, &as) == 0 &&
                  as.rlim_cur != RLIM_INFINITY;
    char why[2048];
    *started = 0;
    pthread_mutex_lock(&start_lock);
    /* Without a limit its constructor starts them all; under one, none:
     * the room is measured with the library mapped. */
    const dt_blas_t *blas = dt_blas_load(limited ? 1 : threads, why,
                                         sizeof why);
    if (!blas) {
        pthread_mutex_unlock(&start_lock);
        dt_error("cpu device: %s%s", why,
                 limited ? " (or, if the file is there, raise the "
                           "address-space limit: ulimit -v, SGE's h_vmem)"
                         : "");
        return DT_ERR_UNSUPPORTED;
    }
    if (pool < 1) /* loaded by us, or by a product before any device */
        pool = blas->threads_at_load > 0 ? blas->threads_at_load : 1;
    dt_status_t st = DT_OK;
    if (limited) {
        st = start_in_room(blas, as.rlim_cur, threads, started);
    } else {
        blas->set_num_threads(threads);
        *started = threads;
        if (threads > pool)
            pool = threads;
    }
    pthread_mutex_unlock(&start_lock);
    return st;
}
