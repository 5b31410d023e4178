/* test_coll_compress.c — [collectives] compression: the float32 sum/avg
 * allreduce with 16-bit values on the wire (coll_half.c), N ranks as N
 * threads over the in-process transport. Every algorithm (recursive
 * doubling, halving/doubling, the ring; forced by small_bytes/ring_bytes)
 * is checked bit for bit against a serial reference that adds and rounds
 * in the algorithm's own order, with its own conversions (bf16 by integer
 * rounding, fp16 through the compiler's _Float16, saturated at ±65504).
 * Error feedback must cut the error accumulated over a gradient sequence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <pthread.h>
#include <cmocka.h>

#include "coll/coll.h"
#include "coll/coll_internal.h"
#include "inproc_transport.h"

#define MAX_RANKS 8
typedef enum { ALGO_SMALL, ALGO_HALVING, ALGO_RING } algo_t;
static const size_t algo_small[] = {(size_t)-1, 1, 1};
static const size_t algo_ring[] = {0, (size_t)-1, 1};

/* ---- the reference conversions ---- */

static float ref_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u; /* no NaN here */
    memcpy(&f, &u, 4);
    return f;
}

static float ref_fp16(float f)
{
    if (f > 65504.0f)
        f = 65504.0f;
    if (f < -65504.0f)
        f = -65504.0f;
#ifdef __FLT16_MAX__ /* the compiler has _Float16 (gcc 12, clang 15) */
    return (float)(_Float16)f;
#else /* clang 14 on x86-64: the same rounding (to nearest, ties to even) */
    if (fabsf(f) < 0x1p-14f) /* subnormal: steps of 2^-24 */
        return nearbyintf(f * 0x1p24f) * 0x1p-24f;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu; /* 10 mantissa bits */
    memcpy(&f, &u, 4);
    return f;
#endif
}

static float wq(dt_dtype_t wire, float f)
{
    return wire == DT_BFLOAT16 ? ref_bf16(f) : ref_fp16(f);
}

/* ---- inputs: varied magnitudes, a few near fp16's limit ---- */

static float input(int r, size_t i, dt_dtype_t wire)
{
    uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u + 7);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    float m = (float)(h % 100000u) / 100000.0f - 0.5f;
    int e = (int)((h >> 20) % 17) - 8;
    if (wire == DT_FLOAT16 && i % 97 == 5)
        return 30000.0f + (float)r; /* sums beyond 65504: saturation */
    return ldexpf(m, e);
}

static float scale(float acc, int n, dt_redop_t op)
{
    return op == DT_AVG ? acc * (float)(1.0 / n) : acc;
}

/* The ring: block b starts at rank b+1, each next rank adds its value to
 * the widened partial sum, the owner b scales and rounds. */
static float ref_ring(int n, size_t count, size_t i, dt_redop_t op,
                      dt_dtype_t w)
{
    int b = 0;
    while (b + 1 < n && dt_block_off(count, n, b + 1) <= i)
        b++;
    float acc = input((b + 1) % n, i, w);
    for (int k = 2; k <= n; k++)
        acc = input((b + k) % n, i, w) + wq(w, acc);
    return wq(w, scale(acc, n, op));
}

/* Fold common to halving and doubling: p2 virtual ranks' vectors. */
static int fold(int n, size_t i, dt_dtype_t w, float *acc)
{
    int p2 = 1;
    while (p2 * 2 <= n)
        p2 *= 2;
    int rem = n - p2;
    for (int v = 0; v < p2; v++)
        acc[v] = v < rem ? input(2 * v + 1, i, w) + wq(w, input(2 * v, i, w))
                         : input(v + rem, i, w);
    return p2;
}

static float ref_halving(int n, size_t count, size_t i, dt_redop_t op,
                         dt_dtype_t w)
{
    float acc[MAX_RANKS], nx[MAX_RANKS];
    int p2 = fold(n, i, w, acc);
    for (int mask = p2 / 2; mask >= 1; mask /= 2) {
        for (int v = 0; v < p2; v++)
            nx[v] = acc[v] + wq(w, acc[v ^ mask]);
        memcpy(acc, nx, sizeof acc);
    }
    int b = 0;
    while (b + 1 < p2 && dt_block_off(count, p2, b + 1) <= i)
        b++;
    return wq(w, scale(acc[b], n, op));
}

