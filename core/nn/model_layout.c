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
 * refuses NHWC (asked for), naming itself, here and in dtctl before any
 * worker starts (dt_model_check_nhwc): one layout per model, no
 * conversions between layers. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include "model.h"

/* Why layer l cannot run in NHWC; NULL: it can. The rule reads the
 * layers as written, so that dtctl (on the parsed model) and
 * dt_model_init (after the cpu fusions) agree: a conv fused with the relu
 * and max pool after it runs that pool's NCHW kernel, and the maxpool,
 * still in the list, refuses for both. An NHWC max pool would need an
 * NHWC fused kernel too (model_init.c fuse_layers). */
static const char *nhwc_missing(const dt_layer_t *l)
{
    const dt_layer_ops_t *o = l->ops;
    if (o == &dt_layer_conv2d || o == &dt_layer_batchnorm ||
        o == &dt_layer_relu || o == &dt_layer_add || o == &dt_layer_gap ||
        o == &dt_layer_flatten || o == &dt_layer_linear)
        return NULL;
    if (o == &dt_layer_maxpool2d)
        return "max pooling runs in NCHW only; a conv with stride=2 "
               "downsamples in both";
    if (o == &dt_layer_avgpool)
        return "average pooling runs in NCHW only; gap runs in both";
    /* dropout's mask is a hash of the element's index: in NHWC the same
     * index is another element, and cpu and cuda would drop differently */
    if (o == &dt_layer_dropout)
        return dt_layer_in_size(l) == (size_t)l->in_c
                   ? NULL
                   : "dropout on an image draws its mask in NCHW order; "
                     "after flatten it runs in both";
    return "it runs in NCHW only";
}

/* The first layer from `from` on that has no NHWC form, its reason in
 * *why; -1: none. */
static int nhwc_blocker(const dt_model_t *m, int from, const char **why)
{
    for (int i = from; i < m->nlayers; i++)
        if ((*why = nhwc_missing(&m->layers[i])))
            return i;
    return -1;
}

/* Append "layer I 'DESC' (WHY)" for each blocker to buf, joined by ", "
 * and a last " and "; at most 4, then how many more. How many in all. */
static int list_blockers(const dt_model_t *m, char *buf, size_t len)
{
    enum { SHOWN = 4 };
    int n = 0, total = 0, at = 0;
    const char *why;
    for (int i = nhwc_blocker(m, 0, &why); i >= 0;
         i = nhwc_blocker(m, i + 1, &why))
        total++;
    for (int i = nhwc_blocker(m, 0, &why); i >= 0 && n < SHOWN;
         i = nhwc_blocker(m, i + 1, &why), n++) {
        const char *sep = n == 0 ? ""
                          : n + 1 == total ? " and " : ", ";
        at += snprintf(buf + at, len - (size_t)at, "%slayer %d '%s' (%s)",
                       sep, i, m->layers[i].desc, why);
        if ((size_t)at >= len)
            return total;
    }
    if (total > SHOWN)
        snprintf(buf + at, len - (size_t)at, " and %d more", total - SHOWN);
    return total;
}

dt_status_t dt_model_check_nhwc(const dt_model_t *m, const char *where)
{
    char list[1024] = "";
    int n = list_blockers(m, list, sizeof list);
    if (n == 0)
        return DT_OK;
    /* where: the job file's line (dtctl, dt-train); none from the C API */
    dt_error("%s%s%s, but %s %s no NHWC form: %s, or change %s",
             where ? where : "", where ? ": " : "",
             where ? "[model] layout = nhwc" : "layout DT_LAYOUT_NHWC", list,
             n == 1 ? "has" : "have",
             where ? "set layout = auto (it runs this model in NCHW) or "
                     "nchw"
                   : "use DT_LAYOUT_AUTO (NCHW for this model) or "
                     "DT_LAYOUT_NCHW",
             n == 1 ? "that layer" : "those layers");
    return DT_ERR_UNSUPPORTED;
}

dt_status_t dt_model_pick_layout(dt_model_t *m)
{
    int cpu = m->dev && m->dev->kind == DT_DEVICE_CPU, convs = 0;
    const char *why;
    int ok = nhwc_blocker(m, 0, &why) < 0;
    if (cpu && m->layout == DT_LAYOUT_NHWC && !ok)
        return dt_model_check_nhwc(m, NULL);
    for (int i = 0; i < m->nlayers; i++)
        convs += m->layers[i].ops == &dt_layer_conv2d;
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
