/* test_nn_cuda.c — the CUDA layers against the CPU ones: the same model
 * and seed on both devices must give the same loss, logits and gradients
 * within float tolerance. Skipped (exit 77) without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "nn_testutil.h"

#define BATCH 8

static void compare(const char *layers, int c, int h, int w)
{
    dt_device_t *gpu = NULL;
    dt_model_t *mc = NULL, *mg = NULL;
    assert_int_equal(dt_device_open("cuda", 0, 1, &gpu), DT_OK);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mc, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mg, NULL), 0);
    assert_int_equal(dt_model_init(mc, NULL, 3), DT_OK);
    assert_int_equal(dt_model_init(mg, gpu, 3), DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(mc);
    float *x = malloc(in * sizeof *x), *gg = malloc(n * sizeof *gg);
    float *pg = malloc(n * sizeof *pg);
    int y[BATCH];
    assert_non_null(x);
    assert_non_null(gg);
    assert_non_null(pg);
    fill_random(x, in, 99);
    for (int i = 0; i < BATCH; i++)
        y[i] = (i * 7) % 10;
    float *pc, *gc, *pd, *gd;
    assert_int_equal(dt_model_params(mc, &pc, &gc, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pd, &gd, NULL), DT_OK);
    assert_int_equal(dt_device_copy(gpu, pg, DT_MEM_HOST, pd, DT_MEM_CUDA,
                                    n * sizeof *pg), DT_OK);
    assert_memory_equal(pc, pg, n * sizeof *pg); /* same init everywhere */
    float lc, lg;
    int cc, cg;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 1, &lc, &cc), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 1, &lg, &cg), DT_OK);
    assert_float_equal(lc, lg, 1e-4);
    assert_int_equal(cc, cg);
    assert_int_equal(dt_model_backward(mc, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mg, NULL, NULL), DT_OK);
    assert_int_equal(dt_device_copy(gpu, gg, DT_MEM_HOST, gd, DT_MEM_CUDA,
                                    n * sizeof *gg), DT_OK);
    double maxerr = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(gc[i] - gg[i]) / (1e-3 + fabs(gc[i]));
        if (e > maxerr)
            maxerr = e;
    }
    fprintf(stderr, "%s: loss cpu %.6f cuda %.6f, max rel grad diff %.2g\n",
            layers, lc, lg, maxerr);
    assert_true(maxerr < 1e-2);
    free(x);
    free(gg);
    free(pg);
    dt_model_free(mc);
    dt_model_free(mg);
    dt_device_close(gpu);
}

static void test_mlp(void **state)
{
    compare("flatten linear(64) relu dropout(0.3) linear(10)", 1, 8, 8);
}

static void test_cnn(void **state)
{
    compare("conv(8,3,pad=1) relu maxpool(2) conv(16,3,stride=2,pad=1) relu "
            "maxpool(3,stride=1) flatten linear(32) relu linear(10)", 3, 16,
            16);
}

int main(void)
{
    if (dt_cuda_device_count() == 0) {
        printf("SKIP: no CUDA GPU visible (or dt built without CUDA): the "
               "CUDA layers were not compared with the CPU ones\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_cnn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
