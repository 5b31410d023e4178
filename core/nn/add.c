/* add.c — the sum at the end of a residual block: y = x + x2, x the
 * block's main path (acts[src]) and x2 its shortcut (acts[skip], set by
 * the model before forward). Backward writes dx = dy for the main path;
 * the model passes dy on to the shortcut's activation itself (model.c),
 * adding it to what other readers of that activation put there. On the
 * cpu the block's closing relu is applied here (l->fused, model_init.c):
 * y = max(x + x2, 0) in one pass, and backward writes dx = dy where
 * y > 0, which the model then passes to the shortcut as well. Made by
 * model_parse.c's block expansion, not written by users. On CUDA (no
 * fused relu there) the sum is the backend's add (cuBLAS saxpy) and
 * dx = dy a device-to-device copy queued on the stream. */
#include "config.h"

#include <string.h>

#include "layer.h"
#include "nn/device_step.h"

static dt_status_t add_setup(dt_layer_t *l, char *why, size_t why_len)
{
    /* the shortcut's shape is checked by the parser, which knows it */
    l->out_c = l->in_c, l->out_h = l->in_h, l->out_w = l->in_w;
    l->out_flat = l->in_flat;
    return DT_OK;
}

static size_t add_scratch(const dt_layer_t *l, int batch) { return 0; }

static dt_status_t add_forward(dt_layer_t *l, const float *x, float *y,
                               int batch, int train)
{
    size_t n = (size_t)batch * dt_layer_in_size(l);
    if (l->io16 & 8) /* all three stored bf16 (model_act16.c) */
        return dt_cuda_backend_loaded()->add16(l->dev, x, l->x2, y, n);
    if (dt_layer_on_cuda(l))
        return dt_cuda_backend_loaded()->add(l->dev, x, l->x2, y, n);
    const float *restrict a = x, *restrict b = l->x2;
    float *restrict o = y;
    if (l->fused)
        for (size_t i = 0; i < n; i++) {
            float v = a[i] + b[i];
            o[i] = v > 0.0f ? v : 0.0f;
        }
    else
        for (size_t i = 0; i < n; i++)
            o[i] = a[i] + b[i];
    return DT_OK;
}

static dt_status_t add_backward(dt_layer_t *l, const float *x, const float *y,
                                const float *dy, float *dx, int batch)
{
    size_t n = (size_t)batch * dt_layer_in_size(l);
    if (!dx)
        return DT_OK;
    if (dt_layer_on_cuda(l)) /* device to device, queued on its stream */
        return dt_device_copy_async(l->dev, dx, dy, n * sizeof *dx, NULL);
    if (!l->fused) {
        memcpy(dx, dy, n * sizeof *dx);
        return DT_OK;
    }
    const float *restrict yr = y, *restrict g = dy;
    float *restrict d = dx;
    for (size_t i = 0; i < n; i++) {
        float v = g[i];
        d[i] = yr[i] > 0.0f ? v : 0.0f;
    }
    return DT_OK;
}

const dt_layer_ops_t dt_layer_add = {"add", add_setup, add_scratch,
                                     add_forward, add_backward, NULL};
