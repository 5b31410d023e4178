/* test_elem_math.c — the per-element arithmetic of dt's own CUDA kernels
 * (core/cuda/elem_math.h), compiled here by the C compiler and run on the
 * CPU against the CPU layers: the smoothed softmax cross-entropy's loss
 * rows and gradient must be the CPU's bit for bit (the same operations in
 * the same order); the bf16 rounding of the cuDNN copies under precision
 * = bf16 against the nearest bf16, ties to even; sync_bn's per-channel
 * statistics and coefficients against their definitions. The residual
 * add has no kernel of dt's own (cuBLAS saxpy; its backward is a copy),
 * so nothing of it is here. Needs no GPU and no CUDA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "cuda/elem_math.h"
#include "nn/layer.h"
#include "nn_testutil.h"

#define B 5
#define K 7

static void check_eps(float eps)
{
    dt_device_t *cpu = NULL;
    assert_int_equal(dt_device_open("cpu", 0, 1, &cpu), DT_OK);
    float z[B * K], p[B * K], rows[2 * B], dz[B * K];
    int labels[B];
    fill_random(z, B * K, 42);
    for (int i = 0; i < B * K; i++)
        z[i] *= 4.0f;
    for (int i = 0; i < B; i++)
        labels[i] = (3 * i + 1) % K;
    float loss;
    int correct;
    assert_int_equal(dt_softmax_xent_forward(cpu, z, labels, p, rows, NULL,
                                             B, K, eps, &loss, &correct),
                     DT_OK);
    assert_int_equal(dt_softmax_xent_backward(cpu, p, labels, dz, B, K, eps),
                     DT_OK);
    for (int i = 0; i < B; i++) {
        /* the row's loss as softmax.cu computes it */
        const float *zi = z + i * K;
        int arg = 0;
        for (int j = 1; j < K; j++)
            if (zi[j] > zi[arg])
                arg = j;
        float max = zi[arg], sum = 0.0f, zsum = 0.0f;
        for (int j = 0; j < K; j++)
            sum += expf(zi[j] - max);
        if (eps > 0.0f)
            for (int j = 0; j < K; j++)
                zsum += zi[j];
        float row = dt_elem_xent_loss(logf(sum) + max, zi[labels[i]], zsum,
                                      K, eps);
        assert_memory_equal(&row, &rows[2 * i], sizeof row);
        for (int j = 0; j < K; j++) {
            float g = dt_elem_xent_grad(p[i * K + j], j, labels[i], K, eps,
                                        B);
            assert_memory_equal(&g, &dz[i * K + j], sizeof g);
        }
    }
    /* the targets are a distribution: (1 - eps) + K * eps/K = 1 */
    float total = 0.0f;
    for (int j = 0; j < K; j++)
        total += dt_elem_xent_target(j, 2, K, eps);
    assert_float_equal(total, 1.0f, 1e-6);
    dt_device_close(cpu);
}

/* bf16 rounding (the cuDNN copies under precision = bf16): against the
 * nearest of the two bf16 values around each float, ties to the even
 * one, computed in double; NaN stays NaN, infinities and the largest
 * finite values round as the format says. */
static void test_bf16_rounding(void **state)
{
    (void)state;
    uint64_t seed = 1;
    int checked = 0;
    for (int i = 0; i < 200000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(seed >> 32);
        if (i < 8) /* ties and edges first */
            u = (uint32_t[]){0x3f808000u, 0x3f818000u, 0x7f7fffffu,
                             0x80000000u, 0x00008000u, 0x7f800000u,
                             0xff800000u, 0x00018000u}[i];
        float f;
        memcpy(&f, &u, sizeof f);
        unsigned short h = dt_elem_to_bf16(f);
        float back = dt_elem_from_bf16(h);
        if (isnan(f)) {
            assert_true(isnan(back));
            continue;
        }
        uint32_t lo_bits = u & 0xffff0000u, hi_bits = lo_bits + 0x10000u;
        float lo, hi;
        memcpy(&lo, &lo_bits, sizeof lo);
        memcpy(&hi, &hi_bits, sizeof hi);
        if (isinf(f)) {
            assert_true(back == f);
            continue;
        }
        /* the distance to the bf16 above in magnitude, in exact steps:
         * one bf16 ulp of lo (2^(E - 134), subnormals 2^-133), even when
         * that neighbour is infinity (IEEE rounds past the largest
         * finite value plus half an ulp to infinity) */
        int e = (int)((lo_bits >> 23) & 0xff);
        double ulp = ldexp(1.0, (e ? e : 1) - 134);
        double dl = fabs((double)f - lo), dh = ulp - dl;
        float want = dl < dh ? lo : dh < dl ? hi : ((lo_bits >> 16) & 1) ? hi : lo;
        assert_true(memcmp(&back, &want, sizeof back) == 0);
        checked++;
    }
    assert_true(checked > 190000);
}

/* sync_bn's per-channel arithmetic against the definitions, in double:
 * the batch statistics from the sums S, Q over M values (biased variance
 * for normalizing, unbiased for the running one), dgamma = sum g xhat,
 * and dx = gamma invstd (g - mean g - xhat mean(g xhat)) through
 * dt_elem_bn_dx's folded coefficients. */
/* relu on stored bf16 (activations = bf16), all 65536 patterns: exactly
 * the float layer's x > 0 ? x : 0 on the widened value, rounded back; and
 * its gradient passes dy exactly where that output is positive. */