static float ref_doubling(int n, size_t i, dt_redop_t op, dt_dtype_t w)
{
    float acc[MAX_RANKS], nx[MAX_RANKS];
    int p2 = fold(n, i, w, acc);
    for (int mask = 1; mask < p2; mask *= 2) {
        for (int v = 0; v < p2; v++)
            nx[v] = wq(w, acc[v]) + wq(w, acc[v ^ mask]);
        memcpy(acc, nx, sizeof acc);
    }
    return wq(w, scale(acc[0], n, op));
}

static float reference(algo_t algo, int n, size_t count, size_t i,
                       dt_redop_t op, dt_dtype_t w)
{
    if (n == 1)
        return input(0, i, w);
    if (algo == ALGO_RING)
        return ref_ring(n, count, i, op, w);
    if (algo == ALGO_HALVING)
        return ref_halving(n, count, i, op, w);
    return ref_doubling(n, i, op, w);
}

/* ---- ranks as threads ---- */

typedef struct args {
    size_t count, chunk;
    dt_redop_t op;
    dt_dtype_t wire;
    algo_t algo;
    int in_place, feedback, steps;
    double err[MAX_RANKS]; /* feedback runs: accumulated error per rank */
} args_t;

typedef struct targ {
    inproc_world_t *w;
    int rank, size;
    args_t *a;
    long wrong;
} targ_t;

static dt_comm_t make_comm(const targ_t *ta)
{
    const args_t *a = ta->a;
    return (dt_comm_t){.ops = &inproc_ops,
                       .ctx = inproc_rank_ctx(ta->w, ta->rank),
                       .rank = ta->rank,
                       .size = ta->size,
                       .small_bytes = algo_small[a->algo],
                       .ring_bytes = algo_ring[a->algo],
                       .chunk_bytes = a->chunk,
                       .timeout_ms = 20000,
                       .wire = a->wire,
                       .feedback = a->feedback};
}

static void *exact_main(void *p)
{
    targ_t *ta = p;
    args_t *a = ta->a;
    dt_comm_t c = make_comm(ta);
    size_t n = a->count;
    float *send = malloc(n * 4 + 4), *recv = malloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++)
        send[i] = input(ta->rank, i, a->wire);
    memset(recv, 0x7f, n * 4 + 4);
    if (a->in_place)
        memcpy(recv, send, n * 4);
    long wrong = 0;
    if (dt_coll_allreduce(&c, a->in_place ? recv : send, recv, n, DT_FLOAT32,
                          a->op) != DT_OK)
        wrong = -1;
    for (size_t i = 0; wrong >= 0 && i < n; i++) {
        float e = reference(a->algo, ta->size, n, i, a->op, a->wire);
        if (memcmp(&e, &recv[i], 4) != 0) {
            if (wrong < 3)
                print_message("rank %d i=%zu: got %.9g want %.9g\n",
                              ta->rank, i, recv[i], e);
            wrong++;
        }
    }
    if (wrong >= 0 && ((unsigned char *)recv)[n * 4] != 0x7f)
        wrong++;
    free(send);
    free(recv);
    dt_comm_release(&c);
    ta->wrong = wrong;
    return NULL;
}

