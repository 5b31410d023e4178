/* test_nn_grad.c — finite-difference gradient checks for every layer.
 * Each model puts the layer under test in the middle, so both its
 * parameter gradients and its input gradient (through the parameters of
 * the layers before it) are checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "nn_testutil.h"

/* Build, init and check one model on (c, h, w) inputs with 3 classes,
 * its convolutions computed by algo, its activations in layout, with
 * finite-difference step step. */
static void check_model_in(const char *layers, int c, int h, int w,
                           int batch, dt_conv_algo_t algo, float step,
                           dt_layout_t layout)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(layers, "test", c, h, w, 3, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_set_conv_algo(m, algo), DT_OK);
    assert_int_equal(dt_model_set_layout(m, layout), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 42), DT_OK);
    if (layout != DT_LAYOUT_NCHW && dt_model_layout(m) == DT_LAYOUT_NCHW) {
        dt_model_free(m); /* no NHWC form: the NCHW check was it */
        return;
    }
    fprintf(stderr, "%s on %dx%dx%d, batch %d%s (%s)\n", layers, c, h, w,
            batch,
            algo == DT_CONV_WINOGRAD    ? " (winograd)"
            : algo == DT_CONV_WINOGRAD4 ? " (winograd4)"
                                        : "",
            dt_model_layout(m) == DT_LAYOUT_NHWC ? "nhwc" : "nchw");
    size_t in = (size_t)c * h * w * batch;
    float *x = malloc(in * sizeof *x);
    int *y = malloc((size_t)batch * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    fill_random(x, in, 1234);
    for (int i = 0; i < batch; i++)
        y[i] = i % 3;
    assert_int_equal(grad_check(m, x, y, batch, step, 2e-3f, 3e-2f), 0);
    free(x);
    free(y);
    dt_model_free(m);
}

/* In both layouts: NCHW, and NHWC where the model has it. */
static void check_model_step(const char *layers, int c, int h, int w,
                             int batch, dt_conv_algo_t algo, float step)
{
    check_model_in(layers, c, h, w, batch, algo, step, DT_LAYOUT_NCHW);
    check_model_in(layers, c, h, w, batch, algo, step, DT_LAYOUT_AUTO);
}

static void check_model_with(const char *layers, int c, int h, int w,
                             int batch, dt_conv_algo_t algo)
{
    check_model_step(layers, c, h, w, batch, algo, 1e-3f);
}

static void check_model(const char *layers, int c, int h, int w, int batch)
{
    check_model_with(layers, c, h, w, batch, DT_CONV_IM2COL);
}

static void test_linear(void **state)
{
    check_model("flatten linear(5) linear(3)", 2, 2, 2, 3);
}

/* linear(out, bias=no) before a batchnorm, whose shift is the bias: no
 * bias parameters (out x in weights alone), gradients still right. */
static void test_linear_nobias(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(6,bias=no) batchnorm "
                                    "relu linear(3)", NULL, 2, 2, 2, 3, &m,
                                    NULL),
                     DT_OK);
    /* 8*6 weights, batchnorm 6 + 6, 6*3 + 3 */
    assert_int_equal(dt_model_nparams(m), 48 + 12 + 21);
    dt_model_free(m);
    check_model("flatten linear(6,bias=no) batchnorm relu linear(3)", 2, 2,
                2, 4);
}

static void test_relu(void **state)
{
    check_model("flatten linear(6) relu linear(3)", 1, 2, 3, 4);
}

static void test_conv_stride_pad(void **state)
{
    check_model("conv(3,3,stride=2,pad=1) conv(2,2) flatten linear(3)", 2, 5,
                5, 2);
    /* 8 and more input channels: NHWC's columns by channel runs (fewer
     * go through NCHW's columns), the weights reordered both ways */
    check_model("conv(8,3,pad=1) relu conv(3,3,stride=2,pad=1) relu "
                "conv(9,1,stride=2) batchnorm relu conv(2,2) flatten "
                "linear(3)", 2, 6, 5, 2);
}

