/* model_layout.c — which layout a cpu model's activations take between
 * layers (dt_model_set_layout) and the transposes at its edges.
 *
 * NHWC (channels innermost) is what Winograd's transforms and im2col
 * read and write along (contiguous channels, vectorized); in NCHW the
 * Winograd layers transposed every input, output and gradient to and
 * from it. Those transposes were ~12% of a ResNet-20 step by perf, but
 * NHWC's own copies run at memory speed too: measured 2% per step
 * (docs/PERFORMANCE.md#layout).
 * A layer that has no NHWC form keeps the whole model in NCHW (auto) or
 * refuses NHWC (asked for), naming itself: one layout per model, no
 * conversions between layers. */
#include "config.h"

#include <string.h>

#include <dt/log.h>
#include "model.h"

/* Why layer l cannot run in NHWC; NULL: it can. */
static const char *nhwc_missing(const dt_layer_t *l)
{
    const dt_layer_ops_t *o = l->ops;
    if (o == &dt_layer_conv2d)
        return l->fused == 2 ? "its fused max pool runs in NCHW only"
                             : NULL;
    if (o == &dt_layer_batchnorm || o == &dt_layer_relu ||
        o == &dt_layer_add || o == &dt_layer_gap ||
        o == &dt_layer_flatten || o == &dt_layer_linear)
        return NULL;
    /* dropout's mask is a hash of the element's index: in NHWC the same
     * index is another element, and cpu and cuda would drop differently */
    if (o == &dt_layer_dropout)
        return dt_layer_in_size(l) == (size_t)l->in_c
                   ? NULL
                   : "dropout on an image draws its mask in NCHW order";
    return "it runs in NCHW only";
}

dt_status_t dt_model_pick_layout(dt_model_t *m)
{
    int cpu = m->dev && m->dev->kind == DT_DEVICE_CPU, convs = 0, ok = 1;
    for (int i = 0; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        convs += l->ops == &dt_layer_conv2d;
        const char *why = nhwc_missing(l);
        if (!why)
            continue;
        if (cpu && m->layout == DT_LAYOUT_NHWC) {
            dt_error("layer %d '%s' cannot run with [model] layout = nhwc: "
                     "%s; use layout = auto or nchw", i, l->desc, why);
            return DT_ERR_UNSUPPORTED;
        }
        ok = 0;
    }
    /* without a conv every activation is a vector: both are the same */
    m->nhwc = cpu && ok && convs && m->layout != DT_LAYOUT_NCHW;
    for (int i = 0; i < m->nlayers; i++)
        m->layers[i].nhwc = m->nhwc;
    return DT_OK;
}

dt_status_t dt_layout_parse(const char *name, dt_layout_t *layout)
{
    static const char *const names[] = {"auto", "nchw", "nhwc"};
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *layout = (dt_layout_t)i;
            return DT_OK;
        }
    return DT_ERR_INVALID;
}

dt_layout_t dt_model_layout(const dt_model_t *m)
{
    return m->nhwc ? DT_LAYOUT_NHWC : DT_LAYOUT_NCHW;
}

void dt_nchw_to_nhwc(const float *x, float *y, int batch, int c, int plane)
{
    for (int b = 0; b < batch; b++) {
        const float *xb = x + (size_t)b * c * plane;
        float *yb = y + (size_t)b * c * plane;
        for (int p = 0; p < plane; p++)
            for (int k = 0; k < c; k++)
                yb[(size_t)p * c + k] = xb[(size_t)k * plane + p];
    }
}

void dt_nhwc_to_nchw(const float *x, float *y, int batch, int c, int plane)
{
    for (int b = 0; b < batch; b++) {
        const float *xb = x + (size_t)b * c * plane;
        float *yb = y + (size_t)b * c * plane;
        for (int k = 0; k < c; k++)
            for (int p = 0; p < plane; p++)
                yb[(size_t)k * plane + p] = xb[(size_t)p * c + k];
    }
}
