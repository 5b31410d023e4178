/* flatten.c — (c, h, w) -> (c*h*w): the data is already in that order,
 * so forward and backward are copies; from an NHWC model's (h, w, c)
 * (layer.h) transposes, so the features (and the next linear layer's
 * weights) keep NCHW order in both layouts. */
#include "config.h"

#include "layer.h"
#include "nn/device_step.h"
#include "model.h"

static dt_status_t flatten_setup(dt_layer_t *l, char *why, size_t why_len)
{
    l->out_c = (int)dt_layer_in_size(l), l->out_h = 1, l->out_w = 1;
    l->out_flat = 1;
    return DT_OK;
}

static size_t flatten_scratch(const dt_layer_t *l, int batch) { return 0; }

/* an NHWC input with more than one pixel: not in NCHW order */
static int transposes(const dt_layer_t *l)
{
    return l->nhwc && l->in_h * l->in_w > 1 && l->in_c > 1;
}

static dt_status_t flatten_forward(dt_layer_t *l, const float *x, float *y,
                                   int batch, int train)
{
    if (transposes(l)) {
        dt_nhwc_to_nchw(x, y, batch, l->in_c, l->in_h * l->in_w);
        return DT_OK;
    }
    /* queued on the device's stream: no host wait inside forward */
    return dt_device_copy_async(l->dev, y, x,
                                (size_t)batch * dt_layer_in_size(l) *
                                    sizeof *x, NULL);
}

static dt_status_t flatten_backward(dt_layer_t *l, const float *x,
                                    const float *y, const float *dy,
                                    float *dx, int batch)
{
    if (!dx)
        return DT_OK;
    if (transposes(l)) {
        dt_nchw_to_nhwc(dy, dx, batch, l->in_c, l->in_h * l->in_w);
        return DT_OK;
    }
    /* queued on the device's stream: no host wait inside backward */
    return dt_device_copy_async(l->dev, dx, dy,
                                (size_t)batch * dt_layer_in_size(l) *
                                    sizeof *dy, NULL);
}

const dt_layer_ops_t dt_layer_flatten = {
    "flatten", flatten_setup, flatten_scratch, flatten_forward,
    flatten_backward, NULL};
