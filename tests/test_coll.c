/* test_coll.c — the core's collective algorithms, N ranks as N threads over
 * the in-process transport, checked element by element against a serial
 * computation. Inputs are small integers stored as floats, so every sum is
 * exact and any wrong, missing or doubled contribution shows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "coll/coll.h"
#include "inproc_transport.h"

#define MAX_RANKS 8
#define FORCE_SMALL ((size_t)-1) /* small_bytes: every size is "small" */
#define FORCE_RING ((size_t)1)   /* small_bytes: every size uses the ring */
/* Allreduce algorithms by name: small_bytes and ring_bytes that force it. */
typedef enum { ALGO_SMALL, ALGO_HALVING, ALGO_RING } algo_t;
static const size_t algo_small[] = {FORCE_SMALL, 1, 1};
static const size_t algo_ring[] = {0, (size_t)-1, 1};

typedef struct body_args body_args_t;
/* Runs on one rank; returns the number of wrong elements (or -1). */
typedef long (*body_fn)(dt_comm_t *c, const body_args_t *a);

struct body_args {
    body_fn fn;
    size_t count;
    dt_redop_t op;
    dt_dtype_t t;
    int in_place, root;
    size_t small_bytes, chunk_bytes;
    size_t ring_bytes; /* 0: FORCE_RING (small_bytes) means the ring */
};

typedef struct thread_arg {
    inproc_world_t *w;
    int rank, size;
    const body_args_t *a;
    long wrong;
} thread_arg_t;

/* Rank r's input element i: an integer in [-50, 50]. */
static double input(int r, size_t i)
{
    return (double)((long)((i * 7 + (size_t)r * 13) % 101) - 50);
}

static void *rank_main(void *p)
{
    thread_arg_t *ta = p;
    dt_comm_t c = {.ops = &inproc_ops,
                   .ctx = inproc_rank_ctx(ta->w, ta->rank),
                   .rank = ta->rank,
                   .size = ta->size,
                   .small_bytes = ta->a->small_bytes,
                   .ring_bytes = ta->a->ring_bytes ? ta->a->ring_bytes
                                 : ta->a->small_bytes == FORCE_RING ? 1 : 0,
                   .chunk_bytes = ta->a->chunk_bytes,
                   .timeout_ms = 20000};
    ta->wrong = ta->a->fn(&c, ta->a);
    dt_comm_release(&c);
    return NULL;
}

/* Run the body on n ranks; assert every rank saw no wrong element and no
 * message was left unreceived. */
static void run_ranks(int n, const body_args_t *a)
{
    inproc_world_t *w;
    assert_int_equal(inproc_world_new(n, &w), DT_OK);
    pthread_t th[MAX_RANKS];
    thread_arg_t ta[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        ta[r] = (thread_arg_t){.w = w, .rank = r, .size = n, .a = a};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &ta[r]), 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++) {
        if (ta[r].wrong != 0)
            fail_msg("n=%d count=%zu op=%d type=%d in_place=%d root=%d "
                     "small=%zu: rank %d: %ld wrong (-1: call failed)",
                     n, a->count, (int)a->op, (int)a->t, a->in_place,
                     a->root, a->small_bytes, r, ta[r].wrong);
    }
    assert_int_equal(inproc_unreceived(w), 0);
    inproc_world_free(w);
}

static void fill(void *buf, dt_dtype_t t, int r, size_t off, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = input(r, off + i);
        if (t == DT_FLOAT32) ((float *)buf)[i] = (float)v;
        else if (t == DT_FLOAT64) ((double *)buf)[i] = v;
        else ((int32_t *)buf)[i] = (int32_t)v;
    }
}

static double get(const void *buf, dt_dtype_t t, size_t i)
{
    if (t == DT_FLOAT32) return ((const float *)buf)[i];
    if (t == DT_FLOAT64) return ((const double *)buf)[i];
    return ((const int32_t *)buf)[i];
}

/* The serial answer for element i over n ranks, converted like the
 * library converts (sum, then one multiplication by 1/n in the type). */
