/* maxpool2d.c — max over k x k windows with stride s (default k), no
 * padding. Forward remembers where each maximum was (first one on ties);
 * backward routes dy there. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "layer.h"

static dt_status_t pool_setup(dt_layer_t *l, char *why, size_t why_len)
{
    int k = (int)l->args[0], s = (int)l->args[1];
    if (l->in_flat) {
        snprintf(why, why_len,
                 "maxpool needs an image input but gets a flat vector of %d: "
                 "move it before flatten", l->in_c);
        return DT_ERR_INVALID;
    }
    if (k > l->in_h || k > l->in_w) {
        snprintf(why, why_len, "maxpool window %dx%d is larger than its "
                 "%dx%d input", k, k, l->in_h, l->in_w);
        return DT_ERR_INVALID;
    }
    l->out_c = l->in_c;
    l->out_h = (l->in_h - k) / s + 1;
    l->out_w = (l->in_w - k) / s + 1;
    l->out_flat = 0;
    return DT_OK;
}

/* One int (stored in a float's space) per output: the argmax's offset in
 * its input plane. */
static size_t pool_scratch(const dt_layer_t *l, int batch)
{
    return (size_t)batch * dt_layer_out_size(l);
}

static dt_status_t pool_forward(dt_layer_t *l, const float *x, float *y,
                                int batch, int train)
{
    int k = (int)l->args[0], s = (int)l->args[1];
    int *arg = (int *)(void *)l->scratch;
    int planes = batch * l->in_c;
    DT_CUDA_DISPATCH(l->dev,
                     dt_cuda_maxpool_forward(l->dev, x, y, arg, planes,
                                             l->in_h, l->in_w, l->out_h,
                                             l->out_w, k, s));
    size_t in_plane = (size_t)l->in_h * l->in_w,
           out_plane = (size_t)l->out_h * l->out_w;
    for (int pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * in_plane;
        for (int oy = 0; oy < l->out_h; oy++)
            for (int ox = 0; ox < l->out_w; ox++) {
                int best = oy * s * l->in_w + ox * s;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        int at = (oy * s + i) * l->in_w + ox * s + j;
                        if (xp[at] > xp[best])
                            best = at;
                    }
                size_t o = pl * out_plane + (size_t)oy * l->out_w + ox;
                y[o] = xp[best];
                arg[o] = best;
            }
    }
    return DT_OK;
}

static dt_status_t pool_backward(dt_layer_t *l, const float *x,
                                 const float *y, const float *dy, float *dx,
                                 int batch)
{
    if (!dx)
        return DT_OK;
    const int *arg = (const int *)(const void *)l->scratch;
    int planes = batch * l->in_c;
    DT_CUDA_DISPATCH(l->dev,
                     dt_cuda_maxpool_backward(l->dev, dy, arg, dx, planes,
                                              l->in_h * l->in_w,
                                              l->out_h * l->out_w));
    size_t in_plane = (size_t)l->in_h * l->in_w,
           out_plane = (size_t)l->out_h * l->out_w;
    memset(dx, 0, (size_t)planes * in_plane * sizeof *dx);
    for (int pl = 0; pl < planes; pl++)
        for (size_t o = 0; o < out_plane; o++)
            dx[pl * in_plane + arg[pl * out_plane + o]] +=
                dy[pl * out_plane + o];
    return DT_OK;
}

const dt_layer_ops_t dt_layer_maxpool2d = {"maxpool", pool_setup, pool_scratch,
                                           pool_forward, pool_backward};
