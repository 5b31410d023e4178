/* test_nn_standin.c — the CUDA code path of the model and its layers,
 * without a GPU: the STAND-IN backend (fixtures/fixture_cuda_backend.c,
 * loaded through DT_PLUGIN_PATH) keeps "device memory" in host memory and
 * computes its layer entries with plain CPU loops
 * (fixtures/fixture_cuda_layers.c). A model on a stand-in CUDA device
 * must then train as the same model on the CPU does: what this checks is
 * everything dt itself does on CUDA — which entries the layers call with
 * which shapes and buffers (batchnorm's running statistics in l->buf, its
 * saved mean and invstd in the scratch, a dx nobody wants), the residual
 * add and the gradient sums at a branch through the backend, label
 * smoothing handed to the softmax entries. Not the kernels or cuDNN
 * (test_nn_cuda, on a GPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dt/device.h>
#include "cuda/backend.h"
#include "nn/model.h"
#include "nn_testutil.h"

#define BATCH 4

static dt_device_t standin_dev = {.kind = DT_DEVICE_CUDA,
                                  .mem = DT_MEM_CUDA,
                                  .ordinal = 0,
                                  .name = "cuda:0 (stand-in)"};

static int setup(void **state)
{
    (void)state;
    const char *b = getenv("top_builddir");
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/standin_cuda/.libs",
             b ? b : "..");
    setenv("DT_PLUGIN_PATH", dir, 1);
    char why[512] = "";
    if (dt_gpu_available(why, sizeof why) != 1) {
        fprintf(stderr, "stand-in backend not loaded: %s\n", why);
        return -1;
    }
    const dt_cuda_backend_t *be = dt_cuda_backend_loaded();
    if (!be || !strstr(be->built_with, "stand-in"))
        return -1;
    return 0;
}

/* max |a - b| / (1e-5 + max |a|) */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double big = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++)
        big = fmax(big, fabs(a[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= worst))
            worst = d;
    }
    return worst / (1e-5 + big);
}

/* Returns how many relus ran in place on the stand-in (layer.h
 * inplace: their output is their input's buffer). */
static int compare(const char *layers, int c, int h, int w, float smoothing)
{
    dt_model_t *mc = NULL, *mg = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mc, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mg, NULL), 0);
    assert_int_equal(dt_model_set_label_smoothing(mc, smoothing), DT_OK);
    assert_int_equal(dt_model_set_label_smoothing(mg, smoothing), DT_OK);
    assert_int_equal(dt_model_init(mc, NULL, 5), DT_OK);
    assert_int_equal(dt_model_init(mg, &standin_dev, 5), DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(mc);
    float *x = malloc(in * sizeof *x);
    assert_non_null(x);
    fill_random(x, in, 17);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (3 * i + 1) % 10;
    float *pc, *gc, *pg, *gg, *bc = NULL, *bg = NULL;
    size_t nb = 0, nbg = 0;
    assert_int_equal(dt_model_params(mc, &pc, &gc, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pg, &gg, NULL), DT_OK);
    assert_memory_equal(pc, pg, n * sizeof *pc);
    /* two steps: the second forward normalizes with moved statistics
     * only in eval, so train, backward, then an eval forward */
    float lc, lg;
    int cc, cg;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 1, &lc, &cc), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 1, &lg, &cg), DT_OK);
    assert_int_equal(dt_model_backward(mc, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mg, NULL, NULL), DT_OK);
    double dl = fabs(lc - lg) / (1e-6 + fabs(lc));
    double dg = rel_diff(gc, gg, n);
    assert_int_equal(dt_model_buffers(mc, &bc, &nb), DT_OK);
    assert_int_equal(dt_model_buffers(mg, &bg, &nbg), DT_OK);
    assert_int_equal(nb, nbg);
    double db = nb ? rel_diff(bc, bg, nb) : 0.0;
    float ec, eg;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 0, &ec, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 0, &eg, NULL), DT_OK);
    double de = fabs(ec - eg) / (1e-6 + fabs(ec));
    fprintf(stderr, "%s (smoothing %g): loss %.7f vs %.7f (%.2g), "
            "gradients %.2g, running statistics %.2g, eval loss %.2g\n",
            layers, (double)smoothing, lc, lg, dl, dg, db, de);
    assert_true(dl < 1e-5);
    assert_int_equal(cc, cg);
    assert_true(dg < 1e-4);
    assert_true(db < 1e-5);
    assert_true(de < 1e-5);
    int inplace = 0;
    for (int i = 0; i < mg->nlayers; i++)
        if (mg->layers[i].inplace) {
            assert_ptr_equal(mg->acts[i + 1], mg->acts[i]);
            inplace++;
        }
    free(x);
    dt_model_free(mc);
    dt_model_free(mg);
    return inplace;
}

