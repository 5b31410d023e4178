/* relu.c — y = max(x, 0); dx = dy where y > 0. */
#include "config.h"

#include "cuda/backend.h"
#include "layer.h"

static dt_status_t relu_setup(dt_layer_t *l, char *why, size_t why_len)
{
    l->out_c = l->in_c, l->out_h = l->in_h, l->out_w = l->in_w;
    l->out_flat = l->in_flat;
    return DT_OK;
}

static size_t relu_scratch(const dt_layer_t *l, int batch) { return 0; }

static dt_status_t relu_forward(dt_layer_t *l, const float *x, float *y,
                                int batch, int train)
{
    size_t n = (size_t)batch * dt_layer_in_size(l);
    if (l->io16) /* stored bf16 on both sides (model_act16.c) */
        return dt_cuda_backend_loaded()->relu16_forward(l->dev, x, y, n);
    DT_CUDA_DISPATCH(l->dev, relu_forward(l->dev, x, y, n));
    const float *restrict xr = x;
    float *restrict yr = y;
    for (size_t i = 0; i < n; i++)
        yr[i] = xr[i] > 0.0f ? xr[i] : 0.0f;
    return DT_OK;
}

static dt_status_t relu_backward(dt_layer_t *l, const float *x,
                                 const float *y, const float *dy, float *dx,
                                 int batch)
{
    if (!dx)
        return DT_OK;
    size_t n = (size_t)batch * dt_layer_in_size(l);
    if (l->io16) /* y is stored bf16 */
        return dt_cuda_backend_loaded()->relu16_backward(l->dev, y, dy, dx,
                                                         n);
    DT_CUDA_DISPATCH(l->dev, relu_backward(l->dev, y, dy, dx, n));
    const float *restrict yr = y, *restrict dyr = dy;
    float *restrict dxr = dx;
    /* Both loads unconditional: a select, not a branch on the sign (half
     * of them mispredicted), and the loop vectorizes. */
    for (size_t i = 0; i < n; i++) {
        float g = dyr[i];
        dxr[i] = yr[i] > 0.0f ? g : 0.0f;
    }
    return DT_OK;
}

const dt_layer_ops_t dt_layer_relu = {"relu", relu_setup, relu_scratch,
                                      relu_forward, relu_backward, NULL};