static void test_conv_plain(void **state)
{
    check_model("conv(2, 3) relu flatten linear(3)", 1, 5, 4, 2);
}

/* Max pooling is not differentiable where two window values tie; inputs
 * are chosen (seeded) with no near-ties, which a 6x6 input of this seed
 * has (two values 4e-5 apart). */
static void test_maxpool(void **state)
{
    check_model("conv(2,3,pad=1) maxpool(2) flatten linear(3)", 1, 8, 8, 2);
}

/* Odd sizes: the last row and column belong to no 2x2 window. */
static void test_maxpool_odd(void **state)
{
    check_model("conv(2,3,pad=1) maxpool(2) flatten linear(3)", 1, 7, 5, 2);
}

/* A stride larger than 1 with padding: the edge columns of each kernel
 * offset fall outside the image on either side. */
static void test_conv_stride3_pad2(void **state)
{
    check_model("conv(2,4,stride=3,pad=2) relu flatten linear(3)", 2, 7, 8,
                2);
}

/* conv relu maxpool(2) runs fused on the cpu (conv2d_cpu.c): checked
 * with even and odd planes (sizes whose seeded inputs put no relu input
 * or pooling tie within the finite difference step). */
static void test_conv_relu_maxpool_fused(void **state)
{
    check_model("conv(3,3,pad=1) relu maxpool(2) conv(2,3,pad=1) relu "
                "flatten linear(3)", 2, 6, 6, 2);
    check_model("conv(2,3,pad=1) relu maxpool(2) flatten linear(3)", 1, 7, 5,
                3);
}

/* The Winograd F(2x2,3x3) path (conv2d_winograd.c) is the exact adjoint
 * of its own forward: checked plain (pad 0, 1, 2; odd planes, where the
 * last tile hangs over the edge), with the relu fused, and with relu and
 * pool fused (even and odd planes, pad 1 and 0); with 8 or more channels
 * as well. */
static void test_conv_winograd(void **state)
{
    check_model_with("conv(3,3) conv(2,3,pad=2) flatten linear(3)", 2, 7, 6,
                     2, DT_CONV_WINOGRAD);
    check_model_with("conv(3,3,pad=1) relu flatten linear(3)", 2, 5, 4, 2,
                     DT_CONV_WINOGRAD);
    check_model_with("conv(3,3,pad=1) relu maxpool(2) conv(2,3,pad=1) relu "
                     "maxpool(2) flatten linear(3)", 2, 8, 8, 2,
                     DT_CONV_WINOGRAD);
    check_model_with("conv(2,3,pad=1) relu maxpool(2) flatten linear(3)", 1,
                     7, 5, 3, DT_CONV_WINOGRAD);
    check_model_with("conv(3,3) relu maxpool(2) flatten linear(3)", 2, 8, 9,
                     2, DT_CONV_WINOGRAD);
    /* 8 and more channels: the 8x8 blocked transposes between NCHW and
     * the channels-innermost planes (pixel groups across rows, channels
     * left over), and with the pool's crop (pad 0, odd plane; a 3e-4
     * step: at 1e-3 one difference crosses a relu or pool kink) */
    check_model_with("conv(8,3,pad=1) relu conv(9,3,pad=1) flatten linear(3)",
                     2, 6, 5, 2, DT_CONV_WINOGRAD);
    check_model_step("conv(8,3,pad=1) relu conv(8,3) relu maxpool(2) flatten "
                     "linear(3)", 2, 9, 13, 1, DT_CONV_WINOGRAD, 3e-4f);
}

/* The same for F(4x4, 3x3) (6x6 tiles): even planes (8x8, 16x16) and
 * odd ones (7x7, 5x6, pad 0 and 2), where the last tiles hang over the
 * output's edge by 1 to 3 pixels; the relu fused; a fused pool (that conv
 * stays F(2x2), the next one F(4x4)); 8 and more channels. */
