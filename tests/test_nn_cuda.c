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
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cuda/backend.h"
#include "nn/model.h"
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

/* The worst ratio of n floats of device memory against the cpu's; what
 * is printed names them. */
static double worst_dev(dt_device_t *gpu, const float *cpu, const float *dev,
                        size_t n, const char *what, const char *layers)
{
    float *host = malloc((n ? n : 1) * sizeof *host);
    assert_non_null(host);
    assert_int_equal(dt_device_copy(gpu, host, DT_MEM_HOST, dev, DT_MEM_CUDA,
                                    n * sizeof *host), DT_OK);
    size_t at;
    double w = worst_ratio(cpu, host, n, &at);
    fprintf(stderr, "%s: worst difference / tolerance: %s %.2g (element %zu: "
            "%.7g vs %.7g)\n", layers, what, w, at, n ? cpu[at] : 0.0,
            n ? host[at] : 0.0);
    free(host);
    return w;
}

typedef struct opts {
    float smoothing; /* label smoothing eps                              */
    int eval;        /* after the training step, an eval forward as well:
                        the running statistics (buffers) and its logits  */
    int sync_bn;     /* sync_bn on both, with the same made-up second rank
                        (nn_testutil.h): core/cuda/bn_sync.cu's kernels  */
    int batch;       /* samples in the step; 0: BATCH                    */
} opts_t;

static void compare_with(const char *layers, int c, int h, int w,
                         const opts_t *o)
{
    dt_device_t *gpu = NULL;
    dt_model_t *mc = NULL, *mg = NULL;
    assert_int_equal(dt_device_open("cuda", 0, 1, &gpu), DT_OK);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mc, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mg, NULL), 0);
    if (o->smoothing > 0.0f) {
        assert_int_equal(dt_model_set_label_smoothing(mc, o->smoothing),
                         DT_OK);
        assert_int_equal(dt_model_set_label_smoothing(mg, o->smoothing),
                         DT_OK);
    }
    assert_int_equal(dt_model_init(mc, NULL, 3), DT_OK);
    assert_int_equal(dt_model_init(mg, gpu, 3), DT_OK);
    if (o->sync_bn) {
        dt_model_set_sync_bn(mc, test_synthetic_rank, NULL);
        dt_model_set_sync_bn(mg, test_synthetic_rank, NULL);
    }
    const int B = o->batch ? o->batch : BATCH;
    size_t in = (size_t)B * c * h * w, n = dt_model_nparams(mc);
    float *x = malloc(in * sizeof *x), *gg = malloc(n * sizeof *gg);
    float *pg = malloc(n * sizeof *pg);
    int y[BATCH];
    assert_non_null(x);
    assert_non_null(gg);
    assert_non_null(pg);
    fill_random(x, in, 99);
    for (int i = 0; i < B; i++)
        y[i] = (i * 7) % 10;
    float *pc, *gc, *pd, *gd;
    assert_int_equal(dt_model_params(mc, &pc, &gc, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pd, &gd, NULL), DT_OK);
    assert_int_equal(dt_device_copy(gpu, pg, DT_MEM_HOST, pd, DT_MEM_CUDA,
                                    n * sizeof *pg), DT_OK);
    assert_memory_equal(pc, pg, n * sizeof *pg); /* same init everywhere */
    float lc, lg;
    int cc, cg;
    assert_int_equal(dt_model_forward(mc, x, y, B, 1, &lc, &cc), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, B, 1, &lg, &cg), DT_OK);
    assert_float_equal(lc, lg, 1e-5 * (1 + fabs(lc)));
    assert_int_equal(cc, cg);
    /* the logits themselves, not only the loss they average into */
    const dt_tensor_t *oc = dt_model_output(mc), *og = dt_model_output(mg);
    assert_non_null(oc);
    assert_non_null(og);
    assert_int_equal(oc->numel, (size_t)B * 10);
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
    if (o->eval) {
        /* batchnorm's running statistics after the step (the model's
         * buffers, on the device), then an eval forward that uses them */
        float *bc, *bd;
        size_t nb, nbd;
        assert_int_equal(dt_model_buffers(mc, &bc, &nb), DT_OK);
        assert_int_equal(dt_model_buffers(mg, &bd, &nbd), DT_OK);
        assert_int_equal(nb, nbd);
        assert_true(nb > 0);
        assert_true(worst_dev(gpu, bc, bd, nb, "running statistics",
                              layers) < 1);
        assert_int_equal(dt_model_forward(mc, x, y, B, 0, &lc, &cc),
                         DT_OK);
        assert_int_equal(dt_model_forward(mg, x, y, B, 0, &lg, &cg),
                         DT_OK);
        assert_float_equal(lc, lg, 1e-5 * (1 + fabs(lc)));
        oc = dt_model_output(mc);
        og = dt_model_output(mg);
        assert_true(worst_dev(gpu, oc->data, og->data, oc->numel,
                              "eval logits", layers) < 1);
    }
    free(logits);
    free(x);
    free(gg);
    free(pg);
    dt_model_free(mc);
    dt_model_free(mg);
    dt_device_close(gpu);
}

