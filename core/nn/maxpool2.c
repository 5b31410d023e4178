/* maxpool2.c — the 2x2, stride 2 max pooling of one plane and its
 * gradient (maxpool2.h), for the maxpool layer and the fused cpu conv.
 *
 * Eight outputs of a row at a time: the two input rows' even and odd
 * columns are split into vectors by shuffles, the maximum and its place
 * chosen by compares and bit selects in the same order as one window at
 * a time (strict >: the first of equal values wins, a NaN never replaces
 * the value held, a NaN first stays), so every lane is bit-identical to
 * the scalar code, which still does rows narrower than eight. The last
 * eight of a row overlap the ones before where the width is not a
 * multiple of eight: those outputs are computed twice, to the same bits.
 * Built for AVX-512 and AVX2 as well as the baseline (simd_clones.h). */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "coll/simd_clones.h"
#include "maxpool2.h"
#include "simd8.h"

#define LANES 8
/* Each lane's column offset in the input row: 2 ox */
#define EVEN_COLS ((v8i){0, 2, 4, 6, 8, 10, 12, 14})

/* b where take_b (all ones), else a: a select of the bits (a macro: a
 * function returning a vector would change the ABI in the baseline) */
#define SELECT8(take_b, b, a)                                                 \
    ((v8f)(((v8i)(b) & (take_b)) | ((v8i)(a) & ~(take_b))))

/* Outputs ox .. ox+7 of one row: r0, r1 its two input rows; base the
 * offset of r0 in the plane. */
