/* conv2d.c — 2-D convolution by im2col + GEMM. args: out channels,
 * kernel size k, stride, pad, bias (1 yes, 0 no). W is (out, c*k*k).
 * Without a bias (a conv followed by batchnorm, whose beta makes it
 * redundant) the layer has no bias parameters: b and db point at the
 * model's zeros and junk floats (model_init.c), so every path below adds
 * a zero bias and writes a gradient nobody reads. On the cpu one sample at
 * a time (conv2d_cpu.c; conv2d_nhwc.c in an NHWC model), or by Winograd
 * F(4x4,3x3) or F(2x2,3x3) for the 3x3 stride 1 layers the model picks
 * (conv2d_winograd.c). On CUDA through cuDNN
 * (the backend's conv_forward / conv_backward: algorithms picked per shape
 * and cached, FMA math; core/cuda/cudnn_conv.c), or, in a backend built
 * without cuDNN, one GEMM over the whole batch:
 *
 * Forward:  col = im2col(x); Y = W col (out x n*oh*ow); y = Y + b as nchw.
 * Backward: dY = dy as (out x n*oh*ow); dW = dY col^T; db = row sums of
 *           dY; dcol = W^T dY (reusing col's space); dx = col2im(dcol).
 *
 * That fallback's im2col, col2im and layout kernels (conv.cu) stay
 * hand-written: they exist only for a machine without cuDNN, whose own
 * convolutions replace them everywhere else. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "conv2d_cpu.h"
#include "conv2d_nhwc.h"
#include "conv2d_winograd.h"
#include "im2col.h"
#include "layer.h"

static dt_conv_geom_t geom(const dt_layer_t *l, int batch)
{
    dt_conv_geom_t g = {.n = batch, .c = l->in_c, .h = l->in_h,
                        .w = l->in_w, .k = (int)l->args[1],
                        .s = (int)l->args[2], .pad = (int)l->args[3],
                        .oh = l->out_h, .ow = l->out_w, .x16 = l->io16 & 1,
                        .y16 = (l->io16 >> 1) & 1};
    return g;
}

static dt_status_t conv_setup(dt_layer_t *l, char *why, size_t why_len)
{
    int out = (int)l->args[0], k = (int)l->args[1], s = (int)l->args[2],
        pad = (int)l->args[3];
    if (l->in_flat) {
        snprintf(why, why_len,
                 "conv needs an image input (channels x height x width) but "
                 "gets a flat vector of %d: move it before flatten", l->in_c);
        return DT_ERR_INVALID;
    }
    if (pad >= k) {
        snprintf(why, why_len, "conv padding %d must be smaller than the "
                 "kernel size %d", pad, k);
        return DT_ERR_INVALID;
    }
    if (l->in_h + 2 * pad < k || l->in_w + 2 * pad < k) {
        snprintf(why, why_len,
                 "conv kernel %dx%d does not fit the %dx%d input (padding "
                 "%d)", k, k, l->in_h, l->in_w, pad);
        return DT_ERR_INVALID;
    }
    l->out_c = out;
    l->out_h = (l->in_h + 2 * pad - k) / s + 1;
    l->out_w = (l->in_w + 2 * pad - k) / s + 1;
    l->out_flat = 0;
    l->fan_in = (size_t)l->in_c * k * k;
    l->fan_out = (size_t)out * k * k;
    l->nweights = (size_t)out * l->fan_in;
    l->no_bias = l->args[4] == 0.0;
    l->nbias = l->no_bias ? 0 : (size_t)out;
    return DT_OK;
}

/* CUDA through cuDNN (the backend has it)? */
static int use_cudnn(const dt_layer_t *l)
{
    return l->dev && l->dev->kind == DT_DEVICE_CUDA &&
           dt_cuda_cudnn_missing() == NULL;
}

/* cpu: one sample's columns; CUDA with cuDNN: none (the backend keeps the
 * workspace); CUDA without: col (c*k*k x n*oh*ow) then Y (out x
 * n*oh*ow). */
static size_t conv_scratch(const dt_layer_t *l, int batch)
{
    if (l->dev && l->dev->kind != DT_DEVICE_CUDA)
        return l->winograd ? dt_conv2d_winograd_scratch(l, batch)
               : l->nhwc   ? dt_conv2d_nhwc_scratch(l)
                           : dt_conv2d_cpu_scratch(l);
    if (use_cudnn(l))
        return 0;
    size_t cols = (size_t)batch * l->out_h * l->out_w;
    return l->fan_in * cols + (size_t)l->out_c * cols;
}

static dt_status_t conv_forward(dt_layer_t *l, const float *x, float *y,
                                int batch, int train)
{
    if (l->dev->kind != DT_DEVICE_CUDA)
        return l->winograd ? dt_conv2d_winograd_forward(l, x, y, batch)
               : l->nhwc   ? dt_conv2d_nhwc_forward(l, x, y, batch)
                           : dt_conv2d_cpu_forward(l, x, y, batch);
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    dt_conv_geom_t g = geom(l, batch);
    if (use_cudnn(l))
        return cu->conv_forward(l->dev, &g, l->out_c, x, l->w,
                                l->no_bias ? NULL : l->b, y);
    int cols = batch * l->out_h * l->out_w, kk = (int)l->fan_in;
    float *col = l->scratch, *Y = l->scratch + (size_t)kk * cols;
    DT_CHECK(cu->im2col(l->dev, &g, x, col));
    DT_CHECK(dt_gemm(l->dev, 0, 0, l->out_c, cols, kk, 1.0f, l->w, kk, col,
                     cols, 0.0f, Y, cols));
    /* y[b][o][p] = Y[o][b*P + p] + bias[o], P = oh*ow */
    return cu->cnhw_to_nchw(l->dev, Y, l->b, y, batch, l->out_c,
                            (size_t)l->out_h * l->out_w);
}

static dt_status_t conv_backward(dt_layer_t *l, const float *x,
                                 const float *y, const float *dy, float *dx,
                                 int batch)
{
    if (l->dev->kind != DT_DEVICE_CUDA)
        return l->winograd
                   ? dt_conv2d_winograd_backward(l, x, y, dy, dx, batch)
               : l->nhwc ? dt_conv2d_nhwc_backward(l, x, y, dy, dx, batch)
                         : dt_conv2d_cpu_backward(l, x, y, dy, dx, batch);
    dt_conv_geom_t g = geom(l, batch);
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    if (use_cudnn(l))
        return cu->conv_backward(l->dev, &g, l->out_c, x, l->w, dy, l->dw,
                                 l->no_bias ? NULL : l->db, dx);
    int cols = batch * l->out_h * l->out_w, kk = (int)l->fan_in;
    float *col = l->scratch, *dY = l->scratch + (size_t)kk * cols;
    /* the inverse rearrangement, and db[o] = sum of dy over batch, plane */
    DT_CHECK(cu->nchw_to_cnhw(l->dev, dy, dY, l->db, batch, l->out_c,
                              (size_t)l->out_h * l->out_w));
    DT_CHECK(dt_gemm(l->dev, 0, 1, l->out_c, kk, cols, 1.0f, dY, cols, col,
                     cols, 0.0f, l->dw, kk));
    if (!dx)
        return DT_OK;
    DT_CHECK(dt_gemm(l->dev, 1, 0, kk, cols, l->out_c, 1.0f, l->w, kk, dY,
                     cols, 0.0f, col, cols));
    return cu->col2im(l->dev, &g, col, dx);
}

const dt_layer_ops_t dt_layer_conv2d = {"conv", conv_setup, conv_scratch,
                                        conv_forward, conv_backward, NULL};