static void compare(const char *layers, int c, int h, int w)
{
    const opts_t o = {0.0f, 0, 0, 0};
    compare_with(layers, c, h, w, &o);
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

/* cuDNN convolutions: strided, without bias (bias=no: no parameters and
 * no cudnnAddTensor), a 1x1 projection. */
static void test_conv_strided_nobias(void **state)
{
    compare("conv(8,3,stride=2,pad=1,bias=no) relu conv(8,3,pad=1) relu "
            "conv(4,1,stride=2,bias=no) flatten linear(10)", 3, 16, 16);
}

/* batchnorm through cuDNN: spatial (after a conv) and per-activation (a
 * flat input), train then eval with the running statistics. */
static void test_batchnorm(void **state)
{
    const opts_t o = {0.0f, 1, 0, 0};
    compare_with("conv(8,3,pad=1,bias=no) batchnorm relu flatten linear(16) "
                 "batchnorm relu linear(10)", 3, 8, 8, &o);
}

/* batchnorm as the first layer with parameters: its dx is not wanted,
 * but cuDNN writes one (the backend's spare block). */
static void test_batchnorm_first(void **state)
{
    const opts_t o = {0.0f, 1, 0, 0};
    compare_with("batchnorm conv(4,3) relu flatten linear(10)", 2, 6, 6, &o);
}

/* One value per channel in training (a batch of one through a flat
 * batchnorm: cuDNN's per-activation mode at n = 1): no variance to learn,
 * the running statistics stay as they were (finite: an unbiased variance
 * at n = 1 is NaN, and cuDNN at factor 0 still multiplied it in), and
 * the eval forward after it matches the cpu's. */
static void test_batchnorm_one_per_channel(void **state)
{
    const opts_t o = {0.0f, 1, 0, 1};
    compare_with("flatten linear(16) batchnorm relu linear(10)", 1, 4, 4, &o);
}

/* average pooling and global average pooling (cuDNN pooling) */
static void test_avgpool_gap(void **state)
{
    compare("conv(8,3,pad=1) relu avgpool(2) conv(8,3,pad=1) relu gap "
            "flatten linear(10)", 3, 12, 12);
}

/* the residual join (cuBLAS add) and the gradient sums of a branch, in a
 * small ResNet: one basic block with a stride-2 projection shortcut */
static void test_resnet_block(void **state)
{
    const opts_t o = {0.0f, 1, 0, 0};
    compare_with("conv(8,3,pad=1,bias=no) batchnorm relu "
                 "stage(basic,8,1,stride=2) gap flatten linear(10)", 3, 8,
                 8, &o);
}

/* an identity shortcut (no projection) and two blocks in a row */
static void test_resnet_identity(void **state)
{
    compare("conv(8,3,pad=1,bias=no) batchnorm relu stage(basic,8,2) gap "
            "flatten linear(10)", 3, 8, 8);
}

/* sync_bn: the per-channel sums, normalization and input gradient of
 * core/cuda/bn_sync.cu against the CPU layer, both given the same
 * made-up second rank; the eval forward after it is cuDNN's, from the
 * running statistics the synchronized step left */
static void test_sync_bn(void **state)
{
    const opts_t o = {0.0f, 1, 1, 0};
    compare_with("conv(8,3,pad=1,bias=no) batchnorm relu "
                 "stage(basic,8,1,stride=2) gap flatten linear(16) batchnorm "
                 "relu linear(10)", 3, 8, 8, &o);
}

/* ||cuda - cpu|| / ||cpu|| of the eval logits with [train] precision p on
 * the GPU (the backend's set_precision, as the trainer sets it). */
/* One precision mode against the CPU: the logits of an eval forward and
 * the parameter gradients of a training step, each as a relative error
 * ||cuda - cpu|| / ||cpu||. */
typedef struct mode_err {
    double logits, grads;
} mode_err_t;

static double rel_norm(const float *ref, const float *got, size_t n)
{
    double d2 = 0.0, r2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];
        d2 += d * d;
        r2 += (double)ref[i] * ref[i];
    }
    return sqrt(d2 / (r2 > 0 ? r2 : 1e-30)); /* nan stays nan */
}

