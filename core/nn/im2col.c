/* im2col.c — patch unfolding for conv2d on the cpu (see im2col.h).
 * Each (kernel row, kernel column, output row) is one run of ow entries:
 * the columns whose input pixel falls outside the image are a zero prefix
 * and suffix, computed once per run, so the inner loops carry no bounds
 * checks and vectorize. */
#include "config.h"

#include <string.h>

#include "im2col.h"

/* The output columns [lo, hi) whose input column ox*s - pad + kj lies in
 * [0, w). */
static void valid_cols(const dt_conv_geom_t *g, int kj, int *lo, int *hi)
{
    int off = kj - g->pad; /* input column of output column 0 */
    int a = off >= 0 ? 0 : (-off + g->s - 1) / g->s;
    int b = g->w - 1 - off < 0 ? 0 : (g->w - 1 - off) / g->s + 1;
    if (b > g->ow)
        b = g->ow;
    if (a > b)
        a = b;
    *lo = a, *hi = b;
}

void dt_im2col_cpu(const dt_conv_geom_t *g, const float *x, float *col)
{
    size_t plane = (size_t)g->oh * g->ow, ncols = (size_t)g->n * plane;
    for (int ci = 0; ci < g->c; ci++)
        for (int ki = 0; ki < g->k; ki++)
            for (int kj = 0; kj < g->k; kj++) {
                size_t row = ((size_t)ci * g->k + ki) * g->k + kj;
                float *dst = col + row * ncols;
                int lo, hi, off = kj - g->pad;
                valid_cols(g, kj, &lo, &hi);
                for (int b = 0; b < g->n; b++) {
                    const float *img =
                        x + ((size_t)b * g->c + ci) * g->h * g->w;
                    for (int oy = 0; oy < g->oh; oy++) {
                        int iy = oy * g->s - g->pad + ki;
                        float *d = dst + (size_t)b * plane + (size_t)oy * g->ow;
                        if (iy < 0 || iy >= g->h) {
                            memset(d, 0, (size_t)g->ow * sizeof *d);
                            continue;
                        }
                        const float *src = img + (size_t)iy * g->w;
                        for (int ox = 0; ox < lo; ox++)
                            d[ox] = 0.0f;
                        if (g->s == 1)
                            memcpy(d + lo, src + lo + off,
                                   (size_t)(hi - lo) * sizeof *d);
                        else
                            for (int ox = lo; ox < hi; ox++)
                                d[ox] = src[ox * g->s + off];
                        for (int ox = hi; ox < g->ow; ox++)
                            d[ox] = 0.0f;
                    }
                }
            }
}

void dt_col2im_cpu(const dt_conv_geom_t *g, const float *col, float *dx)
{
    size_t plane = (size_t)g->oh * g->ow, ncols = (size_t)g->n * plane;
    memset(dx, 0, (size_t)g->n * g->c * g->h * g->w * sizeof *dx);
    for (int ci = 0; ci < g->c; ci++)
        for (int ki = 0; ki < g->k; ki++)
            for (int kj = 0; kj < g->k; kj++) {
                size_t row = ((size_t)ci * g->k + ki) * g->k + kj;
                const float *srcrow = col + row * ncols;
                int lo, hi, off = kj - g->pad;
                valid_cols(g, kj, &lo, &hi);
                for (int b = 0; b < g->n; b++) {
                    float *img = dx + ((size_t)b * g->c + ci) * g->h * g->w;
                    for (int oy = 0; oy < g->oh; oy++) {
                        int iy = oy * g->s - g->pad + ki;
                        if (iy < 0 || iy >= g->h)
                            continue;
                        const float *restrict s =
                            srcrow + (size_t)b * plane + (size_t)oy * g->ow;
                        float *restrict dst = img + (size_t)iy * g->w;
                        if (g->s == 1)
                            for (int ox = lo; ox < hi; ox++)
                                dst[ox + off] += s[ox];
                        else
                            for (int ox = lo; ox < hi; ox++)
                                dst[ox * g->s + off] += s[ox];
                    }
                }
            }
}
