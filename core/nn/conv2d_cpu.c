/* conv2d_cpu.c — conv2d on the cpu, one sample at a time.
 *
 * A sample's columns (c*k*k x oh*ow: 225 KB for the 32->64 3x3 layer on
 * 14x14) stay in cache between im2col and the GEMM, and Y = W col is
 * already that sample's (out, oh, ow) output: no batch-wide column
 * matrix streamed through memory and no (out, n*oh*ow) <-> nchw
 * transposes, which cost as much as the GEMMs' own memory traffic.
 * Backward rebuilds each sample's columns from x (cheaper than keeping a
 * whole batch of them) and accumulates dW over the samples.
 *
 * With l->fused (layer.h) the following relu, and 2x2 max pooling if
 * that follows too, are applied here to each sample's output while it is
 * in cache, and their backward builds the sample's dy here too: the
 * batch-wide conv and relu outputs (the largest activations of a CNN)
 * are then never written to memory and read back.
 *
 * Forward:  col = im2col(x_b); y_b = W col + b.
 * Backward: dW = sum_b dy_b col_b^T; db = sums of dy; dx_b =
 *           col2im(W^T dy_b). */
#include "config.h"

#include "conv2d_cpu.h"
#include "im2col.h"
#include "maxpool2.h"

static dt_conv_geom_t sample_geom(const dt_layer_t *l)
{
    dt_conv_geom_t g = {.n = 1, .c = l->in_c, .h = l->in_h, .w = l->in_w,
                        .k = (int)l->args[1], .s = (int)l->args[2],
                        .pad = (int)l->args[3], .oh = l->out_h,
                        .ow = l->out_w};
    return g;
}

/* sum of row[0..n), in 8 interleaved partial sums: one running sum is a
 * chain of dependent adds (4 cycles each), eight of them vectorize. */
/* A 1x1, stride 1, unpadded conv's columns are its input itself: the
 * GEMMs read x_b directly, no im2col copy (nor col2im: dx_b is W^T dy_b
 * written in place). */
static int is_pointwise(const dt_layer_t *l)
{
    return (int)l->args[1] == 1 && (int)l->args[2] == 1 &&
           (int)l->args[3] == 0;
}

static float row_sum(const float *row, int n)
{
    float part[8] = {0};
    int p = 0;
    for (; p + 8 <= n; p += 8)
        for (int j = 0; j < 8; j++)
            part[j] += row[p + j];
    float sum = 0.0f;
    for (int j = 0; j < 8; j++)
        sum += part[j];
    for (; p < n; p++)
        sum += row[p];
    return sum;
}

size_t dt_conv2d_cpu_scratch(const dt_layer_t *l)
{
    return (l->fan_in + (size_t)l->out_c) * (size_t)l->out_h * l->out_w;
}

/* y_b + bias, then the relu if fused, in place. */
static void bias_relu(const dt_layer_t *l, float *yb, int plane)
{
    for (int o = 0; o < l->out_c; o++) {
        float *row = yb + (size_t)o * plane, bo = l->b[o];
        if (l->fused)
            for (int p = 0; p < plane; p++) {
                float v = row[p] + bo;
                row[p] = v > 0.0f ? v : 0.0f;
            }
        else
            for (int p = 0; p < plane; p++)
                row[p] += bo;
    }
}

