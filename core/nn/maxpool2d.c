/* maxpool2d.c — max over k x k windows with stride s (default k), no
 * padding. Forward remembers where each maximum was (first one on ties);
 * backward routes dy there. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* The common 2x2 window with stride 2, without branches: which of the four
 * is largest is data (half the compares would be mispredicted), so it is
 * chosen with selects, in the generic loop's order (first one on ties). */
int dt_maxpool2_fusable(const dt_layer_t *l)
{
    return (int)l->args[0] == 2 && (int)l->args[1] == 2;
}

void dt_maxpool2_plane(const float *restrict xp, float *restrict yp,
                       int *restrict ap, int in_w, int out_h, int out_w)
{
    for (int oy = 0; oy < out_h; oy++) {
        const float *r0 = xp + (size_t)2 * oy * in_w, *r1 = r0 + in_w;
        float *yr = yp + (size_t)oy * out_w;
        int *ar = ap + (size_t)oy * out_w, base = 2 * oy * in_w;
        for (int ox = 0; ox < out_w; ox++) {
            float v = r0[2 * ox];
            int at = base + 2 * ox;
            float c = r0[2 * ox + 1];
            at = c > v ? base + 2 * ox + 1 : at;
            v = c > v ? c : v;
            c = r1[2 * ox];
            at = c > v ? base + in_w + 2 * ox : at;
            v = c > v ? c : v;
            c = r1[2 * ox + 1];
            at = c > v ? base + in_w + 2 * ox + 1 : at;
            v = c > v ? c : v;
            yr[ox] = v;
            ar[ox] = at;
        }
    }
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
    for (int pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * in_plane;
        for (int oy = 0; oy < l->out_h; oy++)
            for (int ox = 0; ox < l->out_w; ox++) {
                int best = oy * s * l->in_w + ox * s;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        int at = (oy * s + i) * l->in_w + ox * s + j;
                        best = xp[at] > xp[best] ? at : best;
                    }
                size_t o = pl * out_plane + (size_t)oy * l->out_w + ox;
                y[o] = xp[best];
                arg[o] = best;
            }
    }
    return DT_OK;
}

/* 2x2, stride 2: the windows tile the plane, so every input pixel is
 * written once (dy at the argmax, 0 elsewhere) instead of zeroing the
 * plane and scattering; an odd last row or column belongs to no window. */
/* g where keep is true, else +0, by masking the bits: compilers turn a
 * `keep ? g : 0.0f` here into branches, mispredicted on real data. */
static inline float keep_if(float g, int keep)
{
    uint32_t u;
    memcpy(&u, &g, sizeof u);
    u &= -(uint32_t)(keep != 0);
    memcpy(&g, &u, sizeof g);
    return g;
}

void dt_unpool2_plane(const float *restrict dyp, const int *restrict ap,
                      const float *restrict relu_y, float *restrict dxp,
                      int in_h, int in_w, int out_h, int out_w)
{
    for (int oy = 0; oy < out_h; oy++) {
        float *r0 = dxp + (size_t)2 * oy * in_w, *r1 = r0 + in_w;
        const float *dyr = dyp + (size_t)oy * out_w;
        const float *yr = relu_y ? relu_y + (size_t)oy * out_w : NULL;
        const int *ar = ap + (size_t)oy * out_w;
        int base = 2 * oy * in_w;
        for (int ox = 0; ox < out_w; ox++) {
            float g = dyr[ox];
            if (yr) /* the max is the relu's output there */
                g = keep_if(g, yr[ox] > 0.0f);
            int at = ar[ox] - base - 2 * ox;
            r0[2 * ox] = keep_if(g, at == 0);
            r0[2 * ox + 1] = keep_if(g, at == 1);
            r1[2 * ox] = keep_if(g, at == in_w);
            r1[2 * ox + 1] = keep_if(g, at == in_w + 1);
        }
        if (in_w > 2 * out_w)
            r0[in_w - 1] = r1[in_w - 1] = 0.0f;
    }
    if (in_h > 2 * out_h)
        memset(dxp + (size_t)(in_h - 1) * in_w, 0, (size_t)in_w * sizeof *dxp);
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
