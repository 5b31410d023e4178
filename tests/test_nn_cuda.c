/* test_nn_cuda.c — the CUDA layers against the CPU ones: the same model
 * and seed on both devices must give the same loss, logits and gradients
 * within float tolerance. Skipped (exit 77) without a GPU.
 *
 * Tolerance, per element: |cpu - cuda| <= rtol |cpu| + atol max|cpu|. The
 * floor scales with the largest value because float32 sums lose bits
 * relative to the terms summed, not to a small result. On the CPU, the
 * CNN below computed in two summation orders (im2col, winograd) uses 1/40
 * of this tolerance in its gradients and 1/60 in its logits: room for the
 * GPU's own orders. (The old check, 1e-2 of 1e-3 + |cpu|, let a gradient
 * under 1e-5 be off by 1e-5: by all of itself.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "nn_testutil.h"

#define BATCH 8
#define RTOL 1e-3
#define ATOL_OF_MAX 4e-6

/* The largest |cpu - cuda| / (RTOL |cpu| + ATOL_OF_MAX max|cpu|): below 1
 * when every element is within tolerance. *at: where it is. */
static double worst_ratio(const float *cpu, const float *gpu, size_t n,
                          size_t *at)
{
    double big = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        big = fmax(big, fabs(cpu[i]));
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = RTOL * fabs(cpu[i]) + ATOL_OF_MAX * big;
        double r = fabs((double)cpu[i] - gpu[i]) / (tol > 0 ? tol : 1e-30);
        if (!(r <= worst)) { /* NaN counts as worst */
            worst = r;
            *at = i;
        }
    }
    return worst;
}

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
    assert_float_equal(lc, lg, 1e-5 * (1 + fabs(lc)));
    assert_int_equal(cc, cg);
    /* the logits themselves, not only the loss they average into */
    const dt_tensor_t *oc = dt_model_output(mc), *og = dt_model_output(mg);
    assert_non_null(oc);
    assert_non_null(og);
    assert_int_equal(oc->numel, (size_t)BATCH * 10);
    assert_int_equal(og->numel, oc->numel);
    assert_int_equal(oc->mem, DT_MEM_HOST);
    assert_int_equal(og->mem, DT_MEM_CUDA);
    float *logits = malloc(og->numel * sizeof *logits);
    assert_non_null(logits);
    assert_int_equal(dt_device_copy(gpu, logits, DT_MEM_HOST, og->data,
                                    DT_MEM_CUDA, og->numel * sizeof *logits),
                     DT_OK);
    size_t li, gi;
    double lw = worst_ratio(oc->data, logits, oc->numel, &li);
    assert_int_equal(dt_model_backward(mc, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mg, NULL, NULL), DT_OK);
    assert_int_equal(dt_device_copy(gpu, gg, DT_MEM_HOST, gd, DT_MEM_CUDA,
                                    n * sizeof *gg), DT_OK);
    double gw = worst_ratio(gc, gg, n, &gi);
    fprintf(stderr,
            "%s: loss cpu %.7f cuda %.7f; worst difference / tolerance: "
            "logits %.2g (element %zu: %.7g vs %.7g), gradients %.2g "
            "(parameter %zu: %.7g vs %.7g)\n",
            layers, lc, lg, lw, li, oc->data[li], logits[li], gw, gi,
            gc[gi], gg[gi]);
    assert_true(lw < 1);
    assert_true(gw < 1);
    free(logits);
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