static void test_conv_winograd4(void **state)
{
    check_model_with("conv(3,3,pad=1) conv(2,3,pad=1) flatten linear(3)", 2,
                     8, 8, 2, DT_CONV_WINOGRAD4);
    check_model_with("conv(3,3) conv(2,3,pad=2) flatten linear(3)", 2, 7, 6,
                     2, DT_CONV_WINOGRAD4);
    check_model_with("conv(3,3,pad=1) relu flatten linear(3)", 3, 7, 7, 2,
                     DT_CONV_WINOGRAD4);
    check_model_step("conv(3,3,pad=1) relu maxpool(2) conv(2,3,pad=1) relu "
                     "flatten linear(3)", 2, 8, 8, 2, DT_CONV_WINOGRAD4,
                     3e-4f);
    check_model_with("conv(8,3,pad=1) relu conv(9,3,pad=1) flatten linear(3)",
                     4, 5, 6, 2, DT_CONV_WINOGRAD4);
    check_model_with("conv(8,3,pad=1) conv(8,3,pad=1) flatten linear(3)", 8,
                     16, 16, 1, DT_CONV_WINOGRAD4);
}

static void test_maxpool_overlapping(void **state)
{
    check_model("conv(2,3,pad=1) maxpool(3,stride=2) flatten linear(3)", 1, 7,
                7, 2);
}

static void test_dropout(void **state)
{
    check_model("flatten linear(8) dropout(0.5) linear(3)", 1, 3, 3, 3);
}

/* Batchnorm in train mode (batch statistics): over the features of a
 * flat vector, and over the channels of an image (N*H*W values each). */
static void test_batchnorm_2d(void **state)
{
    check_model("flatten linear(6) batchnorm linear(3)", 1, 2, 3, 4);
    check_model("flatten linear(5) batchnorm(momentum=0.5,eps=1e-3) relu "
                "linear(3)", 1, 2, 3, 6);
}

static void test_batchnorm_4d(void **state)
{
    check_model("conv(3,3,pad=1) batchnorm flatten linear(3)", 2, 4, 4, 3);
    check_model("conv(3,3,pad=1,bias=no) batchnorm relu conv(2,3) "
                "batchnorm flatten linear(3)", 2, 5, 5, 2);
}

/* A conv without bias, strided: its parameters are the weights alone. */
static void test_conv_stride_nobias(void **state)
{
    check_model("conv(3,3,stride=2,pad=1,bias=no) conv(2,2,bias=no) flatten "
                "linear(3)", 2, 5, 5, 2);
}

/* 1x1 convs: stride 1 unpadded (a GEMM on the input itself, no
 * im2col), and strided. */
static void test_conv_pointwise(void **state)
{
    check_model("conv(3,3,pad=1) conv(4,1,bias=no) relu conv(2,1,stride=2) "
                "flatten linear(3)", 2, 5, 5, 2);
}

static void test_gap(void **state)
{
    check_model("conv(3,3,pad=1) gap flatten linear(3)", 2, 5, 4, 3);
}

static void test_avgpool(void **state)
{
    check_model("conv(2,3,pad=1) avgpool(2) flatten linear(3)", 1, 7, 6, 2);
    check_model("conv(2,3,pad=1) avgpool(3,stride=2) flatten linear(3)", 1,
                7, 7, 2);
}

/* Residual blocks: identity shortcut (the block input's gradient is the
 * sum of the main path's and the shortcut's), and a projection shortcut
 * (1x1 strided conv + batchnorm) where channels and size change; both,
 * also with Winograd for the 3x3 stride-1 convs. */
static void test_residual_identity(void **state)
{
    check_model("conv(3,3,pad=1,bias=no) batchnorm relu stage(basic,3,2) "
                "gap flatten linear(3)", 2, 4, 4, 2);
}

