/* dropout.c — in training, zero each value with probability p and scale
 * the rest by 1/(1-p); at evaluation, the identity. The mask comes from a
 * hash of (seed, counter, layer, element) (rng.h): deterministic, the same
 * on cpu and cuda, and restorable from a checkpoint. */
#include "config.h"

#include "layer.h"
#include "rng.h"

static dt_status_t dropout_setup(dt_layer_t *l, char *why, size_t why_len)
{
    l->out_c = l->in_c, l->out_h = l->in_h, l->out_w = l->in_w;
    l->out_flat = l->in_flat;
    return DT_OK;
}

/* The mask: 0 or 1/(1-p) per value. */
static size_t dropout_scratch(const dt_layer_t *l, int batch)
{
    return (size_t)batch * dt_layer_in_size(l);
}

static dt_status_t dropout_forward(dt_layer_t *l, const float *x, float *y,
                                   int batch, int train)
{
    size_t n = (size_t)batch * dt_layer_in_size(l);
    float p = (float)l->args[0];
    if (!train || p == 0.0f)
        return dt_device_copy(l->dev, y, l->dev->mem, x, l->dev->mem,
                              n * sizeof *x);
    uint64_t key = dt_dropout_key(*l->rng_seed, *l->rng_counter, l->index);
    float scale = 1.0f / (1.0f - p);
    DT_CUDA_DISPATCH(l->dev, dropout_forward(l->dev, x, y, l->scratch,
                                                     n, p, scale, key));
    for (size_t i = 0; i < n; i++) {
        l->scratch[i] = dt_dropout_uniform(key, i) < p ? 0.0f : scale;
        y[i] = x[i] * l->scratch[i];
    }
    return DT_OK;
}

static dt_status_t dropout_backward(dt_layer_t *l, const float *x,
                                    const float *y, const float *dy,
                                    float *dx, int batch)
{
    if (!dx)
        return DT_OK;
    size_t n = (size_t)batch * dt_layer_in_size(l);
    if ((float)l->args[0] == 0.0f)
        return dt_device_copy(l->dev, dx, l->dev->mem, dy, l->dev->mem,
                              n * sizeof *dy);
    DT_CUDA_DISPATCH(l->dev, mul(l->dev, dy, l->scratch, dx, n));
    for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * l->scratch[i];
    return DT_OK;
}

const dt_layer_ops_t dt_layer_dropout = {"dropout", dropout_setup,
                                         dropout_scratch, dropout_forward,
                                         dropout_backward, NULL};
