/* relu.c — y = max(x, 0); dx = dy where y > 0. */
#include "config.h"

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
    DT_CUDA_DISPATCH(l->dev, dt_cuda_relu_forward(l->dev, x, y, n));
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return DT_OK;
}

static dt_status_t relu_backward(dt_layer_t *l, const float *x,
                                 const float *y, const float *dy, float *dx,
                                 int batch)
{
    if (!dx)
        return DT_OK;
    size_t n = (size_t)batch * dt_layer_in_size(l);
    DT_CUDA_DISPATCH(l->dev, dt_cuda_relu_backward(l->dev, y, dy, dx, n));
    for (size_t i = 0; i < n; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    return DT_OK;
}

const dt_layer_ops_t dt_layer_relu = {"relu", relu_setup, relu_scratch,
                                      relu_forward, relu_backward};