static mode_err_t mode_error(const char *layers, int c, int h, int w, int p)
{
    dt_device_t *gpu = NULL;
    dt_model_t *mc = NULL, *mg = NULL;
    assert_int_equal(dt_device_open("cuda", 0, 1, &gpu), DT_OK);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mc, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mg, NULL), 0);
    assert_int_equal(dt_model_init(mc, NULL, 4), DT_OK);
    assert_int_equal(dt_model_init(mg, gpu, 4), DT_OK);
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    assert_int_equal(cu->set_precision(gpu, p), DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(mc);
    float *x = malloc(in * sizeof *x), lc, lg;
    float *gg = malloc(n * sizeof *gg);
    assert_non_null(x);
    assert_non_null(gg);
    fill_random(x, in, 7);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (3 * i + 1) % 10;
    mode_err_t e;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 0, &lc, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 0, &lg, NULL), DT_OK);
    const dt_tensor_t *oc = dt_model_output(mc), *og = dt_model_output(mg);
    float *got = malloc(og->numel * sizeof *got);
    assert_non_null(got);
    assert_int_equal(dt_device_copy(gpu, got, DT_MEM_HOST, og->data,
                                    DT_MEM_CUDA, og->numel * sizeof *got),
                     DT_OK);
    e.logits = rel_norm(oc->data, got, oc->numel);
    /* a training step: the convolutions' backward (dy, dw, dx, the bias
     * gradient) in the mode */
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 1, &lc, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 1, &lg, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mc, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mg, NULL, NULL), DT_OK);
    float *pc, *gc, *pd, *gd;
    assert_int_equal(dt_model_params(mc, &pc, &gc, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pd, &gd, NULL), DT_OK);
    assert_int_equal(dt_device_copy(gpu, gg, DT_MEM_HOST, gd, DT_MEM_CUDA,
                                    n * sizeof *gg), DT_OK);
    e.grads = rel_norm(gc, gg, n);
    assert_int_equal(cu->set_precision(gpu, DT_PRECISION_FP32), DT_OK);
    free(x);
    free(gg);
    free(got);
    dt_model_free(mc);
    dt_model_free(mg);
    dt_device_close(gpu);
    return e;
}