static double expect_reduced(int n, size_t i, dt_redop_t op, dt_dtype_t t)
{
    double acc = input(0, i);
    for (int r = 1; r < n; r++) {
        double v = input(r, i);
        if (op == DT_MAX) acc = v > acc ? v : acc;
        else if (op == DT_MIN) acc = v < acc ? v : acc;
        else acc += v;
    }
    if (op != DT_AVG)
        return acc;
    if (t == DT_FLOAT32) return (double)((float)acc * (float)(1.0 / n));
    if (t == DT_FLOAT64) return acc * (1.0 / n);
    double v = acc * (1.0 / n); /* lround: halves away from zero */
    return (double)(int32_t)(v >= 0 ? v + 0.5 : v - 0.5);
}

static long body_allreduce(dt_comm_t *c, const body_args_t *a)
{
    size_t es = dt_dtype_size(a->t), n = a->count;
    char *send = malloc(n * es + 1), *recv = malloc(n * es + 1);
    long wrong = 0;
    fill(send, a->t, c->rank, 0, n);
    memset(recv, 0x7f, n * es + 1);
    if (a->in_place)
        memcpy(recv, send, n * es);
    if (dt_coll_allreduce(c, a->in_place ? recv : send, recv, n, a->t,
                          a->op) != DT_OK)
        wrong = -1;
    for (size_t i = 0; wrong >= 0 && i < n; i++)
        wrong += get(recv, a->t, i) != expect_reduced(c->size, i, a->op, a->t);
    if (wrong >= 0 && (unsigned char)recv[n * es] != 0x7f)
        wrong++; /* wrote past the end */
    free(send);
    free(recv);
    return wrong;
}

static void check_allreduce(int n, size_t count, dt_redop_t op,
                            dt_dtype_t t, algo_t algo)
{
    for (int in_place = 0; in_place < 2; in_place++) {
        body_args_t a = {.fn = body_allreduce, .count = count, .op = op,
                         .t = t, .in_place = in_place,
                         .small_bytes = algo_small[algo],
                         .ring_bytes = algo_ring[algo]};
        run_ranks(n, &a);
        /* Tiny chunks: many messages per block, the pipeline exercised. */
        a.chunk_bytes = 12;
        if (count < 5000)
            run_ranks(n, &a);
    }
}

static void test_allreduce_counts(void **state)
{
    for (int n = 1; n <= MAX_RANKS; n++) {
        size_t counts[] = {0, 1, (size_t)n - 1, (size_t)n + 1, 13, 1031};
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
            for (int op = DT_SUM; op <= DT_AVG; op++)
                for (int algo = ALGO_SMALL; algo <= ALGO_RING; algo++)
                    check_allreduce(n, counts[k], (dt_redop_t)op, DT_FLOAT32,
                                    (algo_t)algo);
    }
}

static void test_allreduce_large(void **state)
{
    int ns[] = {2, 3, 4, 5, 8};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        body_args_t a = {.fn = body_allreduce, .count = (1u << 20) + 3,
                         .op = DT_SUM, .t = DT_FLOAT32,
                         .small_bytes = FORCE_RING, .chunk_bytes = 64 << 10};
        run_ranks(ns[k], &a);
        a.op = DT_AVG;
        a.in_place = 1;
        run_ranks(ns[k], &a);
        if (ns[k] == 3) { /* recursive doubling on 4 MiB: once is enough */
            a.small_bytes = FORCE_SMALL;
            run_ranks(ns[k], &a);
        }
        /* Halving/doubling, pipelined in 64 KiB chunks. */
        a.small_bytes = algo_small[ALGO_HALVING];
        a.ring_bytes = algo_ring[ALGO_HALVING];
        run_ranks(ns[k], &a);
        a.op = DT_SUM;
        a.in_place = 0;
        run_ranks(ns[k], &a);
        /* The default thresholds and chunk size. */
        a.small_bytes = 0;
        a.ring_bytes = 0;
        a.chunk_bytes = 0;
        run_ranks(ns[k], &a);
    }
}

