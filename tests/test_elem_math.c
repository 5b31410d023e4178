/* test_elem_math.c — the per-element arithmetic of dt's own CUDA kernels
 * (core/cuda/elem_math.h), compiled here by the C compiler and run on the
 * CPU against the CPU layers: the smoothed softmax cross-entropy's loss
 * rows and gradient must be the CPU's bit for bit (the same operations in
 * the same order). The residual add has no kernel of dt's own (cuBLAS
 * saxpy; its backward is a copy), so nothing of it is here. Needs no GPU
 * and no CUDA. */
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

static void test_xent_plain(void **state) { check_eps(0.0f); }
static void test_xent_smoothed(void **state) { check_eps(0.1f); }
static void test_xent_heavy(void **state) { check_eps(0.5f); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xent_plain),
        cmocka_unit_test(test_xent_smoothed),
        cmocka_unit_test(test_xent_heavy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
