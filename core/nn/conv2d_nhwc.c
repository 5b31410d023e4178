/* conv2d_nhwc.c — conv2d by im2col + GEMM on an NHWC model's activations
 * (layer.h), one sample at a time as conv2d_cpu.c does for NCHW (the
 * Winograd layers have their own NHWC path in conv2d_winograd.c).
 *
 * A sample's columns are rows of its output pixels, col (plane x K), K =
 * k*k*c ordered (kernel row, kernel column, channel): every patch entry
 * is a run of c contiguous input floats, and the output y_b = col Wt^T
 * (plane x out) is already the sample's NHWC output. Wt is W (out, c, k,
 * k) reordered to (out, k, k, c) once per call; dW comes back through
 * the same reorder. A 1x1 kernel needs none (W is Wt), and a 1x1,
 * stride 1, unpadded conv reads x_b itself as its columns.
 *
 * With fewer than PLANAR_C input channels (a first layer: gray or RGB
 * images) those runs are 1-3 floats long, and NCHW's im2col (runs along
 * the rows of a plane, W as it is) is several times faster: the sample
 * goes to NCHW (nothing to do for one channel) and the GEMMs read col
 * transposed, so y_b still comes out NHWC.
 *
 * Forward:  y_b = im2col(x_b) Wt^T + b (then relu if fused).
 * Backward: dWt = sum_b dy_b^T col_b; db = column sums of dy;
 *           dx_b = col2im(dy_b Wt). */
#include "config.h"

#include <string.h>

#include "conv2d_nhwc.h"
#include "im2col.h"
#include "model.h"

#define PLANAR_C 8

typedef struct nhwc_geom {
    int c, h, w, k, s, pad, oh, ow, out, K, plane;
} nhwc_geom_t;

static nhwc_geom_t geom_of(const dt_layer_t *l)
{
    nhwc_geom_t g = {l->in_c,          l->in_h,         l->in_w,
                     (int)l->args[1],  (int)l->args[2], (int)l->args[3],
                     l->out_h,         l->out_w,        l->out_c,
                     (int)l->fan_in,   l->out_h * l->out_w};
    return g;
}

static int is_pointwise(const nhwc_geom_t *g)
{
    return g->k == 1 && g->s == 1 && g->pad == 0;
}

static int planar(const dt_layer_t *l) { return l->in_c < PLANAR_C; }

/* the NCHW geometry of one sample, for dt_im2col_cpu */
static dt_conv_geom_t planar_geom(const nhwc_geom_t *g)
{
    dt_conv_geom_t cg = {.n = 1, .c = g->c, .h = g->h, .w = g->w, .k = g->k,
                         .s = g->s, .pad = g->pad, .oh = g->oh, .ow = g->ow};
    return cg;
}

size_t dt_conv2d_nhwc_scratch(const dt_layer_t *l)
{
    size_t plane = (size_t)l->out_h * l->out_w;
    size_t extra = planar(l) ? dt_layer_in_size(l) /* the NCHW sample */
                   : (int)l->args[1] > 1 ? 2 * l->nweights
                                         : 0;
    return (l->fan_in + (size_t)l->out_c) * plane + extra;
}

/* The copies of c floats below are short (16-64 floats): GCC would make
 * each a memcpy call, which costs more than the copy. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_MEMCPY_CALLS                                                       \
    __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_MEMCPY_CALLS
#endif

/* col[p][(ki k + kj) c + ci] = x[(iy, ix)][ci], 0 outside the image */
NO_MEMCPY_CALLS
static void im2col(const nhwc_geom_t *g, const float *restrict x,
                   float *restrict col)
{
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            float *d = col + ((size_t)oy * g->ow + ox) * g->K;
            for (int ki = 0; ki < g->k; ki++) {
                int iy = oy * g->s - g->pad + ki;
                for (int kj = 0; kj < g->k; kj++, d += g->c) {
                    int ix = ox * g->s - g->pad + kj;
                    if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) {
                        for (int j = 0; j < g->c; j++)
                            d[j] = 0.0f;
                        continue;
                    }
                    const float *src = x + ((size_t)iy * g->w + ix) * g->c;
                    for (int j = 0; j < g->c; j++)
                        d[j] = src[j];
                }
            }
        }
}