/* What [train] precision really computes on the GPU. The first H200 run
 * (2026-11-26) gave bit-identical losses for bf16 and fp16 on the CNN
 * example: cuDNN's CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION picks the 16-bit
 * type itself. Now dt rounds a bf16 convolution's x, w and dy to bf16
 * itself, so bf16's error has a floor: the logits' and the gradients'
 * relative error against the CPU must sit in its band (about 2^-8; a
 * bf16 that is really fp16 or fp32 fails the floor). fp32 sits at float
 * rounding (under 1e-4: the CPU side runs Winograd, ~1e-5 off im2col).
 * tf32 and fp16 only ALLOW the libraries to round (cuBLAS FAST_TF32 /
 * FAST_16F, cuDNN's tensor-op math): whether they do for a shape is the
 * libraries' choice, so only their ceiling is held. The second model has
 * biased convolutions (the bias gradient in bf16). An MLP's small GEMMs
 * are printed, not held to a band: cuBLAS may keep them off tensor
 * cores. */
static void test_precision_modes(void **state)
{
    (void)state;
    const char *conv[] = {"conv(64,3,pad=1,bias=no) conv(64,3,pad=1,bias=no) "
                          "gap flatten linear(10)",
                          "conv(64,3,pad=1) relu conv(64,3,pad=1) gap flatten "
                          "linear(10)"};
    const char *mlp = "flatten linear(256) relu linear(10)";
    const char *name[] = {"fp32", "bf16", "fp16", "tf32"};
    double lo[] = {0.0, 1e-3, 0.0, 0.0}, hi[] = {1e-4, 3e-2, 5e-3, 5e-3};
    double glo[] = {0.0, 5e-4, 0.0, 0.0}, ghi[] = {1e-4, 5e-2, 1e-2, 1e-2};
    mode_err_t e[2][4];
    for (int p = 0; p < 4; p++) {
        mode_err_t em = mode_error(mlp, 1, 16, 16, p);
        for (int k = 0; k < 2; k++) {
            e[k][p] = mode_error(conv[k], 16, 16, 16, p);
            fprintf(stderr, "precision %s, conv model %d: logits relative "
                    "error %.2g (band %.0e..%.0e), gradients %.2g (band "
                    "%.0e..%.0e)\n", name[p], k, e[k][p].logits, lo[p],
                    hi[p], e[k][p].grads, glo[p], ghi[p]);
        }
        fprintf(stderr, "precision %s, mlp: logits %.2g, gradients %.2g\n",
                name[p], em.logits, em.grads);
    }
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 4; p++) {
            assert_true(e[k][p].logits >= lo[p]);
            assert_true(e[k][p].logits <= hi[p]);
            assert_true(e[k][p].grads >= glo[p]);
            assert_true(e[k][p].grads <= ghi[p]);
        }
}

/* [train] activations = bf16 on the GPU (model_act16.c through the
 * backend's to_bf16/from_bf16 kernels): the same model stored float32 and
 * bf16, one training step and an eval forward each, in one precision. The loss and the
 * gradients must be float32's up to bf16 rounding of the stored
 * activations (as the stand-in measured for this model: loss 4e-4,
 * gradients 4e-2 of the largest, at batch 4) and not equal (the rounding
 * happened). A wrong buffer or size shows as garbage, far outside. */