static void test_allreduce_types_ops(void **state)
{
    dt_dtype_t types[] = {DT_FLOAT64, DT_INT32, DT_FLOAT32};
    for (size_t k = 0; k < 3; k++)
        for (int op = DT_SUM; op < DT_REDOP_COUNT; op++)
            for (int n = 1; n <= 6; n++)
                for (int algo = ALGO_SMALL; algo <= ALGO_RING; algo++)
                    check_allreduce(n, 29, (dt_redop_t)op, types[k],
                                    (algo_t)algo);
}

static long body_unsupported(dt_comm_t *c, const body_args_t *a)
{
    uint16_t buf[4] = {0};
    return dt_coll_allreduce(c, buf, buf, 4, DT_FLOAT16, DT_SUM) ==
                   DT_ERR_UNSUPPORTED
               ? 0
               : 1;
}

static void test_allreduce_unsupported_type(void **state)
{
    body_args_t a = {.fn = body_unsupported};
    run_ranks(3, &a);
}

static long body_broadcast(dt_comm_t *c, const body_args_t *a)
{
    size_t n = a->count;
    float *buf = malloc(n * sizeof *buf + 1);
    long wrong = 0;
    if (c->rank == a->root)
        fill(buf, DT_FLOAT32, a->root, 0, n);
    else
        for (size_t i = 0; i < n; i++)
            buf[i] = -1000.0f;
    if (dt_coll_broadcast(c, buf, n, DT_FLOAT32, a->root) != DT_OK)
        wrong = -1;
    for (size_t i = 0; wrong >= 0 && i < n; i++)
        wrong += buf[i] != (float)input(a->root, i);
    free(buf);
    return wrong;
}

static void test_broadcast(void **state)
{
    for (int n = 1; n <= MAX_RANKS; n++) {
        size_t counts[] = {0, 1, 13, 4099};
        for (int root = 0; root < n; root++)
            for (size_t k = 0; k < 4; k++) {
                body_args_t a = {.fn = body_broadcast, .count = counts[k],
                                 .root = root, .small_bytes = FORCE_SMALL};
                run_ranks(n, &a);
                a.small_bytes = FORCE_RING;
                a.chunk_bytes = 100; /* the chain, pipelined */
                run_ranks(n, &a);
            }
    }
}

static long body_allgather(dt_comm_t *c, const body_args_t *a)
{
    size_t n = a->count, total = n * (size_t)c->size;
    float *send = malloc(n * sizeof *send + 1);
    float *recv = malloc(total * sizeof *recv + 1);
    long wrong = 0;
    fill(send, DT_FLOAT32, c->rank, 0, n);
    for (size_t i = 0; i < total; i++)
        recv[i] = -1000.0f;
    const float *src = send;
    if (a->in_place) {
        memcpy(recv + (size_t)c->rank * n, send, n * sizeof *send);
        src = recv;
    }
    if (dt_coll_allgather(c, src, recv, n, DT_FLOAT32) != DT_OK)
        wrong = -1;
    for (int r = 0; wrong >= 0 && r < c->size; r++)
        for (size_t i = 0; i < n; i++)
            wrong += recv[(size_t)r * n + i] != (float)input(r, i);
    free(send);
    free(recv);
    return wrong;
}

static void test_allgather(void **state)
{
    for (int n = 1; n <= MAX_RANKS; n++) {
        size_t counts[] = {0, 1, 5, 1000};
        for (size_t k = 0; k < 4; k++)
            for (int ip = 0; ip < 2; ip++) {
                body_args_t a = {.fn = body_allgather, .count = counts[k],
                                 .in_place = ip};
                run_ranks(n, &a);
                a.chunk_bytes = 8;
                run_ranks(n, &a);
            }
    }
}

static long body_reduce_scatter(dt_comm_t *c, const body_args_t *a)
{
    size_t n = a->count, total = n * (size_t)c->size;
    float *send = malloc(total * sizeof *send + 1);
    float *recv = malloc(n * sizeof *recv + 1);
    long wrong = 0;
    fill(send, DT_FLOAT32, c->rank, 0, total);
    float *out = a->in_place ? send : recv;
    if (dt_coll_reduce_scatter(c, send, out, n, DT_FLOAT32, a->op) != DT_OK)
        wrong = -1;
    for (size_t i = 0; wrong >= 0 && i < n; i++)
        wrong += out[i] != (float)expect_reduced(
                               c->size, (size_t)c->rank * n + i, a->op,
                               DT_FLOAT32);
    free(send);
    free(recv);
    return wrong;
}

