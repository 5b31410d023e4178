/* avgpool.c — average pooling: avgpool(k, stride=k) over k x k windows
 * without padding, and gap (global average pooling: the whole plane, to
 * C x 1 x 1, which flatten then makes a vector of C).
 *
 * Forward:  y = mean of the window.
 * Backward: each input gets dy/(k*k) from every window it is in.
 *
 * On CUDA both are cuDNN average pooling (the backend's pool_forward /
 * pool_backward, core/cuda/cudnn_pool.c); gap is the window of the whole
 * plane. gap also runs on an NHWC model's activations (layer.h), avgpool
 * does not (model_layout.c). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "layer.h"

static dt_status_t need_image(const dt_layer_t *l, const char *name,
                              char *why, size_t why_len)
{
    if (!l->in_flat)
        return DT_OK;
    snprintf(why, why_len, "%s needs an image input (channels x height x "
             "width) but gets a flat vector of %d: move it before flatten",
             name, l->in_c);
    return DT_ERR_INVALID;
}

static dt_status_t gap_setup(dt_layer_t *l, char *why, size_t why_len)
{
    DT_CHECK(need_image(l, "gap", why, why_len));
    l->out_c = l->in_c, l->out_h = 1, l->out_w = 1, l->out_flat = 0;
    return DT_OK;
}

static size_t no_scratch(const dt_layer_t *l, int batch) { return 0; }

/* The cuDNN pooling of this layer: k x k at stride s, or (gap) the plane. */
static dt_cuda_pool_t cuda_pool(const dt_layer_t *l, int batch, int gap)
{
    int k = gap ? 0 : (int)l->args[0], s = gap ? 0 : (int)l->args[1];
    dt_cuda_pool_t p = {1, batch, l->in_c, l->in_h, l->in_w,
                        gap ? l->in_h : k, gap ? l->in_w : k,
                        gap ? l->in_h : s, gap ? l->in_w : s,
                        l->out_h, l->out_w};
    return p;
}

static dt_status_t pool_forward_cuda(dt_layer_t *l, const float *x, float *y,
                                     int batch, int gap)
{
    dt_cuda_pool_t p = cuda_pool(l, batch, gap);
    return dt_cuda_backend_loaded()->pool_forward(l->dev, &p, x, y);
}

static dt_status_t pool_backward_cuda(dt_layer_t *l, const float *x,
                                      const float *y, const float *dy,
                                      float *dx, int batch, int gap)
{
    if (!dx)
        return DT_OK;
    dt_cuda_pool_t p = cuda_pool(l, batch, gap);
    return dt_cuda_backend_loaded()->pool_backward(l->dev, &p, x, y, dy, dx);
}

static dt_status_t gap_forward(dt_layer_t *l, const float *x, float *y,
                               int batch, int train)
{
    if (dt_layer_on_cuda(l))
        return pool_forward_cuda(l, x, y, batch, 1);
    int plane = l->in_h * l->in_w, C = l->in_c;
    size_t rows = (size_t)batch * C;
    float inv = 1.0f / (float)plane;
    if (l->nhwc) { /* (plane, C) per sample: sums along the pixels */
        for (int b = 0; b < batch; b++) {
            const float *restrict xb = x + (size_t)b * plane * C;
            float *restrict yb = y + (size_t)b * C;
            for (int c = 0; c < C; c++)
                yb[c] = 0.0f;
            for (int p = 0; p < plane; p++)
                for (int c = 0; c < C; c++)
                    yb[c] += xb[(size_t)p * C + c];
            for (int c = 0; c < C; c++)
                yb[c] *= inv;
        }
        return DT_OK;
    }
    for (size_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * plane;
        float part[8] = {0}, s = 0.0f;
        int p = 0;
        for (; p + 8 <= plane; p += 8)
            for (int j = 0; j < 8; j++)
                part[j] += xr[p + j];
        for (int j = 0; j < 8; j++)
            s += part[j];
        for (; p < plane; p++)
            s += xr[p];
        y[r] = s * inv;
    }
    return DT_OK;
}