/* dx = the sum of col's entries at their input pixels (im2col's adjoint) */
NO_MEMCPY_CALLS
static void col2im(const nhwc_geom_t *g, const float *restrict col,
                   float *restrict dx)
{
    memset(dx, 0, (size_t)g->h * g->w * g->c * sizeof *dx);
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            const float *d = col + ((size_t)oy * g->ow + ox) * g->K;
            for (int ki = 0; ki < g->k; ki++) {
                int iy = oy * g->s - g->pad + ki;
                for (int kj = 0; kj < g->k; kj++, d += g->c) {
                    int ix = ox * g->s - g->pad + kj;
                    if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
                        continue;
                    float *dst = dx + ((size_t)iy * g->w + ix) * g->c;
                    for (int j = 0; j < g->c; j++)
                        dst[j] += d[j];
                }
            }
        }
}

/* (out, c, k, k) -> (out, k, k, c), or back with to_nchw */
static void reorder(const nhwc_geom_t *g, const float *restrict src,
                    float *restrict dst, int to_nchw)
{
    int kk = g->k * g->k;
    for (int o = 0; o < g->out; o++)
        for (int ci = 0; ci < g->c; ci++)
            for (int t = 0; t < kk; t++) {
                size_t nchw = ((size_t)o * g->c + ci) * kk + t,
                       nhwc = ((size_t)o * kk + t) * g->c + ci;
                if (to_nchw)
                    dst[nchw] = src[nhwc];
                else
                    dst[nhwc] = src[nchw];
            }
}

/* The reordered weights: l->w itself for a 1x1 kernel. */
static const float *weights(const dt_layer_t *l, const nhwc_geom_t *g,
                            float *wt)
{
    if (g->k == 1)
        return l->w;
    reorder(g, l->w, wt, 0);
    return wt;
}

dt_status_t dt_conv2d_nhwc_forward(dt_layer_t *l, const float *x, float *y,
                                   int batch)
{
    nhwc_geom_t g = geom_of(l);
    size_t in_len = dt_layer_in_size(l), out_len = dt_layer_out_size(l);
    float *col = l->scratch,
          *wt = col + ((size_t)g.K + g.out) * g.plane;
    const float *w = planar(l) ? l->w : weights(l, &g, wt);
    float floor = l->fused ? 0.0f : -__builtin_inff();
    for (int b = 0; b < batch; b++) {
        const float *cb = x + (size_t)b * in_len;
        float *yb = y + (size_t)b * out_len;
        if (planar(l)) { /* col (K x plane) as NCHW's; W as it is */
            dt_conv_geom_t cg = planar_geom(&g);
            if (g.c > 1) {
                dt_nhwc_to_nchw(cb, wt, 1, g.c, g.h * g.w);
                cb = wt;
            }
            dt_im2col_cpu(&cg, cb, col);
            DT_CHECK(dt_gemm(l->dev, 1, 1, g.plane, g.out, g.K, 1.0f, col,
                             g.plane, l->w, g.K, 0.0f, yb, g.out));
        } else {
            if (!is_pointwise(&g)) {
                im2col(&g, cb, col);
                cb = col;
            }
            DT_CHECK(dt_gemm(l->dev, 0, 1, g.plane, g.out, g.K, 1.0f, cb,
                             g.K, w, g.K, 0.0f, yb, g.out));
        }
        for (int p = 0; p < g.plane; p++) { /* bias, then the fused relu */
            float *restrict row = yb + (size_t)p * g.out;
            for (int o = 0; o < g.out; o++) {
                float v = row[o] + l->b[o];
                row[o] = v > floor ? v : floor;
            }
        }
    }
    return DT_OK;
}

