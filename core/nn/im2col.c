/* im2col.c — patch unfolding for conv2d on the cpu (see im2col.h). */
#include "config.h"

#include <string.h>

#include "im2col.h"

void dt_im2col_cpu(const dt_conv_geom_t *g, const float *x, float *col)
{
    size_t plane = (size_t)g->oh * g->ow, ncols = (size_t)g->n * plane;
    for (int ci = 0; ci < g->c; ci++)
        for (int ki = 0; ki < g->k; ki++)
            for (int kj = 0; kj < g->k; kj++) {
                size_t row = ((size_t)ci * g->k + ki) * g->k + kj;
                float *dst = col + row * ncols;
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
                        for (int ox = 0; ox < g->ow; ox++) {
                            int ix = ox * g->s - g->pad + kj;
                            d[ox] = ix >= 0 && ix < g->w ? src[ix] : 0.0f;
                        }
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
                for (int b = 0; b < g->n; b++) {
                    float *img = dx + ((size_t)b * g->c + ci) * g->h * g->w;
                    for (int oy = 0; oy < g->oh; oy++) {
                        int iy = oy * g->s - g->pad + ki;
                        if (iy < 0 || iy >= g->h)
                            continue;
                        const float *s =
                            srcrow + (size_t)b * plane + (size_t)oy * g->ow;
                        float *dst = img + (size_t)iy * g->w;
                        for (int ox = 0; ox < g->ow; ox++) {
                            int ix = ox * g->s - g->pad + kj;
                            if (ix >= 0 && ix < g->w)
                                dst[ix] += s[ox];
                        }
                    }
                }
            }
}