static void test_reduce_scatter(void **state)
{
    for (int n = 1; n <= MAX_RANKS; n++) {
        size_t counts[] = {0, 1, 5, 1000};
        for (size_t k = 0; k < 4; k++)
            for (int op = DT_SUM; op <= DT_AVG; op++)
                for (int ip = 0; ip < 2; ip++) {
                    body_args_t a = {.fn = body_reduce_scatter,
                                     .count = counts[k], .op = (dt_redop_t)op,
                                     .in_place = ip};
                    run_ranks(n, &a);
                    a.chunk_bytes = 8;
                    run_ranks(n, &a);
                }
    }
}

/* Every rank bumps a shared counter, then enters the barrier: whoever
 * leaves it must see every rank's bump of this round. */
static int barrier_counter;
static pthread_mutex_t barrier_lock = PTHREAD_MUTEX_INITIALIZER;

static long body_barrier(dt_comm_t *c, const body_args_t *a)
{
    long wrong = 0;
    for (int round = 1; round <= 20; round++) {
        pthread_mutex_lock(&barrier_lock);
        barrier_counter++;
        pthread_mutex_unlock(&barrier_lock);
        if (dt_coll_barrier(c) != DT_OK)
            return -1;
        pthread_mutex_lock(&barrier_lock);
        wrong += barrier_counter < round * c->size;
        pthread_mutex_unlock(&barrier_lock);
        /* Keep rounds apart: nobody bumps round+1 before all checked. */
        if (dt_coll_barrier(c) != DT_OK)
            return -1;
    }
    return wrong;
}

static void test_barrier(void **state)
{
    for (int n = 1; n <= MAX_RANKS; n++) {
        barrier_counter = 0;
        body_args_t a = {.fn = body_barrier};
        run_ranks(n, &a);
    }
}

static void test_reduce_local_kernels(void **state)
{
    /* Lengths around the vector width, unaligned starts. */
    for (size_t n = 0; n < 40; n++) {
        float a[48], b[48];
        double d[48], e[48];
        int32_t x[48], y[48];
        for (size_t i = 0; i < n + 2; i++) {
            a[i] = (float)i;
            b[i] = (float)(2 * i + 1);
            d[i] = (double)i;
            e[i] = -(double)i;
            x[i] = INT32_MAX;
            y[i] = 1;
        }
        assert_int_equal(dt_reduce_local(a + 1, b + 1, n, DT_FLOAT32, DT_SUM),
                         DT_OK);
        assert_int_equal(dt_reduce_local(d, e, n, DT_FLOAT64, DT_MAX), DT_OK);
        assert_int_equal(dt_reduce_local(x, y, n, DT_INT32, DT_SUM), DT_OK);
        for (size_t i = 0; i < n; i++) {
            assert_true(a[i + 1] == (float)(3 * (i + 1) + 1));
            assert_true(d[i] == (double)i);
            assert_int_equal(x[i], INT32_MIN); /* wraps, defined */
        }
        assert_true(a[0] == 0.0f);
        assert_true(a[n + 1] == (float)(n + 1)); /* untouched past the end */
    }
    assert_int_equal(dt_reduce_local(NULL, NULL, 1, DT_BFLOAT16, DT_SUM),
                     DT_ERR_UNSUPPORTED);
}

/* dt_reduce_scale (the average's 1/n) gives, element by element, the bits
 * of one scalar multiply: vector body and scalar tail alike (lengths
 * around the vector width, unaligned starts), NaN, infinities, -0 and
 * subnormals included, and nothing past the end is written. */