static void run(int n, args_t *a, void *(*fn)(void *))
{
    inproc_world_t *w;
    assert_int_equal(inproc_world_new(n, &w), DT_OK);
    pthread_t th[MAX_RANKS];
    targ_t ta[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        ta[r] = (targ_t){.w = w, .rank = r, .size = n, .a = a};
        assert_int_equal(pthread_create(&th[r], NULL, fn, &ta[r]), 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++)
        if (ta[r].wrong != 0)
            fail_msg("n=%d count=%zu op=%d wire=%d algo=%d in_place=%d "
                     "chunk=%zu: rank %d: %ld wrong (-1: call failed)",
                     n, a->count, (int)a->op, (int)a->wire, (int)a->algo,
                     a->in_place, a->chunk, r, ta[r].wrong);
    assert_int_equal(inproc_unreceived(w), 0);
    inproc_world_free(w);
}

static void test_conversions(void **state)
{
    (void)state;
    /* A sweep of float32 bit patterns (both signs, every exponent), both
     * fp16 loops (F16C and portable) and bf16, against the reference. */
    enum { N = 4096 };
    static float in[N], out[N];
    static uint16_t h[N];
    dt_dtype_t wires[] = {DT_BFLOAT16, DT_FLOAT16, DT_FLOAT16};
    for (int k = 0; k < 3; k++) {
        dt_wire_set_portable(k == 2);
        for (uint64_t base = 0; base < (1ull << 32); base += 997ull * N) {
            size_t m = 0;
            for (; m < N; m++) {
                uint32_t u = (uint32_t)(base + m * 997ull);
                memcpy(&in[m], &u, 4);
                if (isnan(in[m]))
                    in[m] = 1.0f;
            }
            dt_wire_from_f32(h, in, N, wires[k]);
            dt_wire_to_f32(out, h, N, wires[k]);
            for (size_t j = 0; j < N; j++) {
                float e = wq(wires[k], in[j]);
                if (memcmp(&e, &out[j], 4) != 0)
                    fail_msg("wire %d path %d: %a -> %a, want %a",
                             (int)wires[k], k, in[j], out[j], e);
            }
        }
    }
    dt_wire_set_portable(0);
}

static void test_exact_all_algorithms(void **state)
{
    (void)state;
    dt_dtype_t wires[] = {DT_BFLOAT16, DT_FLOAT16};
    for (int n = 1; n <= MAX_RANKS; n++) {
        size_t counts[] = {0, 1, (size_t)n - 1, (size_t)n + 1, 13, 1031, 4099};
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
            for (int wi = 0; wi < 2; wi++)
                for (int op = DT_SUM; op <= DT_AVG; op++)
                    for (int algo = ALGO_SMALL; algo <= ALGO_RING; algo++)
                        for (int ip = 0; ip < 2; ip++) {
                            args_t a = {.count = counts[k], .op = op,
                                        .wire = wires[wi], .algo = algo,
                                        .in_place = ip};
                            run(n, &a, exact_main);
                            a.chunk = 14; /* 7 elements a message */
                            if (counts[k] < 2000)
                                run(n, &a, exact_main);
                        }
    }
}

static void test_exact_large(void **state)
{
    (void)state;
    int ns[] = {2, 3, 5, 8};
    for (size_t k = 0; k < 4; k++)
        for (int algo = ALGO_HALVING; algo <= ALGO_RING; algo++) {
            args_t a = {.count = (1u << 18) + 3, .op = DT_AVG,
                        .wire = DT_BFLOAT16, .algo = algo,
                        .chunk = 64 << 10};
            run(ns[k], &a, exact_main);
            a.wire = DT_FLOAT16;
            a.in_place = 1;
            run(ns[k], &a, exact_main);
        }
}

/* ---- error feedback ---- */

/* Rank r's gradient at step t: a steady part that bf16/fp16 cannot hold
 * exactly plus a small drift. */
static float grad(int r, size_t i, int t)
{
    return 0.01f * (1.0f + (float)((i * 37 + (size_t)r * 11) % 97) / 97.0f) +
           1e-4f * sinf((float)(t + (int)i));
}

static void *feedback_main(void *p)
{
    targ_t *ta = p;
    args_t *a = ta->a;
    dt_comm_t c = make_comm(ta);
    size_t n = a->count;
    float *send = malloc(n * 4), *recv = malloc(n * 4);
    double *got = calloc(n, sizeof *got), *want = calloc(n, sizeof *want);
    ta->wrong = 0;
    for (int t = 0; t < a->steps; t++) {
        for (size_t i = 0; i < n; i++) {
            send[i] = grad(ta->rank, i, t);
            double m = 0;
            for (int r = 0; r < ta->size; r++)
                m += grad(r, i, t);
            want[i] += m / ta->size;
        }
        if (dt_coll_allreduce(&c, send, recv, n, DT_FLOAT32, DT_AVG) !=
            DT_OK) {
            ta->wrong = -1;
            break;
        }
        for (size_t i = 0; i < n; i++)
            got[i] += recv[i];
    }
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        err += fabs(got[i] - want[i]);
        norm += fabs(want[i]);
    }
    a->err[ta->rank] = err / norm;
    free(send);
    free(recv);
    free(got);
    free(want);
    dt_comm_release(&c);
    return NULL;
}