static dt_status_t gap_backward(dt_layer_t *l, const float *x, const float *y,
                                const float *dy, float *dx, int batch)
{
    if (dt_layer_on_cuda(l))
        return pool_backward_cuda(l, x, y, dy, dx, batch, 1);
    if (!dx)
        return DT_OK;
    int plane = l->in_h * l->in_w, C = l->in_c;
    size_t rows = (size_t)batch * C;
    float inv = 1.0f / (float)plane;
    if (l->nhwc) { /* every pixel of a sample gets its dy / plane */
        for (int b = 0; b < batch; b++)
            for (int p = 0; p < plane; p++)
                for (int c = 0; c < C; c++)
                    dx[((size_t)b * plane + p) * C + c] =
                        dy[(size_t)b * C + c] * inv;
        return DT_OK;
    }
    for (size_t r = 0; r < rows; r++) {
        float g = dy[r] * inv;
        float *restrict d = dx + r * plane;
        for (int p = 0; p < plane; p++)
            d[p] = g;
    }
    return DT_OK;
}

const dt_layer_ops_t dt_layer_gap = {"gap", gap_setup, no_scratch,
                                     gap_forward, gap_backward,
                                     dt_layer_needs_cudnn};

static dt_status_t avg_setup(dt_layer_t *l, char *why, size_t why_len)
{
    int k = (int)l->args[0], s = (int)l->args[1];
    DT_CHECK(need_image(l, "avgpool", why, why_len));
    if (k > l->in_h || k > l->in_w) {
        snprintf(why, why_len, "avgpool window %dx%d is larger than its "
                 "%dx%d input", k, k, l->in_h, l->in_w);
        return DT_ERR_INVALID;
    }
    l->out_c = l->in_c;
    l->out_h = (l->in_h - k) / s + 1;
    l->out_w = (l->in_w - k) / s + 1;
    l->out_flat = 0;
    return DT_OK;
}

static dt_status_t avg_forward(dt_layer_t *l, const float *x, float *y,
                               int batch, int train)
{
    if (dt_layer_on_cuda(l))
        return pool_forward_cuda(l, x, y, batch, 0);
    int k = (int)l->args[0], s = (int)l->args[1], W = l->in_w;
    size_t in_plane = (size_t)l->in_h * W,
           out_plane = (size_t)l->out_h * l->out_w,
           rows = (size_t)batch * l->in_c;
    float inv = 1.0f / (float)(k * k);
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * in_plane;
        float *yr = y + r * out_plane;
        for (int oy = 0; oy < l->out_h; oy++)
            for (int ox = 0; ox < l->out_w; ox++) {
                const float *w0 = xr + (size_t)oy * s * W + (size_t)ox * s;
                float sum = 0.0f;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++)
                        sum += w0[(size_t)i * W + j];
                yr[oy * l->out_w + ox] = sum * inv;
            }
    }
    return DT_OK;
}

static dt_status_t avg_backward(dt_layer_t *l, const float *x, const float *y,
                                const float *dy, float *dx, int batch)
{
    if (dt_layer_on_cuda(l))
        return pool_backward_cuda(l, x, y, dy, dx, batch, 0);
    if (!dx)
        return DT_OK;
    int k = (int)l->args[0], s = (int)l->args[1], W = l->in_w;
    size_t in_plane = (size_t)l->in_h * W,
           out_plane = (size_t)l->out_h * l->out_w,
           rows = (size_t)batch * l->in_c;
    float inv = 1.0f / (float)(k * k);
    memset(dx, 0, rows * in_plane * sizeof *dx);
    for (size_t r = 0; r < rows; r++) {
        float *dr = dx + r * in_plane;
        const float *gr = dy + r * out_plane;
        for (int oy = 0; oy < l->out_h; oy++)
            for (int ox = 0; ox < l->out_w; ox++) {
                float g = gr[oy * l->out_w + ox] * inv;
                float *w0 = dr + (size_t)oy * s * W + (size_t)ox * s;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++)
                        w0[(size_t)i * W + j] += g;
            }
    }
    return DT_OK;
}

const dt_layer_ops_t dt_layer_avgpool = {"avgpool", avg_setup, no_scratch,
                                         avg_forward, avg_backward,
                                         dt_layer_needs_cudnn};
