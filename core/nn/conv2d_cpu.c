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
 * With relu_fused (a relu follows; model.c) the relu is applied to y_b
 * and dy is masked by y > 0 here, sample by sample, instead of in two
 * more passes over the whole batch.
 *
 * Forward:  col = im2col(x_b); y_b = W col + b.
 * Backward: dW = sum_b dy_b col_b^T; db = sums of dy; dx_b =
 *           col2im(W^T dy_b). */
#include "config.h"

#include "conv2d_cpu.h"
#include "im2col.h"

static dt_conv_geom_t sample_geom(const dt_layer_t *l)
{
    dt_conv_geom_t g = {1, l->in_c, l->in_h, l->in_w, (int)l->args[1],
                        (int)l->args[2], (int)l->args[3], l->out_h, l->out_w};
    return g;
}

/* sum of row[0..n), in 8 interleaved partial sums: one running sum is a
 * chain of dependent adds (4 cycles each), eight of them vectorize. */
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

dt_status_t dt_conv2d_cpu_forward(dt_layer_t *l, const float *x, float *y,
                                  int batch)
{
    dt_conv_geom_t g = sample_geom(l);
    int plane = l->out_h * l->out_w, kk = (int)l->fan_in, out = l->out_c;
    size_t in_len = dt_layer_in_size(l), out_len = (size_t)out * plane;
    float *col = l->scratch;
    for (int b = 0; b < batch; b++) {
        float *yb = y + (size_t)b * out_len;
        dt_im2col_cpu(&g, x + (size_t)b * in_len, col);
        DT_CHECK(dt_gemm(l->dev, 0, 0, out, plane, kk, 1.0f, l->w, kk, col,
                         plane, 0.0f, yb, plane));
        for (int o = 0; o < out; o++) {
            float *row = yb + (size_t)o * plane, bo = l->b[o];
            if (l->relu_fused)
                for (int p = 0; p < plane; p++) {
                    float v = row[p] + bo;
                    row[p] = v > 0.0f ? v : 0.0f;
                }
            else
                for (int p = 0; p < plane; p++)
                    row[p] += bo;
        }
    }
    return DT_OK;
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
        const float *dyb = dy + (size_t)b * out_len;
        if (l->relu_fused) { /* y is the relu's output: dy where y > 0 */
            const float *restrict yb = y + (size_t)b * out_len,
                                  *restrict g = dyb;
            float *restrict d = masked;
            for (size_t i = 0; i < out_len; i++) {
                float v = g[i];
                d[i] = yb[i] > 0.0f ? v : 0.0f;
            }
            dyb = masked;
        }
        for (int o = 0; o < out; o++)
            l->db[o] += row_sum(dyb + (size_t)o * plane, plane);
        dt_im2col_cpu(&g, x + (size_t)b * in_len, col);
        DT_CHECK(dt_gemm(l->dev, 0, 1, out, kk, plane, 1.0f, dyb, plane, col,
                         plane, b ? 1.0f : 0.0f, l->dw, kk));
        if (!dx)
            continue;
        /* col is free again: dcol = W^T dy_b. */
        DT_CHECK(dt_gemm(l->dev, 1, 0, kk, plane, out, 1.0f, l->w, kk, dyb,
                         plane, 0.0f, col, plane));
        dt_col2im_cpu(&g, col, dx + (size_t)b * in_len);
    }
    return DT_OK;
}