static void test_reduce_scale_bits(void **state)
{
    (void)state;
    const double in[] = {1.5, -0.0, NAN, INFINITY, -3.25, 1e-40, 7.0,
                         -1e-310, 0.1, 3e38, -2.0};
    const size_t k = sizeof in / sizeof in[0];
    for (size_t n = 0; n < 40; n++) {
        float f[48], fw[48];
        double d[48], dw[48];
        for (size_t i = 0; i < n + 2; i++) {
            d[i] = in[(i + n) % k];
            f[i] = (float)d[i];
        }
        for (size_t i = 0; i < n + 2; i++) {
            fw[i] = i >= 1 && i <= n ? f[i] * (float)(1.0 / 3) : f[i];
            dw[i] = i >= 1 && i <= n ? d[i] * (1.0 / 3) : d[i];
        }
        assert_int_equal(dt_reduce_scale(f + 1, n, DT_FLOAT32, 1.0 / 3),
                         DT_OK);
        assert_int_equal(dt_reduce_scale(d + 1, n, DT_FLOAT64, 1.0 / 3),
                         DT_OK);
        assert_memory_equal(f, fw, (n + 2) * sizeof *f);
        assert_memory_equal(d, dw, (n + 2) * sizeof *d);
    }
    assert_int_equal(dt_reduce_scale(NULL, 1, DT_BFLOAT16, 0.5),
                     DT_ERR_UNSUPPORTED);
}

/* max/min give the same bits whichever operand comes first (recursive
 * doubling computes mine OP peer's on both ranks of a pair): NaN on
 * either side is NaN, max(+0, -0) = +0, min = -0; vector body and scalar
 * tail alike (19 elements). */
static void check_order_free(dt_dtype_t t, dt_redop_t op)
{
    enum { N = 19 };
    const double in_a[] = {NAN, -0.0, 1, 2, 0.0, -3, NAN, 5};
    const double in_b[] = {1, 0.0, NAN, 2, -0.0, 4, NAN, -5};
    const size_t k = sizeof in_a / sizeof in_a[0];
    double da[N], db[N], r1[N], r2[N];
    float fa[N], fb[N], s1[N], s2[N];
    for (size_t i = 0; i < N; i++) {
        da[i] = in_a[i % k];
        db[i] = in_b[i % k];
        fa[i] = (float)da[i];
        fb[i] = (float)db[i];
    }
    int f32 = t == DT_FLOAT32;
    void *x = f32 ? (void *)s1 : (void *)r1, *y = f32 ? (void *)s2 : (void *)r2;
    const void *a = f32 ? (const void *)fa : (const void *)da;
    const void *b = f32 ? (const void *)fb : (const void *)db;
    size_t bytes = N * (f32 ? sizeof(float) : sizeof(double));
    memcpy(x, a, bytes);
    memcpy(y, b, bytes);
    assert_int_equal(dt_reduce_local(x, b, N, t, op), DT_OK);
    assert_int_equal(dt_reduce_local(y, a, N, t, op), DT_OK);
    assert_memory_equal(x, y, bytes);
    for (size_t i = 0; i < N; i++) {
        double v = f32 ? (double)s1[i] : r1[i];
        size_t j = i % k;
        if (isnan(in_a[j]) || isnan(in_b[j]))
            assert_true(isnan(v));
        else if (in_a[j] == 0 && in_b[j] == 0)
            assert_int_equal(signbit(v) != 0, op == DT_MIN);
        else
            assert_true(v == (op == DT_MAX ? fmax(in_a[j], in_b[j])
                                           : fmin(in_a[j], in_b[j])));
    }
}

static void test_max_min_order_free(void **state)
{
    (void)state;
    check_order_free(DT_FLOAT32, DT_MAX);
    check_order_free(DT_FLOAT32, DT_MIN);
    check_order_free(DT_FLOAT64, DT_MAX);
    check_order_free(DT_FLOAT64, DT_MIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_local_kernels),
        cmocka_unit_test(test_reduce_scale_bits),
        cmocka_unit_test(test_max_min_order_free),
        cmocka_unit_test(test_allreduce_counts),
        cmocka_unit_test(test_allreduce_large),
        cmocka_unit_test(test_allreduce_types_ops),
        cmocka_unit_test(test_allreduce_unsupported_type),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_reduce_scatter),
        cmocka_unit_test(test_barrier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