/* One sample's backward by NCHW's columns (planar()): dW += dy_b^T
 * col^T, then dx_b = col2im(W^T dy_b^T) back in NHWC. xt: the sample in
 * NCHW (c h w floats of room). */
static dt_status_t planar_backward(dt_layer_t *l, const nhwc_geom_t *g,
                                   const float *xb, const float *dyb, int b,
                                   float *col, float *xt, float *dxb)
{
    dt_conv_geom_t cg = planar_geom(g);
    if (g->c > 1) {
        dt_nhwc_to_nchw(xb, xt, 1, g->c, g->h * g->w);
        xb = xt;
    }
    dt_im2col_cpu(&cg, xb, col);
    DT_CHECK(dt_gemm(l->dev, 1, 1, g->out, g->K, g->plane, 1.0f, dyb, g->out,
                     col, g->plane, b ? 1.0f : 0.0f, l->dw, g->K));
    if (!dxb)
        return DT_OK;
    DT_CHECK(dt_gemm(l->dev, 1, 1, g->K, g->plane, g->out, 1.0f, l->w, g->K,
                     dyb, g->out, 0.0f, col, g->plane));
    if (g->c == 1) { /* one channel: NCHW is NHWC */
        dt_col2im_cpu(&cg, col, dxb);
        return DT_OK;
    }
    dt_col2im_cpu(&cg, col, xt);
    dt_nchw_to_nhwc(xt, dxb, 1, g->c, g->h * g->w);
    return DT_OK;
}

dt_status_t dt_conv2d_nhwc_backward(dt_layer_t *l, const float *x,
                                    const float *y, const float *dy,
                                    float *dx, int batch)
{
    nhwc_geom_t g = geom_of(l);
    size_t in_len = dt_layer_in_size(l), out_len = dt_layer_out_size(l);
    float *col = l->scratch, *masked = col + (size_t)g.K * g.plane,
          *wt = masked + (size_t)g.out * g.plane,
          *dwt = g.k == 1 || planar(l) ? l->dw : wt + l->nweights;
    const float *w = planar(l) ? l->w : weights(l, &g, wt);
    for (int o = 0; o < g.out; o++)
        l->db[o] = 0.0f;
    for (int b = 0; b < batch; b++) {
        const float *dyb = dy + (size_t)b * out_len;
        if (l->fused) { /* y is the relu's: dy where y > 0 */
            const float *restrict yb = y + (size_t)b * out_len;
            for (size_t i = 0; i < out_len; i++) {
                float v = dyb[i];
                masked[i] = yb[i] > 0.0f ? v : 0.0f;
            }
            dyb = masked;
        }
        for (int p = 0; p < g.plane; p++) {
            const float *restrict row = dyb + (size_t)p * g.out;
            for (int o = 0; o < g.out; o++)
                l->db[o] += row[o];
        }
        const float *cb = x + (size_t)b * in_len;
        if (planar(l)) {
            DT_CHECK(planar_backward(l, &g, cb, dyb, b, col, wt,
                                     dx ? dx + (size_t)b * in_len : NULL));
            continue;
        }
        int direct = is_pointwise(&g);
        if (!direct) {
            im2col(&g, cb, col);
            cb = col;
        }
        DT_CHECK(dt_gemm(l->dev, 1, 0, g.out, g.K, g.plane, 1.0f, dyb, g.out,
                         cb, g.K, b ? 1.0f : 0.0f, dwt, g.K));
        if (!dx)
            continue;
        /* col is free again: dcol = dy_b Wt */
        float *dcol = direct ? dx + (size_t)b * in_len : col;
        DT_CHECK(dt_gemm(l->dev, 0, 0, g.plane, g.K, g.out, 1.0f, dyb, g.out,
                         w, g.K, 0.0f, dcol, g.K));
        if (!direct)
            col2im(&g, col, dx + (size_t)b * in_len);
    }
    if (g.k > 1 && !planar(l))
        reorder(&g, dwt, l->dw, 1);
    return DT_OK;
}
