/* im2col.c — patch unfolding for conv2d on the cpu (see im2col.h).
 * Each (kernel row, kernel column, output row) is one run of ow entries:
 * the columns whose input pixel falls outside the image are a zero prefix
 * and suffix, computed once per run, so the inner loops carry no bounds
 * checks and vectorize. */
#include "config.h"

#include <stddef.h>
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

/* Stride 1 with "same" width (ow == w): a column row of one sample is its
 * image plane shifted by (ki - pad) rows and off columns, so it is one
 * long copy; the columns that wrapped around to the neighbouring image
 * row are then zeroed, as are the rows above and below the image. */
static void im2col_row_same(const dt_conv_geom_t *g, const float *img,
                            float *restrict d, int ki, int kj)
{
    int w = g->w, off = kj - g->pad, lo, hi;
    valid_cols(g, kj, &lo, &hi);
    int oy_lo = g->pad - ki > 0 ? g->pad - ki : 0;
    int oy_hi = g->h + g->pad - ki < g->oh ? g->h + g->pad - ki : g->oh;
    size_t plane = (size_t)g->oh * w;
    if (oy_lo >= oy_hi || lo >= hi) {
        memset(d, 0, plane * sizeof *d);
        return;
    }
    ptrdiff_t start = (ptrdiff_t)oy_lo * w + lo,
              end = (ptrdiff_t)(oy_hi - 1) * w + hi,
              shift = (ptrdiff_t)(ki - g->pad) * w + off;
    const float *restrict src = img;
    memset(d, 0, (size_t)start * sizeof *d);
    for (ptrdiff_t p = start; p < end; p++)
        d[p] = src[p + shift];
    memset(d + end, 0, (plane - (size_t)end) * sizeof *d);
    for (int oy = oy_lo; oy < oy_hi; oy++) {
        float *r = d + (size_t)oy * w;
        for (int ox = 0; ox < lo; ox++)
            r[ox] = 0.0f;
        for (int ox = hi; ox < w; ox++)
            r[ox] = 0.0f;
    }
}

void dt_im2col_cpu(const dt_conv_geom_t *g, const float *x, float *col)
{
    if (g->s == 1 && g->ow == g->w) {
        size_t plane = (size_t)g->oh * g->ow, ncols = (size_t)g->n * plane;
        for (int ci = 0; ci < g->c; ci++)
            for (int ki = 0; ki < g->k; ki++)
                for (int kj = 0; kj < g->k; kj++) {
                    size_t row = ((size_t)ci * g->k + ki) * g->k + kj;
                    for (int b = 0; b < g->n; b++)
                        im2col_row_same(
                            g, x + ((size_t)b * g->c + ci) * g->h * g->w,
                            col + row * ncols + (size_t)b * plane, ki, kj);
                }
        return;
    }
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
                        float *restrict d =
                            dst + (size_t)b * plane + (size_t)oy * g->ow;
                        if (iy < 0 || iy >= g->h) {
                            memset(d, 0, (size_t)g->ow * sizeof *d);
                            continue;
                        }
                        const float *restrict src = img + (size_t)iy * g->w;
                        for (int ox = 0; ox < lo; ox++)
                            d[ox] = 0.0f;
                        /* runs are short (ow floats): a loop, not memcpy */
                        if (g->s == 1)
                            for (int ox = lo; ox < hi; ox++)
                                d[ox] = src[ox + off];
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