/* sync_bn with a made-up second rank (nn_testutil.h's
 * test_test_synthetic_rank): the CUDA path on the stand-in against the CPU
 * layer given the same rank; and the rank must change the result. */
static void test_sync_bn(void **state)
{
    (void)state;
    const char *layers = "conv(3,3,pad=1,bias=no) batchnorm relu flatten "
                         "linear(6) batchnorm relu linear(10)";
    dt_model_t *mc = NULL, *mg = NULL, *mp = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, 2, 4, 4, 10, &mc, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, 2, 4, 4, 10, &mg, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, 2, 4, 4, 10, &mp, NULL), 0);
    assert_int_equal(dt_model_init(mc, NULL, 5), DT_OK);
    assert_int_equal(dt_model_init(mg, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_init(mp, NULL, 5), DT_OK);
    dt_model_set_sync_bn(mc, test_synthetic_rank, NULL);
    dt_model_set_sync_bn(mg, test_synthetic_rank, NULL);
    size_t in = (size_t)BATCH * 2 * 4 * 4, n = dt_model_nparams(mc);
    float *x = malloc(in * sizeof *x);
    assert_non_null(x);
    fill_random(x, in, 23);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (5 * i + 2) % 10;
    float *pc, *gc, *pg, *gg, *pp, *gp, *bc, *bg, *bp;
    size_t nb, nbg, nbp;
    assert_int_equal(dt_model_params(mc, &pc, &gc, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pg, &gg, NULL), DT_OK);
    assert_int_equal(dt_model_params(mp, &pp, &gp, NULL), DT_OK);
    float lc, lg, lp;
    test_synthetic_calls = 0;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 1, &lc, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mc, NULL, NULL), DT_OK);
    int cpu_calls = test_synthetic_calls;
    test_synthetic_calls = 0;
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 1, &lg, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mg, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mp, x, y, BATCH, 1, &lp, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mp, NULL, NULL), DT_OK);
    /* 2 layers x (forward + backward) on both paths */
    assert_int_equal(cpu_calls, 4);
    assert_int_equal(test_synthetic_calls, 4);
    assert_int_equal(dt_model_buffers(mc, &bc, &nb), DT_OK);
    assert_int_equal(dt_model_buffers(mg, &bg, &nbg), DT_OK);
    assert_int_equal(dt_model_buffers(mp, &bp, &nbp), DT_OK);
    double dl = fabs(lc - lg) / (1e-6 + fabs(lc));
    double dg = rel_diff(gc, gg, n), db = rel_diff(bc, bg, nb);
    double own = rel_diff(gc, gp, n), ownb = rel_diff(bc, bp, nb);
    float ec, eg;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 0, &ec, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 0, &eg, NULL), DT_OK);
    double de = fabs(ec - eg) / (1e-6 + fabs(ec));
    fprintf(stderr, "sync_bn with a made-up second rank: loss %.7f vs "
            "%.7f (%.2g), gradients %.2g, running statistics %.2g, eval "
            "loss %.2g; against this rank's statistics alone: gradients "
            "%.2g, running statistics %.2g\n", lc, lg, dl, dg, db, de, own,
            ownb);
    assert_true(dl < 1e-5);
    assert_true(dg < 1e-4);
    assert_true(db < 1e-5);
    assert_true(de < 1e-5);
    /* and the made-up rank did change something */
    assert_true(own > 1e-3);
    assert_true(ownb > 1e-3);
    free(x);
    dt_model_free(mc);
    dt_model_free(mg);
    dt_model_free(mp);
}

static void test_resnet_block(void **state)
{
    (void)state;
    /* the stem's relu and each block's two: in place; none reads a
     * block's input (a branch point) */
    assert_int_equal(
        compare("conv(4,3,pad=1,bias=no) batchnorm relu "
                "stage(basic,4,1,stride=2) stage(basic,4,1) gap flatten "
                "linear(10)", 2, 6, 6, 0.0f), 5);
}

static void test_first_batchnorm_avgpool_flat(void **state)
{
    (void)state;
    compare("batchnorm conv(3,3,pad=1) relu avgpool(2) flatten linear(8) "
            "batchnorm relu linear(10)", 2, 6, 6, 0.0f);
}

static void test_label_smoothing(void **state)
{
    (void)state;
    compare("conv(3,3,stride=2,pad=1) relu flatten linear(10)", 1, 6, 6,
            0.1f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet_block),
        cmocka_unit_test(test_first_batchnorm_avgpool_flat),
        cmocka_unit_test(test_label_smoothing),
        cmocka_unit_test(test_sync_bn),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