static inline __attribute__((always_inline)) void
pool8(const float *restrict r0, const float *restrict r1, float *restrict yr,
      int *restrict ar, int ox, int base, int in_w)
{
    v8f lo = *(const v8f *)(r0 + 2 * ox), hi = *(const v8f *)(r0 + 2 * ox + 8);
    v8f a = SHUF8(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
    v8f b = SHUF8(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
    lo = *(const v8f *)(r1 + 2 * ox), hi = *(const v8f *)(r1 + 2 * ox + 8);
    v8f c = SHUF8(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
    v8f d = SHUF8(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
    v8i gt = b > a, at = gt & 1; /* place in the window: 0, 1, in_w, in_w+1 */
    v8f v = SELECT8(gt, b, a);
    gt = c > v;
    v = SELECT8(gt, c, v);
    at = (gt & in_w) | (at & ~gt);
    gt = d > v;
    v = SELECT8(gt, d, v);
    at = (gt & (in_w + 1)) | (at & ~gt);
    *(v8f *)(yr + ox) = v;
    *(v8i *)(ar + ox) = at + (base + 2 * ox) + EVEN_COLS;
}

/* One window at a time (rows narrower than the vectors). */
static inline __attribute__((always_inline)) void
pool1(const float *restrict r0, const float *restrict r1, float *restrict yr,
      int *restrict ar, int ox, int base, int in_w)
{
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

DT_SIMD_CLONES
static void pool2_plane(const float *restrict xp, float *restrict yp,
                        int *restrict ap, int in_w, int out_h, int out_w)
{
    for (int oy = 0; oy < out_h; oy++) {
        const float *r0 = xp + (size_t)2 * oy * in_w, *r1 = r0 + in_w;
        float *yr = yp + (size_t)oy * out_w;
        int *ar = ap + (size_t)oy * out_w, base = 2 * oy * in_w;
        if (out_w < LANES) {
            for (int ox = 0; ox < out_w; ox++)
                pool1(r0, r1, yr, ar, ox, base, in_w);
            continue;
        }
        int ox = 0;
        for (; ox + LANES <= out_w; ox += LANES)
            pool8(r0, r1, yr, ar, ox, base, in_w);
        if (ox < out_w)
            pool8(r0, r1, yr, ar, out_w - LANES, base, in_w);
    }
}

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

/* dx of the windows of outputs ox .. ox+7: dy at the argmax, +0 at the
 * other three (bits of dy or zero, as keep_if). */
static inline __attribute__((always_inline)) void
unpool8(const float *restrict dyr, const int *restrict ar,
        const float *restrict yr, float *restrict r0, float *restrict r1,
        int ox, int base, int in_w)
{
    v8i g = *(const v8i *)(dyr + ox);
    if (yr) /* the max is the relu's output there */
        g &= *(const v8f *)(yr + ox) > 0.0f;
    v8i at = *(const v8i *)(ar + ox) - (base + 2 * ox) - EVEN_COLS;
    v8i e0 = g & (at == 0), e1 = g & (at == 1);
    v8i e2 = g & (at == in_w), e3 = g & (at == in_w + 1);
    *(v8i *)(r0 + 2 * ox) = SHUF8(e0, e1, 0, 8, 1, 9, 2, 10, 3, 11);
    *(v8i *)(r0 + 2 * ox + 8) = SHUF8(e0, e1, 4, 12, 5, 13, 6, 14, 7, 15);
    *(v8i *)(r1 + 2 * ox) = SHUF8(e2, e3, 0, 8, 1, 9, 2, 10, 3, 11);
    *(v8i *)(r1 + 2 * ox + 8) = SHUF8(e2, e3, 4, 12, 5, 13, 6, 14, 7, 15);
}

static inline __attribute__((always_inline)) void
unpool1(const float *restrict dyr, const int *restrict ar,
        const float *restrict yr, float *restrict r0, float *restrict r1,
        int ox, int base, int in_w)
{
    float g = dyr[ox];
    if (yr)
        g = keep_if(g, yr[ox] > 0.0f);
    int at = ar[ox] - base - 2 * ox;
    r0[2 * ox] = keep_if(g, at == 0);
    r0[2 * ox + 1] = keep_if(g, at == 1);
    r1[2 * ox] = keep_if(g, at == in_w);
    r1[2 * ox + 1] = keep_if(g, at == in_w + 1);
}

/* The windows tile the plane, so every input pixel is written once (dy
 * at the argmax, 0 elsewhere) instead of zeroing the plane and
 * scattering; an odd last row or column belongs to no window. */
DT_SIMD_CLONES
static void unpool2_plane(const float *restrict dyp, const int *restrict ap,
                          const float *restrict relu_y, float *restrict dxp,
                          int in_h, int in_w, int out_h, int out_w)
{
    for (int oy = 0; oy < out_h; oy++) {
        float *r0 = dxp + (size_t)2 * oy * in_w, *r1 = r0 + in_w;
        const float *dyr = dyp + (size_t)oy * out_w;
        const float *yr = relu_y ? relu_y + (size_t)oy * out_w : NULL;
        const int *ar = ap + (size_t)oy * out_w;
        int base = 2 * oy * in_w;
        if (out_w < LANES) {
            for (int ox = 0; ox < out_w; ox++)
                unpool1(dyr, ar, yr, r0, r1, ox, base, in_w);
        } else {
            int ox = 0;
            for (; ox + LANES <= out_w; ox += LANES)
                unpool8(dyr, ar, yr, r0, r1, ox, base, in_w);
            if (ox < out_w)
                unpool8(dyr, ar, yr, r0, r1, out_w - LANES, base, in_w);
        }
        if (in_w > 2 * out_w)
            r0[in_w - 1] = r1[in_w - 1] = 0.0f;
    }
    if (in_h > 2 * out_h)
        memset(dxp + (size_t)(in_h - 1) * in_w, 0, (size_t)in_w * sizeof *dxp);
}

/* The exported names are plain functions calling the clones: a clone set
 * is an ifunc symbol, which libtool's export lists (libdt_private's
 * -export-symbols-regex, for the tests) leave out. */
void dt_maxpool2_plane(const float *xp, float *yp, int *ap, int in_w,
                       int out_h, int out_w)
{
    pool2_plane(xp, yp, ap, in_w, out_h, out_w);
}

void dt_unpool2_plane(const float *dyp, const int *ap, const float *relu_y,
                      float *dxp, int in_h, int in_w, int out_h, int out_w)
{
    unpool2_plane(dyp, ap, relu_y, dxp, in_h, in_w, out_h, out_w);
}