static void test_relu_bf16(void **state)
{
    (void)state;
    int positive = 0;
    for (unsigned h = 0; h < 65536; h++) {
        float v = dt_elem_from_bf16((unsigned short)h);
        unsigned short want = dt_elem_to_bf16(v > 0.0f ? v : 0.0f);
        unsigned short got = dt_elem_relu_bf16((unsigned short)h);
        assert_int_equal(got, want);
        float g = dt_elem_relu_grad_bf16(got, 1.5f);
        assert_true(g == (dt_elem_from_bf16(got) > 0.0f ? 1.5f : 0.0f));
        positive += g != 0.0f;
    }
    /* positive finite values and +inf: 0x0001..0x7f80 */
    assert_int_equal(positive, 0x7f80);
}

/* The residual add on stored bf16 (the widened values' float sum,
 * rounded as stored: the widened path's saxpy then to_bf16): properties
 * any correct bf16 add has, over every pattern. x + 0 is x (-0 + 0 is
 * +0, nan stays nan); the add commutes; x + x is 2x exactly (a power of
 * two scales the exponent only, short of overflow); and exact cases:
 * 1 + 1 = 2, 1 + (-1) = +0, ties to even, inf + -inf is a nan. */
static void test_add_bf16(void **state)
{
    (void)state;
    for (unsigned a = 0; a < 65536; a++) {
        unsigned short x = (unsigned short)a;
        float v = dt_elem_from_bf16(x);
        unsigned short z = dt_elem_add_bf16(x, 0x0000);
        if (v != v)
            assert_true(dt_elem_from_bf16(z) != dt_elem_from_bf16(z));
        else
            assert_int_equal(z, x == 0x8000 ? 0x0000 : x);
        for (unsigned b = a & 255; b < 65536; b += 4099) {
            unsigned short y = (unsigned short)b;
            unsigned short p = dt_elem_add_bf16(x, y),
                           q = dt_elem_add_bf16(y, x);
            if (dt_elem_from_bf16(p) == dt_elem_from_bf16(p))
                assert_int_equal(p, q);
        }
        if (v == v && fabsf(v) < 1e38f && fabsf(v) > 1e-37f)
            assert_true(dt_elem_from_bf16(dt_elem_add_bf16(x, x)) == 2 * v);
    }
    assert_int_equal(dt_elem_add_bf16(0x3f80, 0x3f80), 0x4000);
    assert_int_equal(dt_elem_add_bf16(0x3f80, 0xbf80), 0x0000);
    /* bf16's ulp at 1 is 2^-7: 1 + 2^-8 is a tie, to even (1); 1 +
     * 1.5 * 2^-7 is a tie between 1 + 2^-7 and 1 + 2^-6, to even */
    assert_int_equal(dt_elem_add_bf16(0x3f80, 0x3b80), 0x3f80);
    assert_int_equal(dt_elem_add_bf16(0x3f80, 0x3c40), 0x3f82);
    assert_int_equal(dt_elem_add_bf16(0x3f80, 0x3c00), 0x3f81); /* exact */
    unsigned short nan = dt_elem_add_bf16(0x7f80, 0xff80);
    assert_true((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
}

static void test_bn_channel(void **state)
{
    enum { M = 37 };
    double x[M], g[M], S = 0, Q = 0, sg = 0, sgx = 0;
    for (int i = 0; i < M; i++) {
        x[i] = 3.0 + sin(1.7 * i) * 2.5;
        g[i] = cos(0.9 * i) - 0.2;
        S += x[i], Q += x[i] * x[i], sg += g[i], sgx += g[i] * x[i];
    }
    double mu = S / M, var = 0;
    for (int i = 0; i < M; i++)
        var += (x[i] - mu) * (x[i] - mu) / M;
    float mean, invstd, rmean = 0.5f, rvar = 2.0f;
    double eps = 1e-5, mom = 0.1;
    dt_elem_bn_stats(S, Q, M, eps, mom, &mean, &invstd, &rmean, &rvar);
    assert_float_equal(mean, mu, 1e-6);
    assert_float_equal(invstd, 1.0 / sqrt(var + eps), 1e-5 * invstd);
    assert_float_equal(rmean, 0.9 * 0.5 + 0.1 * mu, 1e-6);
    assert_float_equal(rvar, 0.9 * 2.0 + 0.1 * var * M / (M - 1), 1e-5);
    double gxhat = dt_elem_bn_gxhat(sg, sgx, mean, invstd), want = 0;
    for (int i = 0; i < M; i++)
        want += g[i] * (x[i] - mean) * invstd;
    assert_float_equal(gxhat, want, 1e-5);
    float gamma = 1.3f, k, b, off;
    dt_elem_bn_dx_coef(sg, gxhat, M, mean, invstd, gamma, &k, &b, &off);
    for (int i = 0; i < M; i++) {
        double xh = (x[i] - mean) * invstd;
        double dx = gamma * invstd * (g[i] - sg / M - xh * gxhat / M);
        float got = dt_elem_bn_dx((float)g[i], (float)x[i], k, b, off);
        assert_float_equal(got, dx, 1e-5);
    }
}

static void test_xent_plain(void **state) { check_eps(0.0f); }
static void test_xent_smoothed(void **state) { check_eps(0.1f); }
static void test_xent_heavy(void **state) { check_eps(0.5f); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_relu_bf16),
        cmocka_unit_test(test_add_bf16),
        cmocka_unit_test(test_bn_channel),
        cmocka_unit_test(test_xent_plain),
        cmocka_unit_test(test_xent_smoothed),
        cmocka_unit_test(test_xent_heavy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
