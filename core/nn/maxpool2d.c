/* maxpool2d.c — max over k x k windows with stride s (default k), no
 * padding. Forward remembers where each maximum was (first one on ties);
 * backward routes dy there. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "coll/simd_clones.h"
#include "layer.h"
#include "maxpool2.h"

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

/* The common 2x2 window with stride 2 runs maxpool2.c's kernels. */
int dt_maxpool2_fusable(const dt_layer_t *l)
{
    return (int)l->args[0] == 2 && (int)l->args[1] == 2;
}

/* c's bits where take (all ones), else v's: a select that vectorizes
 * (a float compare feeding `?:` stays a branch in gcc by default) */
static inline float take_if(uint32_t take, float c, float v)
{
    uint32_t cu, vu;
    memcpy(&cu, &c, sizeof cu);
    memcpy(&vu, &v, sizeof vu);
    vu = (cu & take) | (vu & ~take);
    memcpy(&v, &vu, sizeof v);
    return v;
}

/* Any k x k window at stride s, a row of outputs at a time: each window
 * place in row-major order is compared along the whole output row (which
 * vectorizes), so every window still sees its places in the order of one
 * window at a time: the first place, replaced by each later one strictly
 * greater (ties: the first; a NaN first stays, a later one never wins). */
static inline __attribute__((always_inline)) void
pool_plane_at(const float *restrict xp, float *restrict yp, int *restrict ap,
              int in_w, int out_h, int out_w, int k, int s)
{
    for (int oy = 0; oy < out_h; oy++) {
        float *restrict yr = yp + (size_t)oy * out_w;
        int *restrict ar = ap + (size_t)oy * out_w;
        int base = oy * s * in_w;
        for (int ox = 0; ox < out_w; ox++) {
            yr[ox] = xp[base + ox * s];
            ar[ox] = base + ox * s;
        }
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                if (i == 0 && j == 0)
                    continue;
                int at = base + i * in_w + j;
                const float *ri = xp + at;
                for (int ox = 0; ox < out_w; ox++) {
                    uint32_t take = -(uint32_t)(ri[ox * s] > yr[ox]);
                    yr[ox] = take_if(take, ri[ox * s], yr[ox]);
                    ar[ox] = (int)(((uint32_t)(at + ox * s) & take) |
                                   ((uint32_t)ar[ox] & ~take));
                }
            }
    }
}

/* Strides 1 and 2 (the usual overlapping windows) as constants: their
 * loads along the row are contiguous or split by shuffles, instead of
 * one float at a time. */
DT_SIMD_CLONES
static void pool_plane_any(const float *restrict xp, float *restrict yp,
                           int *restrict ap, int in_w, int out_h, int out_w,
                           int k, int s)
{
    if (s == 1)
        pool_plane_at(xp, yp, ap, in_w, out_h, out_w, k, 1);
    else if (s == 2)
        pool_plane_at(xp, yp, ap, in_w, out_h, out_w, k, 2);
    else
        pool_plane_at(xp, yp, ap, in_w, out_h, out_w, k, s);
}

static dt_status_t pool_forward(dt_layer_t *l, const float *x, float *y,
                                int batch, int train)
{
    int k = (int)l->args[0], s = (int)l->args[1];
    int *arg = (int *)(void *)l->scratch;
    int planes = batch * l->in_c;
    DT_CUDA_DISPATCH(l->dev,
                     maxpool_forward(l->dev, x, y, arg, planes,
                                             l->in_h, l->in_w, l->out_h,
                                             l->out_w, k, s));
    size_t in_plane = (size_t)l->in_h * l->in_w,
           out_plane = (size_t)l->out_h * l->out_w;
    if (k == 2 && s == 2) {
        for (int pl = 0; pl < planes; pl++)
            dt_maxpool2_plane(x + pl * in_plane, y + pl * out_plane,
                        arg + pl * out_plane, l->in_w, l->out_h, l->out_w);
        return DT_OK;
    }
    for (int pl = 0; pl < planes; pl++)
        pool_plane_any(x + pl * in_plane, y + pl * out_plane,
                       arg + pl * out_plane, l->in_w, l->out_h, l->out_w, k,
                       s);
    return DT_OK;
}

static dt_status_t pool_backward(dt_layer_t *l, const float *x,
                                 const float *y, const float *dy, float *dx,
                                 int batch)
{
    if (!dx)
        return DT_OK;
    int k = (int)l->args[0], s = (int)l->args[1];
    const int *arg = (const int *)(const void *)l->scratch;
    int planes = batch * l->in_c;
    DT_CUDA_DISPATCH(l->dev,
                     maxpool_backward(l->dev, dy, arg, dx, planes,
                                              l->in_h * l->in_w,
                                              l->out_h * l->out_w));
    size_t in_plane = (size_t)l->in_h * l->in_w,
           out_plane = (size_t)l->out_h * l->out_w;
    if (k == 2 && s == 2) {
        for (int pl = 0; pl < planes; pl++)
            dt_unpool2_plane(dy + pl * out_plane, arg + pl * out_plane, NULL,
                             dx + pl * in_plane, l->in_h, l->in_w, l->out_h,
                             l->out_w);
        return DT_OK;
    }
    memset(dx, 0, (size_t)planes * in_plane * sizeof *dx);
    for (int pl = 0; pl < planes; pl++)
        for (size_t o = 0; o < out_plane; o++)
            dx[pl * in_plane + arg[pl * out_plane + o]] +=
                dy[pl * out_plane + o];
    return DT_OK;
}

const dt_layer_ops_t dt_layer_maxpool2d = {"maxpool", pool_setup, pool_scratch,
                                           pool_forward, pool_backward,
                                           NULL};
