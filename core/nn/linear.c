/* linear.c — fully connected layer: y = x W^T + b, W is (out, in). */
#include "config.h"

#include <stdio.h>

#include "layer.h"

static dt_status_t linear_setup(dt_layer_t *l, char *why, size_t why_len)
{
    if (!l->in_flat) {
        snprintf(why, why_len,
                 "linear needs a flat input but gets %dx%dx%d: put flatten "
                 "before it", l->in_c, l->in_h, l->in_w);
        return DT_ERR_INVALID;
    }
    int out = (int)l->args[0];
    l->out_c = out, l->out_h = 1, l->out_w = 1, l->out_flat = 1;
    l->nweights = (size_t)out * (size_t)l->in_c;
    /* bias=no: a batchnorm after it, whose shift is the bias */
    l->no_bias = l->args[1] == 0.0;
    l->nbias = l->no_bias ? 0 : (size_t)out;
    l->fan_in = (size_t)l->in_c;
    l->fan_out = (size_t)out;
    return DT_OK;
}

static size_t linear_scratch(const dt_layer_t *l, int batch) { return 0; }

/* y[i, :] += b for every row i. */
static dt_status_t add_bias_rows(dt_device_t *dev, float *y, const float *b,
                                 int rows, int cols)
{
    DT_CUDA_DISPATCH(dev, add_bias(dev, y, b, rows, cols, 1));
    for (int i = 0; i < rows; i++) {
        float *yi = y + (size_t)i * cols;
        for (int j = 0; j < cols; j++)
            yi[j] += b[j];
    }
    return DT_OK;
}

/* db = column sums of dy (rows x cols). */
static dt_status_t bias_grad_rows(dt_device_t *dev, const float *dy,
                                  float *db, int rows, int cols)
{
    DT_CUDA_DISPATCH(dev, bias_grad(dev, dy, db, rows, cols, 1));
    for (int j = 0; j < cols; j++)
        db[j] = 0.0f;
    for (int i = 0; i < rows; i++) {
        const float *dyi = dy + (size_t)i * cols;
        for (int j = 0; j < cols; j++)
            db[j] += dyi[j];
    }
    return DT_OK;
}

static dt_status_t linear_forward(dt_layer_t *l, const float *x, float *y,
                                  int batch, int train)
{
    int in = l->in_c, out = l->out_c;
    DT_CHECK(dt_gemm(l->dev, 0, 1, batch, out, in, 1.0f, x, in, l->w, in,
                     0.0f, y, out));
    return l->no_bias ? DT_OK : add_bias_rows(l->dev, y, l->b, batch, out);
}

static dt_status_t linear_backward(dt_layer_t *l, const float *x,
                                   const float *y, const float *dy, float *dx,
                                   int batch)
{
    int in = l->in_c, out = l->out_c;
    /* dW = dy^T x, db = sum over the batch of dy, dx = dy W */
    DT_CHECK(dt_gemm(l->dev, 1, 0, out, in, batch, 1.0f, dy, out, x, in, 0.0f,
                     l->dw, in));
    if (!l->no_bias)
        DT_CHECK(bias_grad_rows(l->dev, dy, l->db, batch, out));
    if (dx)
        DT_CHECK(dt_gemm(l->dev, 0, 0, batch, in, out, 1.0f, dy, out, l->w,
                         in, 0.0f, dx, in));
    return DT_OK;
}

const dt_layer_ops_t dt_layer_linear = {
    "linear", linear_setup, linear_scratch, linear_forward, linear_backward,
    NULL};