static void act16_precision(int precision)
{
    const char *layers = "conv(8,3,pad=1,bias=no) batchnorm relu "
                         "stage(basic,8,1) stage(basic,16,1,stride=2) "
                         "avgpool(2) gap flatten linear(10)";
    const int c = 3, h = 8, w = 8;
    dt_device_t *gpu = NULL;
    dt_model_t *m32 = NULL, *m16 = NULL;
    assert_int_equal(dt_device_open("cuda", 0, 1, &gpu), DT_OK);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m32, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m16, NULL), 0);
    assert_int_equal(dt_model_set_activations(m16, DT_ACTIVATIONS_BF16),
                     DT_OK);
    assert_int_equal(dt_model_init(m32, gpu, 5), DT_OK);
    assert_int_equal(dt_model_init(m16, gpu, 5), DT_OK);
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    assert_int_equal(cu->set_precision(gpu, precision), DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(m32);
    float *x = malloc(in * sizeof *x), *g32 = malloc(n * sizeof *g32),
          *g16 = malloc(n * sizeof *g16);
    assert_non_null(x);
    assert_non_null(g32);
    assert_non_null(g16);
    fill_random(x, in, 31);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (7 * i + 3) % 10;
    float l32, l16, e32, e16, *p, *gd;
    assert_int_equal(dt_model_forward(m32, x, y, BATCH, 1, &l32, NULL), DT_OK);
    assert_int_equal(dt_model_forward(m16, x, y, BATCH, 1, &l16, NULL), DT_OK);
    assert_int_equal(dt_model_backward(m32, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_backward(m16, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_params(m32, &p, &gd, NULL), DT_OK);
    assert_int_equal(dt_device_copy(gpu, g32, DT_MEM_HOST, gd, DT_MEM_CUDA,
                                    n * sizeof *g32), DT_OK);
    assert_int_equal(dt_model_params(m16, &p, &gd, NULL), DT_OK);
    assert_int_equal(dt_device_copy(gpu, g16, DT_MEM_HOST, gd, DT_MEM_CUDA,
                                    n * sizeof *g16), DT_OK);
    double big = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(g32[i]));
        double d = fabs((double)g32[i] - g16[i]);
        if (!(d <= worst))
            worst = d; /* a nan makes worst nan: fails below */
    }
    double dg = worst / (1e-12 + big), dl = fabs(l32 - l16) / fabs(l32);
    assert_int_equal(dt_model_forward(m32, x, y, BATCH, 0, &e32, NULL), DT_OK);
    assert_int_equal(dt_model_forward(m16, x, y, BATCH, 0, &e16, NULL), DT_OK);
    double de = fabs(e32 - e16) / fabs(e32);
    assert_int_equal(cu->set_precision(gpu, DT_PRECISION_FP32), DT_OK);
    fprintf(stderr, "activations bf16 vs float32 on the GPU, precision %d: "
            "loss %.7f vs %.7f (%.2g), gradients %.2g of the largest, eval "
            "loss %.2g\n", precision, l32, l16, dl, dg, de);
    assert_true(dl > 0.0 && dl < 1e-2);
    assert_true(dg > 1e-6 && dg < 0.1);
    assert_true(de < 1e-2);
    free(x);
    free(g32);
    free(g16);
    dt_model_free(m32);
    dt_model_free(m16);
    dt_device_close(gpu);
}

/* fp32: every layer on widened copies; bf16: the convolutions read and
 * write the stored bf16 as it is (cudnn_conv.c x16/y16) and the float32
 * storage side rounds only the convolutions' inputs */
static void test_activations_bf16(void **state)
{
    (void)state;
    act16_precision(DT_PRECISION_FP32);
    act16_precision(DT_PRECISION_BF16);
}

/* label smoothing in the softmax cross-entropy kernels */
static void test_label_smoothing(void **state)
{
    const opts_t o = {0.1f, 0, 0, 0};
    compare_with("flatten linear(64) relu linear(10)", 1, 8, 8, &o);
}

/* [train] cuda_graphs on a real GPU: the same model trained 8 steps
 * eagerly and captured (two warm-up steps, the capture, launches), with
 * an SGD step on the device between: the losses and parameters must be
 * the eager ones (the same kernels on the same data; cuDNN's atomics may
 * reorder a sum, so within 1e-5 rather than bit for bit), in fp32 and in
 * bf16 with bf16 activations (stored-bf16 convs, widening kernels). */
