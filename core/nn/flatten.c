/* flatten.c — (c, h, w) -> (c*h*w): the data is already in that order,
 * so forward and backward are copies. */
#include "config.h"

#include "layer.h"

static dt_status_t flatten_setup(dt_layer_t *l, char *why, size_t why_len)
{
    l->out_c = (int)dt_layer_in_size(l), l->out_h = 1, l->out_w = 1;
    l->out_flat = 1;
    return DT_OK;
}

static size_t flatten_scratch(const dt_layer_t *l, int batch) { return 0; }

static dt_status_t flatten_forward(dt_layer_t *l, const float *x, float *y,
                                   int batch, int train)
{
    return dt_device_copy(l->dev, y, l->dev->mem, x, l->dev->mem,
                          (size_t)batch * dt_layer_in_size(l) * sizeof *x);
}

static dt_status_t flatten_backward(dt_layer_t *l, const float *x,
                                    const float *y, const float *dy,
                                    float *dx, int batch)
{
    if (!dx)
        return DT_OK;
    return dt_device_copy(l->dev, dx, l->dev->mem, dy, l->dev->mem,
                          (size_t)batch * dt_layer_in_size(l) * sizeof *dy);
}

const dt_layer_ops_t dt_layer_flatten = {
    "flatten", flatten_setup, flatten_scratch, flatten_forward,
    flatten_backward, NULL};