static void test_feedback(void **state)
{
    (void)state;
    dt_dtype_t wires[] = {DT_BFLOAT16, DT_FLOAT16};
    int ns[] = {2, 3, 4};
    for (int wi = 0; wi < 2; wi++)
        for (int k = 0; k < 3; k++)
            for (int algo = ALGO_SMALL; algo <= ALGO_RING; algo++) {
                args_t a = {.count = 1001, .op = DT_AVG, .wire = wires[wi],
                            .algo = algo, .steps = 200};
                run(ns[k], &a, feedback_main);
                double plain = a.err[0];
                a.feedback = 1;
                run(ns[k], &a, feedback_main);
                double fb = a.err[0];
                print_message("wire %s n=%d algo %d: accumulated relative "
                              "error %.3g without feedback, %.3g with\n",
                              wires[wi] == DT_BFLOAT16 ? "bf16" : "fp16",
                              ns[k], algo, plain, fb);
                if (!(fb < plain / 10))
                    fail_msg("feedback did not cut the error: %.3g -> %.3g",
                             plain, fb);
            }
}

/* One step with inf and NaN on rank 0, then finite steps: with feedback
 * those elements must come back to the mean (their residual was inf - inf
 * = NaN, carried into every later call on the buffer). */
static void *nonfinite_main(void *p)
{
    targ_t *ta = p;
    args_t *a = ta->a;
    dt_comm_t c = make_comm(ta);
    size_t n = a->count;
    float *send = malloc(n * 4), *recv = malloc(n * 4);
    ta->wrong = 0;
    for (int t = 0; t < a->steps && ta->wrong == 0; t++) {
        for (size_t i = 0; i < n; i++)
            send[i] = grad(ta->rank, i, t);
        if (t == 0 && ta->rank == 0) {
            send[5] = INFINITY;
            send[6] = NAN;
            send[n - 1] = -INFINITY; /* the scalar tail too */
        }
        if (dt_coll_allreduce(&c, send, recv, n, DT_FLOAT32, DT_AVG) !=
            DT_OK) {
            ta->wrong = -1;
            break;
        }
        for (size_t i = 0; t > 0 && i < n; i++) {
            double m = 0;
            for (int r = 0; r < ta->size; r++)
                m += grad(r, i, t);
            m /= ta->size;
            if (!(fabs(recv[i] - m) < 1e-3)) {
                if (ta->wrong < 3)
                    print_message("rank %d step %d i=%zu: got %.9g want "
                                  "%.9g\n", ta->rank, t, i, recv[i], m);
                ta->wrong++;
            }
        }
    }
    free(send);
    free(recv);
    dt_comm_release(&c);
    return NULL;
}

static void test_feedback_nonfinite(void **state)
{
    (void)state;
    dt_dtype_t wires[] = {DT_BFLOAT16, DT_FLOAT16};
    for (int wi = 0; wi < 2; wi++)
        for (int n = 2; n <= 3; n++)
            for (int algo = ALGO_SMALL; algo <= ALGO_RING; algo++) {
                args_t a = {.count = 35, .op = DT_AVG, .wire = wires[wi],
                            .algo = algo, .steps = 4, .feedback = 1};
                run(n, &a, nonfinite_main);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_exact_all_algorithms),
        cmocka_unit_test(test_exact_large),
        cmocka_unit_test(test_feedback),
        cmocka_unit_test(test_feedback_nonfinite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