static void test_residual_projection(void **state)
{
    check_model("conv(2,3,pad=1) stage(basic,4,1,stride=2) flatten "
                "linear(3)", 1, 6, 6, 2);
    /* A stage on the input itself (its identity shortcut from acts[0]).
     * Five relus after batchnorms over 27 values each: a 1e-3 step
     * crosses a relu's kink (the difference is off by 0.02, by 6e-4 with
     * 3e-4, and by under 2e-3 down to 1e-4: no kink, no error). */
    check_model_step("stage(basic,3,1) stage(basic,4,2,stride=2) gap "
                     "flatten linear(3)", 2, 5, 5, 3, DT_CONV_IM2COL, 3e-4f);
    check_model_with("conv(2,3,pad=1) stage(basic,4,2,stride=2) gap flatten "
                     "linear(3)", 1, 6, 6, 2, DT_CONV_WINOGRAD);
}

/* Label smoothing: the gradient of the smoothed loss. */
static void test_label_smoothing(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(5) relu linear(3)", "t",
                                    1, 2, 3, 3, &m, NULL), DT_OK);
    assert_int_equal(dt_model_set_label_smoothing(m, 0.2f), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 42), DT_OK);
    float x[4 * 6];
    int y[4] = {0, 1, 2, 1};
    fill_random(x, 24, 99);
    assert_int_equal(grad_check(m, x, y, 4, 1e-3f, 2e-3f, 3e-2f), 0);
    dt_model_free(m);
}

static void test_softmax_xent_only(void **state)
{
    check_model("flatten linear(3)", 1, 1, 4, 5);
}

/* The loss itself against a hand computation: a linear(2) layer with
 * known weights on one sample. */
static void test_loss_value(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(2)", NULL, 1, 1, 2, 2, &m,
                                    NULL), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 1), DT_OK);
    float *p;
    size_t n;
    assert_int_equal(dt_model_params(m, &p, NULL, &n), DT_OK);
    assert_int_equal(n, 6); /* W 2x2, b 2 */
    const float w[6] = {1, 2, 3, 4, 0.5f, -0.5f};
    for (int i = 0; i < 6; i++)
        p[i] = w[i];
    const float x[2] = {1, -1};
    const int y[1] = {1};
    float loss;
    int correct;
    assert_int_equal(dt_model_forward(m, x, y, 1, 0, &loss, &correct), DT_OK);
    /* logits: (1-2+0.5, 3-4-0.5) = (-0.5, -1.5); label 1 */
    double z0 = -0.5, z1 = -1.5;
    double want = log(exp(z0) + exp(z1)) - z1;
    assert_float_equal(loss, want, 1e-5);
    assert_int_equal(correct, 0);
    const dt_tensor_t *out = dt_model_output(m);
    assert_non_null(out);
    assert_int_equal(out->shape[0], 1);
    assert_int_equal(out->shape[1], 2);
    assert_float_equal(out->data[0], z0, 1e-6);
    assert_float_equal(out->data[1], z1, 1e-6);
    dt_model_free(m);
}

int main(void)
{
    /* every step runs with the shared block's free bytes filled with
     * junk (core/nn/model_arena.c): a buffer read outside the lifetime
     * the planner gave it gets wrong numbers, and the checks fail */
    setenv("DT_DEBUG_POISON_BLOCK", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_linear_nobias),
        cmocka_unit_test(test_relu),
        cmocka_unit_test(test_conv_stride_pad),
        cmocka_unit_test(test_conv_plain),
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_maxpool_overlapping),
        cmocka_unit_test(test_maxpool_odd),
        cmocka_unit_test(test_conv_relu_maxpool_fused),
        cmocka_unit_test(test_conv_stride3_pad2),
        cmocka_unit_test(test_conv_winograd),
        cmocka_unit_test(test_conv_winograd4),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_batchnorm_2d),
        cmocka_unit_test(test_batchnorm_4d),
        cmocka_unit_test(test_conv_stride_nobias),
        cmocka_unit_test(test_conv_pointwise),
        cmocka_unit_test(test_gap),
        cmocka_unit_test(test_avgpool),
        cmocka_unit_test(test_residual_identity),
        cmocka_unit_test(test_residual_projection),
        cmocka_unit_test(test_label_smoothing),
        cmocka_unit_test(test_softmax_xent_only),
        cmocka_unit_test(test_loss_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