dt_status_t dt_conv2d_cpu_forward(dt_layer_t *l, const float *x, float *y,
                                  int batch)
{
    dt_conv_geom_t g = sample_geom(l);
    int plane = l->out_h * l->out_w, kk = (int)l->fan_in, out = l->out_c;
    size_t in_len = dt_layer_in_size(l), out_len = (size_t)out * plane;
    float *col = l->scratch, *conv = col + (size_t)kk * plane;
    const dt_layer_t *pool = l->fused == 2 ? l + 2 : NULL;
    int ph = pool ? pool->out_h : 0, pw = pool ? pool->out_w : 0;
    size_t pplane = (size_t)ph * pw;
    for (int b = 0; b < batch; b++) {
        /* With the pool fused the conv's output stays in scratch and y is
         * the pool's output. */
        float *yb = pool ? conv : y + (size_t)b * out_len;
        const float *cb = x + (size_t)b * in_len;
        if (!is_pointwise(l)) {
            dt_im2col_cpu(&g, cb, col);
            cb = col;
        }
        DT_CHECK(dt_gemm(l->dev, 0, 0, out, plane, kk, 1.0f, l->w, kk, cb,
                         plane, 0.0f, yb, plane));
        bias_relu(l, yb, plane);
        if (!pool)
            continue;
        int *arg = (int *)(void *)pool->scratch + (size_t)b * out * pplane;
        float *pb = y + (size_t)b * out * pplane;
        for (int o = 0; o < out; o++)
            dt_maxpool2_plane(yb + (size_t)o * plane, pb + o * pplane,
                              arg + o * pplane, l->out_w, ph, pw);
    }
    return DT_OK;
}

/* This sample's gradient at the conv's output, in `masked`, when the conv
 * applies the next layers: through the pool (if fused) and the relu. */
static const float *fused_dy(const dt_layer_t *l, int b, const float *y,
                             const float *dy, float *masked)
{
    int plane = l->out_h * l->out_w, out = l->out_c;
    if (l->fused == 2) { /* y, dy: the pool's */
        const dt_layer_t *pool = l + 2;
        size_t pplane = (size_t)pool->out_h * pool->out_w,
               at = (size_t)b * out * pplane;
        const int *arg = (const int *)(const void *)pool->scratch + at;
        for (int o = 0; o < out; o++)
            dt_unpool2_plane(dy + at + o * pplane, arg + o * pplane,
                             y + at + o * pplane, masked + (size_t)o * plane,
                             l->out_h, l->out_w, pool->out_h, pool->out_w);
        return masked;
    }
    /* y is the relu's output: dy where y > 0 */
    size_t out_len = (size_t)out * plane;
    const float *restrict yb = y + (size_t)b * out_len,
                          *restrict g = dy + (size_t)b * out_len;
    float *restrict d = masked;
    for (size_t i = 0; i < out_len; i++) {
        float v = g[i];
        d[i] = yb[i] > 0.0f ? v : 0.0f;
    }
    return masked;
}

dt_status_t dt_conv2d_cpu_backward(dt_layer_t *l, const float *x,
                                   const float *y, const float *dy,
                                   float *dx, int batch)
{
    dt_conv_geom_t g = sample_geom(l);
    int plane = l->out_h * l->out_w, kk = (int)l->fan_in, out = l->out_c;
    size_t in_len = dt_layer_in_size(l), out_len = (size_t)out * plane;
    float *col = l->scratch, *masked = col + (size_t)kk * plane;
    for (int o = 0; o < out; o++)
        l->db[o] = 0.0f;
    for (int b = 0; b < batch; b++) {
        const float *dyb = l->fused ? fused_dy(l, b, y, dy, masked)
                                    : dy + (size_t)b * out_len;
        for (int o = 0; o < out; o++)
            l->db[o] += row_sum(dyb + (size_t)o * plane, plane);
        const float *cb = x + (size_t)b * in_len;
        int direct = is_pointwise(l);
        if (!direct) {
            dt_im2col_cpu(&g, cb, col);
            cb = col;
        }
        DT_CHECK(dt_gemm(l->dev, 0, 1, out, kk, plane, 1.0f, dyb, plane, cb,
                         plane, b ? 1.0f : 0.0f, l->dw, kk));
        if (!dx)
            continue;
        /* col is free again: dcol = W^T dy_b. */
        float *dcol = direct ? dx + (size_t)b * in_len : col;
        DT_CHECK(dt_gemm(l->dev, 1, 0, kk, plane, out, 1.0f, l->w, kk, dyb,
                         plane, 0.0f, dcol, plane));
        if (!direct)
            dt_col2im_cpu(&g, col, dx + (size_t)b * in_len);
    }
    return DT_OK;
}