static void graphs_vs_eager(int precision)
{
    const char *layers = "conv(8,3,pad=1,bias=no) batchnorm relu "
                         "stage(basic,8,1) stage(basic,16,1,stride=2) "
                         "gap flatten linear(10)";
    const int c = 3, h = 8, w = 8, steps = 8;
    dt_device_t *gpu = NULL;
    dt_model_t *me = NULL, *mg = NULL;
    assert_int_equal(dt_device_open("cuda", 0, 1, &gpu), DT_OK);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &me, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mg, NULL), 0);
    if (precision == DT_PRECISION_BF16) {
        assert_int_equal(dt_model_set_activations(me, DT_ACTIVATIONS_BF16),
                         DT_OK);
        assert_int_equal(dt_model_set_activations(mg, DT_ACTIVATIONS_BF16),
                         DT_OK);
    }
    assert_int_equal(dt_model_init(me, gpu, 5), DT_OK);
    assert_int_equal(dt_model_init(mg, gpu, 5), DT_OK);
    assert_int_equal(dt_model_set_cuda_graphs(mg, DT_CUDA_GRAPHS_ON), DT_OK);
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    assert_int_equal(cu->set_precision(gpu, precision), DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(me);
    float *x = malloc(in * sizeof *x), *pe_h = malloc(n * sizeof *pe_h),
          *pg_h = malloc(n * sizeof *pg_h), *pe, *ge, *pg, *gg;
    assert_non_null(x);
    assert_non_null(pe_h);
    assert_non_null(pg_h);
    assert_int_equal(dt_model_params(me, &pe, &ge, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pg, &gg, NULL), DT_OK);
    int y[BATCH];
    double worst_loss = 0.0;
    for (int s = 0; s < steps; s++) {
        fill_random(x, in, 40 + (uint64_t)s);
        for (int i = 0; i < BATCH; i++)
            y[i] = (7 * i + s) % 10;
        float le, lg;
        assert_int_equal(dt_model_train_step(me, x, y, BATCH, &le, NULL,
                                             NULL), DT_OK);
        assert_int_equal(dt_model_train_step(mg, x, y, BATCH, &lg, NULL,
                                             NULL), DT_OK);
        assert_int_equal(cu->sgd_step(gpu->stream, pe, ge, NULL, n, 0.1f,
                                      0.0f, 0.0f, 0), DT_OK);
        assert_int_equal(cu->sgd_step(gpu->stream, pg, gg, NULL, n, 0.1f,
                                      0.0f, 0.0f, 0), DT_OK);
        worst_loss = fmax(worst_loss, fabs(le - lg) / fabs(le));
    }
    assert_int_equal(dt_device_copy(gpu, pe_h, DT_MEM_HOST, pe, DT_MEM_CUDA,
                                    n * sizeof *pe_h), DT_OK);
    assert_int_equal(dt_device_copy(gpu, pg_h, DT_MEM_HOST, pg, DT_MEM_CUDA,
                                    n * sizeof *pg_h), DT_OK);
    double big = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(pe_h[i]));
        double d = fabs((double)pe_h[i] - pg_h[i]);
        if (!(d <= worst))
            worst = d;
    }
    fprintf(stderr, "cuda_graphs precision %d: %llu capture, %llu launches; "
            "loss %.2g, parameters %.2g of the largest from eager\n",
            precision, mg->graphs.captures, mg->graphs.launches, worst_loss,
            worst / big);
    assert_int_equal(cu->set_precision(gpu, DT_PRECISION_FP32), DT_OK);
    assert_int_equal(mg->graphs.captures, 1);
    assert_int_equal(mg->graphs.launches, steps - 2);
    assert_true(worst_loss < 1e-5);
    assert_true(worst / big < 1e-5);
    free(x);
    free(pe_h);
    free(pg_h);
    dt_model_free(me);
    dt_model_free(mg);
    dt_device_close(gpu);
}

static void test_cuda_graphs(void **state)
{
    (void)state;
    graphs_vs_eager(DT_PRECISION_FP32);
    graphs_vs_eager(DT_PRECISION_BF16);
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
        cmocka_unit_test(test_conv_strided_nobias),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_batchnorm_first),
        cmocka_unit_test(test_batchnorm_one_per_channel),
        cmocka_unit_test(test_avgpool_gap),
        cmocka_unit_test(test_resnet_block),
        cmocka_unit_test(test_resnet_identity),
        cmocka_unit_test(test_label_smoothing),
        cmocka_unit_test(test_sync_bn),
        cmocka_unit_test(test_precision_modes),
        cmocka_unit_test(test_activations_bf16),
        cmocka_unit_test(test_cuda_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
