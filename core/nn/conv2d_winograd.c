/* conv2d_winograd.c — 3x3, stride 1 conv2d on the cpu by F(2x2, 3x3)
 * or F(4x4, 3x3) (Lavin & Gray, "Fast Algorithms for Convolutional
 * Neural Networks", 2016).
 *
 * Written below for F(2x2); F(4x4) (l->winograd == 4, what
 * DT_CONV_AUTO picks: measured faster on ResNet-20's 16-, 64- and
 * 32-channel layers) is the same with 4x4 output tiles from 6x6 input
 * patches, 36 points xi per tile and its own B, G, A (the *4 / *6
 * functions below); only the fused pool stays F(2x2), whose tiles are
 * the pool's windows. Everything else (layout, GEMMs, groups, the
 * adjoint) is shared, sized by wino_shape_t's m and nxi.
 *
 * Each 2x2 block of outputs ("tile") comes from the 4x4 input patch under
 * it: Y = A^T [(G g G^T) . (B^T d B)] A, where . multiplies pointwise.
 * Summed over input channels, each of the 16 points xi of a transformed
 * tile is one matrix product over the T tiles of a group of samples:
 *     M[.][xi][.] (T x out) = V[.][xi][.] (T x in) U[xi]^T (in x out)
 * with U = G g G^T per (out, in) filter and V = B^T d B per (tile, in).
 * That is 16 multiplies per tile, input and output channel where im2col
 * needs 4 x 9 = 36: 2.25x fewer.
 *
 * Backward is the exact adjoint of that forward (so it is the gradient of
 * what forward computed, and gradient checks hold to float rounding):
 *     Z = A dY A^T per (tile, out)
 *     dU[xi] += Z[.][xi][.]^T V[.][xi][.]  ->  dg = G^T dU G per filter
 *     dV[.][xi][.] = Z[.][xi][.] U[xi]     ->  dd = B dV B^T, added into dx
 * V is rebuilt from x in backward (cheaper than keeping a batch of it).
 *
 * Layout: V, M/Z and dV are [tile][xi][channel] and the input plane is
 * padded with the channels innermost, so every transform runs along
 * contiguous channels (vectorized) and each GEMM reads or writes its xi
 * with a leading dimension of 16 x channels. The output transform writes
 * (and dY is gathered into) a plane of the tile grid with the channels
 * innermost as well; between those planes and the layers' NCHW the data
 * goes by 8x8 blocked transposes (8 channels by 8 consecutive pixels, in
 * GCC vector extensions: SSE, AVX2 or AVX-512 by simd_clones.h).
 *
 * The tiles of a 2x2, stride 2 max pooling after the conv are its
 * windows, so with l->fused == 2 the output transform pools directly
 * (bias, relu, max, argmax) and the conv's output plane is never
 * written; with l->fused == 1 the relu is applied on the way out.
 * In an NHWC model (layer.h) x, y, dy and dx are channels innermost
 * already: the tiles read and write them in place (the *_nhwc functions;
 * a border tile through a small zero-padded patch), with no padded or
 * grid plane and no transposes.
 * Samples go in groups of about GROUP_TILES tiles: products wide enough
 * for OpenBLAS to run near peak, buffers small enough to stay in cache. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "conv2d_winograd.h"
#include "coll/simd_clones.h"
#include "simd8.h"

/* DT_CONV_AUTO: F(4x4) from this many input channels, which is every
 * layer auto gives Winograd (DT_CONV_WINOGRAD_MIN_IN): ResNet-20's 16-,
 * 32- and 64-channel layers on 28x28, 14x14 and 7x7 all measured faster
 * by F(4x4) (docs/PERFORMANCE.md#conv_algo) */
#define WINO4_MIN_IN DT_CONV_WINOGRAD_MIN_IN

/* The per-tile transforms run along the channels; built for AVX-512 and
 * AVX2 as well as the baseline (simd_clones.h). */
#define ALONG_CHANNELS DT_SIMD_CLONES
/* "no dependence between iterations": gcc's ivdep, clang's assume_safety
 * (clang rejects the gcc spelling under -Werror: -Wunknown-pragmas). */
#if defined(__clang__)
#define IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define IVDEP _Pragma("GCC ivdep")
#else
#define IVDEP
#endif
#define GROUP_TILES 256 /* tiles per group of samples (measured: 64-1024
                        * tried, docs/PERFORMANCE.md#conv_algo) */

typedef struct wino_shape {
    int c, o, h, w, pad; /* input channels, output channels, input size */
    int oh, ow;          /* the conv's output                           */
    int th, tw, tiles;   /* tile grid of one sample                     */
    int hp, wp;          /* padded input plane covering every tile      */
    int pooled;          /* tiles are the fused pool's windows          */
    int group;           /* samples per group                           */
    int m, nxi;          /* outputs per tile side (2 or 4), points of a
                          * transformed tile ((m + 2)^2: 16 or 36)      */
    int nhwc;            /* x, y, dy, dx channels innermost (layer.h):
                          * the *_nhwc functions below                  */
} wino_shape_t;

int dt_conv2d_winograd_applies(const dt_layer_t *l)
{
    return l->ops == &dt_layer_conv2d && (int)l->args[1] == 3 &&
           (int)l->args[2] == 1;
}

int dt_conv2d_winograd4_pays(const dt_layer_t *l)
{
    return l->in_c >= WINO4_MIN_IN;
}

static wino_shape_t shape_of(const dt_layer_t *l, int batch)
{
    wino_shape_t s;
    s.c = l->in_c;
    s.o = l->out_c;
    s.h = l->in_h;
    s.w = l->in_w;
    s.pad = (int)l->args[3];
    s.oh = l->out_h;
    s.ow = l->out_w;
    s.pooled = l->fused == 2;
    /* F(4x4) where the model picked it, except under a fused pool (its
     * windows are F(2x2)'s tiles) */
    s.m = l->winograd == 4 && !s.pooled ? 4 : 2;
    s.nxi = (s.m + 2) * (s.m + 2);
    /* pooled: only whole windows (an odd last row or column of the conv
     * output is dropped by the pool, so it is not computed) */
    s.th = s.pooled ? l[2].out_h : (s.oh + s.m - 1) / s.m;
    s.tw = s.pooled ? l[2].out_w : (s.ow + s.m - 1) / s.m;
    s.tiles = s.th * s.tw;
    s.hp = s.m * s.th + 2;
    s.wp = s.m * s.tw + 2;
    /* GROUP_TILES counts F(2x2) tiles: F(4x4)'s cover 4 times the
     * pixels */
    s.nhwc = l->nhwc;
    s.group = GROUP_TILES * 4 / (s.m * s.m) / s.tiles;
    if (s.group > batch)
        s.group = batch;
    if (s.group < 1)
        s.group = 1;
    return s;
}

/* output_tiles' and dy_tiles' tmp: the tile grid's (m th x m tw) pixels
 * with the out channels innermost (also the pooled case's 2 x tiles x
 * out); none in NHWC (the *_nhwc functions below) */
static size_t tmp_floats(const wino_shape_t *s)
{
    return s->nhwc ? 0 : (size_t)s->m * s->m * s->tiles * s->o;
}

/* pad_plane's padded input plane; none in NHWC */
static size_t plane_floats(const wino_shape_t *s)
{
    return s->nhwc ? 0 : (size_t)s->hp * s->wp * s->c;
}

/* NHWC: one tile's input patch ((m + 2)^2 pixels) or output block (m^2)
 * of in or out channels (the *_nhwc functions below) */
static size_t patch_floats(const wino_shape_t *s)
{
    return s->nhwc ? (size_t)s->nxi * (s->c > s->o ? s->c : s->o) : 0;
}

size_t dt_conv2d_winograd_scratch(const dt_layer_t *l, int batch)
{
    wino_shape_t s = shape_of(l, batch);
    size_t t = (size_t)s.group * s.tiles;
    /* U, dU; V, Z (also forward's M), dV; one padded plane (NCHW) or
     * one patch (NHWC) */
    return (size_t)2 * s.nxi * s.o * s.c +
           (size_t)s.nxi * t * (2 * (size_t)s.c + s.o) + plane_floats(&s) +
           tmp_floats(&s) + patch_floats(&s);
}

/* U[xi][o][c] = (G g G^T)[xi] for every 3x3 filter g = w[o][c]. */
static void weights_to_u(const float *w, int o_n, int c_n, float *u)
{
    size_t xs = (size_t)o_n * c_n;
    for (int o = 0; o < o_n; o++)
        for (int c = 0; c < c_n; c++) {
            const float *g = w + ((size_t)o * c_n + c) * 9;
            float h[4][3];
            for (int j = 0; j < 3; j++) {
                h[0][j] = g[j];
                h[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
                h[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
                h[3][j] = g[6 + j];
            }
            float *uo = u + (size_t)o * c_n + c;
            for (int i = 0; i < 4; i++) {
                uo[(4 * i + 0) * xs] = h[i][0];
                uo[(4 * i + 1) * xs] = 0.5f * (h[i][0] + h[i][1] + h[i][2]);
                uo[(4 * i + 2) * xs] = 0.5f * (h[i][0] - h[i][1] + h[i][2]);
                uo[(4 * i + 3) * xs] = h[i][2];
            }
        }
}

/* dw[o][c] = G^T dU[.][o][c] G: the adjoint of weights_to_u. */
static void du_to_weights(const float *du, int o_n, int c_n, float *dw)
{
    size_t xs = (size_t)o_n * c_n;
    for (int o = 0; o < o_n; o++)
        for (int c = 0; c < c_n; c++) {
            const float *x = du + (size_t)o * c_n + c;
            float k[3][4];
            for (int j = 0; j < 4; j++) {
                float x0 = x[j * xs], x1 = x[(4 + j) * xs],
                      x2 = x[(8 + j) * xs], x3 = x[(12 + j) * xs];
                k[0][j] = x0 + 0.5f * (x1 + x2);
                k[1][j] = 0.5f * (x1 - x2);
                k[2][j] = 0.5f * (x1 + x2) + x3;
            }
            float *g = dw + ((size_t)o * c_n + c) * 9;
            for (int i = 0; i < 3; i++) {
                g[3 * i + 0] = k[i][0] + 0.5f * (k[i][1] + k[i][2]);
                g[3 * i + 1] = 0.5f * (k[i][1] - k[i][2]);
                g[3 * i + 2] = 0.5f * (k[i][1] + k[i][2]) + k[i][3];
            }
        }
}

/* Where the pixels of an NCHW plane (h x w, channel c's pixel i = r w +
 * q at c h w + i) sit in a plane with the channels innermost: pixel (r,
 * q) at ((r + off) ld + q + off) c floats, for r < rows and q < cols
 * (the others have no place there). */
typedef struct pix_map {
    int c, h, w, off, ld, rows, cols;
} pix_map_t;

#define NPX 8 /* pixels (and channels) per transposed block */

/* The places of pixels i .. i+7 (r, q: pixel i's row and column, moved on
 * by 8; at0: pixel i's place); 0 when one of them has no place (or i + 8
 * > h w). */
static inline __attribute__((always_inline)) int
pix_places(const pix_map_t *mp, int full, size_t i, int *r, int *q,
           size_t *at0, size_t at[NPX])
{
    int ok = i + NPX <= (size_t)mp->h * mp->w;
    size_t skip = (size_t)(mp->ld - mp->w) * mp->c;
    #pragma GCC unroll 8
    for (int k = 0; k < NPX; k++) {
        if (!full && (*r >= mp->rows || *q >= mp->cols))
            ok = 0;
        at[k] = *at0;
        *at0 += mp->c;
        if (++*q == mp->w)
            *q = 0, ++*r, *at0 += skip;
    }
    return ok;
}

/* Every pixel has a place. */
static int map_full(const pix_map_t *mp)
{
    return mp->rows == mp->h && mp->cols == mp->w;
}

/* r[k][j] -> r[j][k] in three rounds of two-vector shuffles (the
 * unpack, shuffle, permute of an AVX 8x8 transpose) */
static inline __attribute__((always_inline)) void transpose8(v8f r[8])
{
    v8f t[8], u[8];
    #pragma GCC unroll 8
    for (int k = 0; k < 8; k += 2) { /* rows k, k+1 interleaved */
        t[k] = SHUF8(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[k + 1] = SHUF8(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    #pragma GCC unroll 8
    for (int k = 0; k < 8; k += 4) { /* rows k..k+3 of each column */
        u[k] = SHUF8(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[k + 1] = SHUF8(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[k + 2] = SHUF8(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[k + 3] = SHUF8(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    #pragma GCC unroll 8
    for (int k = 0; k < 4; k++) { /* the halves of the 8 rows joined */
        r[k] = SHUF8(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[k + 4] = SHUF8(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* p[place of (r, q)][c] = x[c][r][q], where relu_y is NULL; else x where
 * relu_y[c][r][q] > 0 and 0 elsewhere (a fused relu's mask on dY).
 * Pixels without a place are skipped and p's other floats untouched. */
ALONG_CHANNELS
static void nchw_to_inner(const pix_map_t *mp, const float *restrict x,
                          const float *restrict relu_y, float *restrict p)
{
    size_t plane = (size_t)mp->h * mp->w,
           at0 = ((size_t)mp->off * mp->ld + mp->off) * mp->c;
    int C = mp->c, r = 0, q = 0, full = map_full(mp);
    for (size_t i = 0; i < plane; i += NPX) {
        int r0 = r, q0 = q;
        size_t at[NPX];
        int c = 0;
        if (pix_places(mp, full, i, &r, &q, &at0, at)) {
            for (; c + NPX <= C; c += NPX) {
                const float *xc = x + (size_t)c * plane + i;
                v8f v[8];
                #pragma GCC unroll 8
                for (int k = 0; k < 8; k++)
                    v[k] = *(const v8f *)(xc + k * plane);
                if (relu_y) {
                    const float *yc = relu_y + (size_t)c * plane + i;
                    #pragma GCC unroll 8
                    for (int k = 0; k < 8; k++) {
                        v8f yk = *(const v8f *)(yc + k * plane);
                        v[k] = (v8f)((v8i)v[k] & (yk > 0.0f));
                    }
                }
                transpose8(v);
                #pragma GCC unroll 8
                for (int k = 0; k < 8; k++)
                    *(v8f *)(p + at[k] + c) = v[k];
            }
            for (; c < C; c++) /* the channels left over, 8 pixels */
                for (int k = 0; k < NPX; k++) {
                    size_t j = (size_t)c * plane + i + k;
                    p[at[k] + c] =
                        !relu_y || relu_y[j] > 0.0f ? x[j] : 0.0f;
                }
            continue;
        }
        for (int k = 0; k < NPX && i + k < plane; k++) { /* one by one */
            if (r0 < mp->rows && q0 < mp->cols) {
                size_t a = ((size_t)(r0 + mp->off) * mp->ld + q0 + mp->off) *
                           C;
                for (c = 0; c < C; c++) {
                    size_t j = (size_t)c * plane + i + k;
                    p[a + c] = !relu_y || relu_y[j] > 0.0f ? x[j] : 0.0f;
                }
            }
            if (++q0 == mp->w)
                q0 = 0, ++r0;
        }
    }
}

/* x[c][r][q] = p[place of (r, q)][c], 0 for pixels without a place. */
ALONG_CHANNELS
static void inner_to_nchw(const pix_map_t *mp, const float *restrict p,
                          float *restrict x)
{
    size_t plane = (size_t)mp->h * mp->w,
           at0 = ((size_t)mp->off * mp->ld + mp->off) * mp->c;
    int C = mp->c, r = 0, q = 0, full = map_full(mp);
    for (size_t i = 0; i < plane; i += NPX) {
        int r0 = r, q0 = q;
        size_t at[NPX];
        int c = 0;
        if (pix_places(mp, full, i, &r, &q, &at0, at)) {
            for (; c + NPX <= C; c += NPX) {
                float *xc = x + (size_t)c * plane + i;
                v8f v[8];
                #pragma GCC unroll 8
                for (int k = 0; k < 8; k++)
                    v[k] = *(const v8f *)(p + at[k] + c);
                transpose8(v);
                #pragma GCC unroll 8
                for (int k = 0; k < 8; k++)
                    *(v8f *)(xc + k * plane) = v[k];
            }
            for (; c < C; c++)
                for (int k = 0; k < NPX; k++)
                    x[(size_t)c * plane + i + k] = p[at[k] + c];
            continue;
        }
        for (int k = 0; k < NPX && i + k < plane; k++) {
            int in = r0 < mp->rows && q0 < mp->cols;
            size_t a = in ? ((size_t)(r0 + mp->off) * mp->ld + q0 +
                             mp->off) * C
                          : 0;
            for (c = 0; c < C; c++)
                x[(size_t)c * plane + i + k] = in ? p[a + c] : 0.0f;
            if (++q0 == mp->w)
                q0 = 0, ++r0;
        }
    }
}

/* The input plane's place in the padded plane. */
static pix_map_t padded_map(const wino_shape_t *s)
{
    pix_map_t mp = {s->c, s->h, s->w, s->pad, s->wp,
                    s->h < s->hp - s->pad ? s->h : s->hp - s->pad,
                    s->w < s->wp - s->pad ? s->w : s->wp - s->pad};
    return mp;
}

/* p[(r + pad) * wp + q + pad][c] = x[c][r][q]: one sample's input as a
 * zero-padded (hp x wp) plane with the channels innermost, so that every
 * transform below runs along contiguous channels. Only the border is
 * zeroed; the image part is written once. */
static void pad_plane(const wino_shape_t *s, const float *x, float *p)
{
    pix_map_t mp = padded_map(s);
    size_t px = (size_t)s->c, row = (size_t)s->wp * px;
    int top = s->pad < s->hp ? s->pad : s->hp, bottom = s->pad + mp.rows;
    memset(p, 0, top * row * sizeof *p);
    memset(p + bottom * row, 0, (size_t)(s->hp - bottom) * row * sizeof *p);
    for (int r = top; r < bottom; r++) {
        float *pr = p + r * row;
        memset(pr, 0, s->pad * px * sizeof *p);
        memset(pr + (s->pad + mp.cols) * px, 0,
               (size_t)(s->wp - s->pad - mp.cols) * px * sizeof *p);
    }
    nchw_to_inner(&mp, x, NULL, p);
}

/* dx[c][r][q] = the part of the padded plane p over the image; pixels no
 * tile covers get 0 (they reach no computed output). */
static void unpad_plane(const wino_shape_t *s, const float *p, float *dx)
{
    pix_map_t mp = padded_map(s);
    inner_to_nchw(&mp, p, dx);
}

/* The conv's output plane inside the tile grid's (m th x m tw) plane. */
static pix_map_t grid_map(const wino_shape_t *s)
{
    pix_map_t mp = {s->o, s->oh, s->ow, 0, s->m * s->tw, s->oh, s->ow};
    return mp;
}

/* The transforms below are written out element by element (no inner
 * loops over the tile) so that the loop over channels is the innermost
 * one and vectorizes; each handles one tile for all channels. */

/* v[xi][c] = (B^T d B)[xi] of the tile whose top left is d (pixels pix
 * floats apart, rows row floats apart, channels innermost). */
ALONG_CHANNELS
static void input_tile(const float *restrict d, size_t pix, size_t row,
                       float *restrict v, int n)
{
#define D(i, j) d[(i) * row + (j) * pix + c]
#define V(i, j) v[(4 * (i) + (j)) * n + c]
    IVDEP /* the 16 rows of a tile are n apart */
    for (int c = 0; c < n; c++) {
        /* B^T d: rows 0-2, 1+2, 2-1, 1-3 of d, for each column j */
        float t00 = D(0, 0) - D(2, 0), t01 = D(0, 1) - D(2, 1),
              t02 = D(0, 2) - D(2, 2), t03 = D(0, 3) - D(2, 3);
        float t10 = D(1, 0) + D(2, 0), t11 = D(1, 1) + D(2, 1),
              t12 = D(1, 2) + D(2, 2), t13 = D(1, 3) + D(2, 3);
        float t20 = D(2, 0) - D(1, 0), t21 = D(2, 1) - D(1, 1),
              t22 = D(2, 2) - D(1, 2), t23 = D(2, 3) - D(1, 3);
        float t30 = D(1, 0) - D(3, 0), t31 = D(1, 1) - D(3, 1),
              t32 = D(1, 2) - D(3, 2), t33 = D(1, 3) - D(3, 3);
        /* (B^T d) B: the same on the columns */
        V(0, 0) = t00 - t02; V(0, 1) = t01 + t02;
        V(0, 2) = t02 - t01; V(0, 3) = t01 - t03;
        V(1, 0) = t10 - t12; V(1, 1) = t11 + t12;
        V(1, 2) = t12 - t11; V(1, 3) = t11 - t13;
        V(2, 0) = t20 - t22; V(2, 1) = t21 + t22;
        V(2, 2) = t22 - t21; V(2, 3) = t21 - t23;
        V(3, 0) = t30 - t32; V(3, 1) = t31 + t32;
        V(3, 2) = t32 - t31; V(3, 3) = t31 - t33;
    }
#undef D
#undef V
}

/* d += B x B^T for one tile (the adjoint of input_tile). */
ALONG_CHANNELS
static void scatter_tile(const float *restrict x, float *restrict d,
                         size_t pix, size_t row, int n)
{
#define X(i, j) x[(4 * (i) + (j)) * n + c]
#define D(i, j) d[(i) * row + (j) * pix + c]
    IVDEP /* the 16 rows of a tile are n apart */
    for (int c = 0; c < n; c++) {
        /* B X: rows x0, x1-x2+x3, -x0+x1+x2, -x3 */
        float e00 = X(0, 0), e01 = X(0, 1), e02 = X(0, 2), e03 = X(0, 3);
        float e10 = X(1, 0) - X(2, 0) + X(3, 0),
              e11 = X(1, 1) - X(2, 1) + X(3, 1),
              e12 = X(1, 2) - X(2, 2) + X(3, 2),
              e13 = X(1, 3) - X(2, 3) + X(3, 3);
        float e20 = -X(0, 0) + X(1, 0) + X(2, 0),
              e21 = -X(0, 1) + X(1, 1) + X(2, 1),
              e22 = -X(0, 2) + X(1, 2) + X(2, 2),
              e23 = -X(0, 3) + X(1, 3) + X(2, 3);
        float e30 = -X(3, 0), e31 = -X(3, 1), e32 = -X(3, 2), e33 = -X(3, 3);
        /* (B X) B^T: the same on the columns, added into d */
        D(0, 0) += e00; D(0, 1) += e01 - e02 + e03;
        D(0, 2) += -e00 + e01 + e02; D(0, 3) += -e03;
        D(1, 0) += e10; D(1, 1) += e11 - e12 + e13;
        D(1, 2) += -e10 + e11 + e12; D(1, 3) += -e13;
        D(2, 0) += e20; D(2, 1) += e21 - e22 + e23;
        D(2, 2) += -e20 + e21 + e22; D(2, 3) += -e23;
        D(3, 0) += e30; D(3, 1) += e31 - e32 + e33;
        D(3, 2) += -e30 + e31 + e32; D(3, 3) += -e33;
    }
#undef X
#undef D
}

/* v[0..3] = (A^T M A) + bias, the 2x2 outputs of output channel o in row
 * order, from m[xi][o]. */
static inline __attribute__((always_inline)) void
tile_outputs(const float *restrict m, int n, int o,
                                float bias, float v[4])
{
#define M(i, j) m[(4 * (i) + (j)) * n + o]
    /* A^T M: rows m0+m1+m2, m1-m2-m3 */
    float a00 = M(0, 0) + M(1, 0) + M(2, 0), a01 = M(0, 1) + M(1, 1) + M(2, 1),
          a02 = M(0, 2) + M(1, 2) + M(2, 2), a03 = M(0, 3) + M(1, 3) + M(2, 3);
    float a10 = M(1, 0) - M(2, 0) - M(3, 0), a11 = M(1, 1) - M(2, 1) - M(3, 1),
          a12 = M(1, 2) - M(2, 2) - M(3, 2), a13 = M(1, 3) - M(2, 3) - M(3, 3);
#undef M
    /* (A^T M) A: the same on the columns */
    v[0] = a00 + a01 + a02 + bias;
    v[1] = a01 - a02 - a03 + bias;
    v[2] = a10 + a11 + a12 + bias;
    v[3] = a11 - a12 - a13 + bias;
}

/* The tile's 2x2 outputs of channel o (then the relu if relu) at
 * out[o], out[n + o] (top row) and out[row + o], out[row + n + o]: its
 * pixels in the grid plane. Written out without inner loops, so the loop
 * over channels vectorizes. */
ALONG_CHANNELS
static void output_tile(const float *restrict m, const float *restrict bias,
                        int relu, float *restrict out, size_t row, int n)
{
    float floor = relu ? 0.0f : -INFINITY;
    IVDEP /* the 16 rows of a tile are n apart */
    for (int o = 0; o < n; o++) {
        float v[4];
        tile_outputs(m, n, o, bias[o], v);
        out[o] = v[0] > floor ? v[0] : floor;
        out[n + o] = v[1] > floor ? v[1] : floor;
        out[row + o] = v[2] > floor ? v[2] : floor;
        out[row + n + o] = v[3] > floor ? v[3] : floor;
    }
}

/* The fused relu and 2x2 pool: best[o] = the largest relu'd output,
 * which[o] its place (0-3, the first maximum in row order, as
 * dt_maxpool2_plane picks it). */
ALONG_CHANNELS
static void output_tile_pooled(const float *restrict m,
                               const float *restrict bias,
                               float *restrict best, float *restrict which,
                               int n)
{
    IVDEP /* the 16 rows of a tile are n apart */
    for (int o = 0; o < n; o++) {
        float v[4];
        tile_outputs(m, n, o, bias[o], v);
        /* all float: selects of one type vectorize */
        float b = v[0] > 0.0f ? v[0] : 0.0f, k = 0.0f;
        k = v[1] > b ? 1.0f : k;
        b = v[1] > b ? v[1] : b;
        k = v[2] > b ? 2.0f : k;
        b = v[2] > b ? v[2] : b;
        k = v[3] > b ? 3.0f : k;
        b = v[3] > b ? v[3] : b;
        best[o] = b;
        which[o] = k;
    }
}

/* z[xi][o] = (A dY A^T)[xi] for dY = (d0 d1; d2 d3). */
static inline __attribute__((always_inline)) void
put_z(float *restrict z, int n, int o, float d0,
                         float d1, float d2, float d3)
{
#define Z(i, j) z[(4 * (i) + (j)) * n + o]
    /* A dY: rows (p, q) = (d0, d1), (d0+d2, d1+d3), (d0-d2, d1-d3),
     * (-d2, -d3); then each row times A^T: p, p+q, p-q, -q */
    float p0 = d0, q0 = d1, p1 = d0 + d2, q1 = d1 + d3, p2 = d0 - d2,
          q2 = d1 - d3, p3 = -d2, q3 = -d3;
    Z(0, 0) = p0; Z(0, 1) = p0 + q0; Z(0, 2) = p0 - q0; Z(0, 3) = -q0;
    Z(1, 0) = p1; Z(1, 1) = p1 + q1; Z(1, 2) = p1 - q1; Z(1, 3) = -q1;
    Z(2, 0) = p2; Z(2, 1) = p2 + q2; Z(2, 2) = p2 - q2; Z(2, 3) = -q2;
    Z(3, 0) = p3; Z(3, 1) = p3 + q3; Z(3, 2) = p3 - q3; Z(3, 3) = -q3;
#undef Z
}

/* z for the 2x2 gradient at g[o], g[n + o] (top row), g[row + o],
 * g[row + n + o] (the tile's pixels in the grid plane); db += the four,
 * in that order. */
ALONG_CHANNELS
static void dy_tile(const float *restrict g, size_t row, float *restrict z,
                    float *restrict db, int n)
{
    IVDEP /* the 16 rows of a tile are n apart */
    for (int o = 0; o < n; o++) {
        float d0 = g[o], d1 = g[n + o], d2 = g[row + o], d3 = g[row + n + o];
        db[o] = db[o] + d0 + d1 + d2 + d3;
        put_z(z, n, o, d0, d1, d2, d3);
    }
}

/* z for the pooled case: all of g[o] at place which[o]; db += g. */
ALONG_CHANNELS
static void dy_tile_pooled(const float *restrict g, const float *restrict which,
                           float *restrict z, float *restrict db, int n)
{
    IVDEP /* the 16 rows of a tile are n apart */
    for (int o = 0; o < n; o++) {
        float d = g[o], k = which[o];
        db[o] += d;
        put_z(z, n, o, k == 0.0f ? d : 0.0f, k == 1.0f ? d : 0.0f,
              k == 2.0f ? d : 0.0f, k == 3.0f ? d : 0.0f);
    }
}

/* F(4x4, 3x3): 6x6 input tiles, 36 points, with Lavin & Gray's matrices
 * for the points 0, 1, -1, 2, -2 and infinity:
 *   B^T = [4  0 -5  0 1 0]   G = [ 1/4     0    0 ]  A^T = [1 1  1 1  1 0]
 *         [0 -4 -4  1 1 0]       [-1/6  -1/6 -1/6 ]        [0 1 -1 2 -2 0]
 *         [0  4 -4 -1 1 0]       [-1/6   1/6 -1/6 ]        [0 1  1 4  4 0]
 *         [0 -2 -1  2 1 0]       [ 1/24 1/12  1/6 ]        [0 1 -1 8 -8 1]
 *         [0  2 -1 -2 1 0]       [ 1/24 -1/12 1/6 ]
 *         [0  4  0 -5 0 1]       [  0     0    1  ]
 * 36 multiplies per tile, input and output channel where im2col needs
 * 16 x 9 = 144: 4x fewer (F(2x2)'s 2.25x), at the price of larger
 * transforms and somewhat larger rounding (the 4s, 5s and 8s). Each
 * 1-d transform below is applied to the columns of a tile, then to the
 * rows of the result; the backward ones are their transposes. */

/* r = B^T d (6 -> 6) */
static inline __attribute__((always_inline)) void
bt6(float d0, float d1, float d2, float d3, float d4, float d5, float r[6])
{
    float a = d4 - 4.0f * d2, b = d3 - 4.0f * d1, e = d4 - d2,
          f = 2.0f * (d3 - d1);
    r[0] = 4.0f * d0 - 5.0f * d2 + d4;
    r[1] = a + b;
    r[2] = a - b;
    r[3] = e + f;
    r[4] = e - f;
    r[5] = 4.0f * d1 - 5.0f * d3 + d5;
}

/* r = B x (6 -> 6): the transpose of bt6 */
static inline __attribute__((always_inline)) void
b6(float x0, float x1, float x2, float x3, float x4, float x5, float r[6])
{
    float s12 = x1 + x2, d12 = x2 - x1, s34 = x3 + x4, d34 = x3 - x4;
    r[0] = 4.0f * x0;
    r[1] = 4.0f * (d12 + x5) - 2.0f * d34;
    r[2] = -5.0f * x0 - 4.0f * s12 - s34;
    r[3] = -d12 + 2.0f * d34 - 5.0f * x5;
    r[4] = x0 + s12 + s34;
    r[5] = x5;
}

/* r = A^T m (6 -> 4) */
static inline __attribute__((always_inline)) void
at6(float m0, float m1, float m2, float m3, float m4, float m5, float r[4])
{
    float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
    r[0] = m0 + s12 + s34;
    r[1] = d12 + 2.0f * d34;
    r[2] = s12 + 4.0f * s34;
    r[3] = d12 + 8.0f * d34 + m5;
}

/* r = A y (4 -> 6): the transpose of at6 */
static inline __attribute__((always_inline)) void
a6(float y0, float y1, float y2, float y3, float r[6])
{
    float e = y0 + y2, o = y1 + y3, e4 = y0 + 4.0f * y2,
          o8 = 2.0f * y1 + 8.0f * y3;
    r[0] = y0;
    r[1] = e + o;
    r[2] = e - o;
    r[3] = e4 + o8;
    r[4] = e4 - o8;
    r[5] = y3;
}

/* r = G g (3 -> 6) */
static inline __attribute__((always_inline)) void
g6(float g0, float g1, float g2, float r[6])
{
    float s = g0 + g2, t = g0 / 24.0f + g2 / 6.0f;
    r[0] = g0 / 4.0f;
    r[1] = -(s + g1) / 6.0f;
    r[2] = -(s - g1) / 6.0f;
    r[3] = t + g1 / 12.0f;
    r[4] = t - g1 / 12.0f;
    r[5] = g2;
}

/* r = G^T x (6 -> 3): the transpose of g6 */
static inline __attribute__((always_inline)) void
gt6(float x0, float x1, float x2, float x3, float x4, float x5, float r[3])
{
    float s12 = x1 + x2, s34 = x3 + x4;
    r[0] = x0 / 4.0f - s12 / 6.0f + s34 / 24.0f;
    r[1] = (x2 - x1) / 6.0f + (x3 - x4) / 12.0f;
    r[2] = -s12 / 6.0f + s34 / 6.0f + x5;
}

/* The filters' 9 taps as 9 rows of xs (one per filter k = o c_n + c) and
 * back: the filter transforms then run along k, vectorized, where one
 * filter at a time wrote its 36 points 36 rows apart (measured, ResNet-20:
 * weights_to_u4 alone was 4.7% of a step). */
static void taps_split(const float *restrict w, size_t xs,
                       float *restrict t)
{
    for (size_t k = 0; k < xs; k++)
        for (int j = 0; j < 9; j++)
            t[j * xs + k] = w[k * 9 + j];
}

static void taps_join(const float *restrict t, size_t xs,
                      float *restrict w)
{
    for (size_t k = 0; k < xs; k++)
        for (int j = 0; j < 9; j++)
            w[k * 9 + j] = t[j * xs + k];
}

/* U[xi][k] = (G g G^T)[xi] (36 points) for every filter g = taps t[.][k]. */
ALONG_CHANNELS
static void taps_to_u4(const float *restrict t, size_t xs,
                       float *restrict u)
{
    IVDEP
    for (size_t k = 0; k < xs; k++) {
        float h[3][6], r[6]; /* h[j][i]: (G g)[i][j] */
        #pragma GCC unroll 3
        for (int j = 0; j < 3; j++)
            g6(t[j * xs + k], t[(3 + j) * xs + k], t[(6 + j) * xs + k],
               h[j]);
        #pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            g6(h[0][i], h[1][i], h[2][i], r);
            #pragma GCC unroll 6
            for (int j = 0; j < 6; j++)
                u[(6 * i + j) * xs + k] = r[j];
        }
    }
}

/* taps t[.][k] = G^T dU[.][k] G (36 points): the adjoint of taps_to_u4. */
ALONG_CHANNELS
static void du4_to_taps(const float *restrict du, size_t xs,
                        float *restrict t)
{
    IVDEP
    for (size_t k = 0; k < xs; k++) {
        const float *x = du + k;
        float q[6][3], r[3]; /* q[j][i]: (G^T X)[i][j] */
        #pragma GCC unroll 6
        for (int j = 0; j < 6; j++)
            gt6(x[j * xs], x[(6 + j) * xs], x[(12 + j) * xs],
                x[(18 + j) * xs], x[(24 + j) * xs], x[(30 + j) * xs], q[j]);
        #pragma GCC unroll 3
        for (int i = 0; i < 3; i++) {
            gt6(q[0][i], q[1][i], q[2][i], q[3][i], q[4][i], q[5][i], r);
            #pragma GCC unroll 3
            for (int j = 0; j < 3; j++)
                t[(3 * i + j) * xs + k] = r[j];
        }
    }
}

/* U[xi][o][c] = (G g G^T)[xi] for every filter g = w[o][c]; taps: 9 o c
 * floats of room (the layer's dU, free until backward's GEMMs). */
static void weights_to_u4(const float *w, int o_n, int c_n, float *u,
                          float *taps)
{
    size_t xs = (size_t)o_n * c_n;
    taps_split(w, xs, taps);
    taps_to_u4(taps, xs, u);
}

/* dw[o][c] = G^T dU[.][o][c] G: the adjoint of weights_to_u4; taps: 9 o
 * c floats of room (the layer's U, no longer needed). */
static void du_to_weights4(const float *du, int o_n, int c_n, float *dw,
                           float *taps)
{
    size_t xs = (size_t)o_n * c_n;
    du4_to_taps(du, xs, taps);
    taps_join(taps, xs, dw);
}

/* v[xi][c] = (B^T d B)[xi] of the 6x6 tile whose top left is d (as
 * input_tile). */
ALONG_CHANNELS
static void input_tile4(const float *restrict d, size_t pix, size_t row,
                        float *restrict v, int n)
{
#define D(i, j) d[(i) * row + (j) * pix + c]
    IVDEP /* the 36 rows of a tile are n apart */
    for (int c = 0; c < n; c++) {
        float t[6][6], r[6]; /* t[j][i]: (B^T d)[i][j] */
        #pragma GCC unroll 6
        for (int j = 0; j < 6; j++)
            bt6(D(0, j), D(1, j), D(2, j), D(3, j), D(4, j), D(5, j), t[j]);
        #pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            bt6(t[0][i], t[1][i], t[2][i], t[3][i], t[4][i], t[5][i], r);
            #pragma GCC unroll 6
            for (int j = 0; j < 6; j++)
                v[(6 * i + j) * n + c] = r[j];
        }
    }
#undef D
}

/* d += B x B^T for one 6x6 tile (the adjoint of input_tile4). */
ALONG_CHANNELS
static void scatter_tile4(const float *restrict x, float *restrict d,
                          size_t pix, size_t row, int n)
{
#define X(i, j) x[(6 * (i) + (j)) * n + c]
    IVDEP /* the 36 rows of a tile are n apart */
    for (int c = 0; c < n; c++) {
        float t[6][6], r[6]; /* t[j][i]: (B X)[i][j] */
        #pragma GCC unroll 6
        for (int j = 0; j < 6; j++)
            b6(X(0, j), X(1, j), X(2, j), X(3, j), X(4, j), X(5, j), t[j]);
        #pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            b6(t[0][i], t[1][i], t[2][i], t[3][i], t[4][i], t[5][i], r);
            #pragma GCC unroll 6
            for (int j = 0; j < 6; j++)
                d[i * row + j * pix + c] += r[j];
        }
    }
#undef X
}

/* The tile's 4x4 outputs of each channel o, A^T M A + bias (then the
 * relu if relu), at out[r row + q n + o]: its pixels in the grid plane. */
ALONG_CHANNELS
static void output_tile4(const float *restrict m, const float *restrict bias,
                         int relu, float *restrict out, size_t row, int n)
{
    float floor = relu ? 0.0f : -INFINITY;
#define M(i, j) m[(6 * (i) + (j)) * n + o]
    IVDEP /* the 36 rows of a tile are n apart */
    for (int o = 0; o < n; o++) {
        float t[6][4], r[4]; /* t[j][i]: (A^T M)[i][j] */
        #pragma GCC unroll 6
        for (int j = 0; j < 6; j++)
            at6(M(0, j), M(1, j), M(2, j), M(3, j), M(4, j), M(5, j), t[j]);
        #pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            at6(t[0][i], t[1][i], t[2][i], t[3][i], t[4][i], t[5][i], r);
            #pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                float v = r[j] + bias[o];
                out[i * row + j * n + o] = v > floor ? v : floor;
            }
        }
    }
#undef M
}

/* z[xi][o] = (A dY A^T)[xi] for the 4x4 gradient at g[r row + q n + o]
 * (the tile's pixels in the grid plane); db += its sum. */
ALONG_CHANNELS
static void dy_tile4(const float *restrict g, size_t row, float *restrict z,
                     float *restrict db, int n)
{
#define G(i, j) g[(i) * row + (j) * n + o]
    IVDEP /* the 36 rows of a tile are n apart */
    for (int o = 0; o < n; o++) {
        float t[4][6], r[6], sum = 0.0f; /* t[j][i]: (A dY)[i][j] */
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            sum += G(0, j) + G(1, j) + G(2, j) + G(3, j);
            a6(G(0, j), G(1, j), G(2, j), G(3, j), t[j]);
        }
        db[o] += sum;
        #pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            a6(t[0][i], t[1][i], t[2][i], t[3][i], r);
            #pragma GCC unroll 6
            for (int j = 0; j < 6; j++)
                z[(6 * i + j) * n + o] = r[j];
        }
    }
#undef G
}

/* v[t][xi][c] for each tile t of one padded plane. */
static void input_tiles(const wino_shape_t *s, const float *p, float *v)
{
    size_t pix = (size_t)s->c, row = (size_t)s->wp * s->c;
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            const float *d = p + s->m * (ty * row + tx * pix);
            float *vt = v + (size_t)(ty * s->tw + tx) * s->nxi * s->c;
            if (s->m == 4)
                input_tile4(d, pix, row, vt, s->c);
            else
                input_tile(d, pix, row, vt, s->c);
        }
}

/* The padded plane p = sum over tiles of B dV B^T. */
static void scatter_tiles(const wino_shape_t *s, const float *dv, float *p)
{
    size_t pix = (size_t)s->c, row = (size_t)s->wp * s->c;
    memset(p, 0, (size_t)s->hp * row * sizeof *p);
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            const float *x = dv + (size_t)(ty * s->tw + tx) * s->nxi * s->c;
            float *d = p + s->m * (ty * row + tx * pix);
            if (s->m == 4)
                scatter_tile4(x, d, pix, row, s->c);
            else
                scatter_tile(x, d, pix, row, s->c);
        }
}

/* One sample's outputs from M (m[t][xi][o]): per l->fused the relu and
 * the pool (y and argmax as dt_maxpool2_plane writes them). y, arg: the
 * sample's first; tmp: tmp_floats() of scratch. */
static void output_tiles(const dt_layer_t *l, const wino_shape_t *s,
                         const float *m, float *y, int *arg, float *tmp)
{
    int n = s->o;
    if (s->pooled) { /* per tile along the channels, then transposed */
        float *best = tmp, *which = tmp + (size_t)s->tiles * n;
        for (int t = 0; t < s->tiles; t++)
            output_tile_pooled(m + (size_t)t * s->nxi * n, l->b,
                               best + (size_t)t * n, which + (size_t)t * n,
                               n);
        for (int o = 0; o < n; o++)
            for (int ty = 0; ty < s->th; ty++)
                for (int tx = 0; tx < s->tw; tx++) {
                    int t = ty * s->tw + tx,
                        k = (int)which[(size_t)t * n + o];
                    y[o * s->tiles + t] = best[(size_t)t * n + o];
                    arg[o * s->tiles + t] =
                        (2 * ty + k / 2) * s->ow + 2 * tx + k % 2;
                }
        return;
    }
    /* the tiles into the grid plane (channels innermost), then that to
     * y by transposes */
    size_t row = (size_t)s->m * s->tw * n;
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            const float *mt = m + (size_t)(ty * s->tw + tx) * s->nxi * n;
            float *out = tmp + s->m * (ty * row + (size_t)tx * n);
            if (s->m == 4)
                output_tile4(mt, l->b, l->fused != 0, out, row, n);
            else
                output_tile(mt, l->b, l->fused != 0, out, row, n);
        }
    pix_map_t mp = grid_map(s);
    inner_to_nchw(&mp, tmp, y);
}

/* z[t][xi][o] for one sample, dY from the gradient at the last layer the
 * conv applies (y, dy, arg: the sample's first); db += dY's sums. tmp:
 * tmp_floats() of scratch. */
static void dy_tiles(const dt_layer_t *l, const wino_shape_t *s,
                     const float *y, const float *dy, const int *arg,
                     float *z, float *db, float *tmp)
{
    int n = s->o;
    if (s->pooled) { /* transposed to tiles x channels, then per tile */
        float *g = tmp, *which = tmp + (size_t)s->tiles * n;
        for (int o = 0; o < n; o++)
            for (int ty = 0; ty < s->th; ty++)
                for (int tx = 0; tx < s->tw; tx++) {
                    int t = ty * s->tw + tx, at = o * s->tiles + t;
                    int k = arg[at] - (2 * ty * s->ow + 2 * tx);
                    which[(size_t)t * n + o] =
                        (float)(k >= s->ow ? k - s->ow + 2 : k);
                    /* the relu passed it only where the pooled y > 0 */
                    g[(size_t)t * n + o] = y[at] > 0.0f ? dy[at] : 0.0f;
                }
        for (int t = 0; t < s->tiles; t++)
            dy_tile_pooled(g + (size_t)t * n, which + (size_t)t * n,
                           z + (size_t)t * s->nxi * n, db, n);
        return;
    }
    /* dY (masked by the fused relu) into the grid plane by transposes,
     * the grid's pixels past the output zeroed; then per tile */
    size_t row = (size_t)s->m * s->tw * n;
    int gh = s->m * s->th, gw = s->m * s->tw;
    if (s->oh < gh)
        memset(tmp + (size_t)s->oh * row, 0,
               (gh - s->oh) * row * sizeof *tmp);
    if (s->ow < gw)
        for (int r = 0; r < s->oh; r++)
            memset(tmp + r * row + (size_t)s->ow * n, 0,
                   (size_t)(gw - s->ow) * n * sizeof *tmp);
    pix_map_t mp = grid_map(s);
    nchw_to_inner(&mp, dy, l->fused ? y : NULL, tmp);
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            const float *g = tmp + s->m * (ty * row + (size_t)tx * n);
            float *zt = z + (size_t)(ty * s->tw + tx) * s->nxi * n;
            if (s->m == 4)
                dy_tile4(g, row, zt, db, n);
            else
                dy_tile(g, row, zt, db, n);
        }
}

/* ---- NHWC: the tiles read x, dy and write y, dx where they lie ------
 * In an NHWC model (s->nhwc) a tile's pixels are already channels
 * innermost in x itself, so the transforms read and write the layer's
 * buffers directly (pixels c floats apart, rows w c): no padded plane
 * and no grid plane, whose copies were whole extra passes over
 * activations that no longer sit in cache. A tile over the border (or
 * past the image: the grid is rounded up to whole tiles) goes through
 * a small zero-padded patch instead. */

/* Does the span x span block at (y0, x0) lie inside an h x w plane? */
static int block_inside(int y0, int x0, int span, int h, int w)
{
    return y0 >= 0 && x0 >= 0 && y0 + span <= h && x0 + span <= w;
}

/* The columns [*qa, *qb) of a span-wide block at x0 that lie on a plane
 * w wide. */
static void block_cols(int x0, int span, int w, int *qa, int *qb)
{
    *qa = x0 < 0 ? -x0 : 0;
    *qb = x0 + span > w ? w - x0 : span;
    if (*qb < *qa)
        *qb = *qa;
}

/* patch = the span x span pixels at (y0, x0) of plane (h x w, c
 * channels innermost), 0 off the plane; relu_y: masked where it is <= 0
 * (the fused relu's dy). Each row's pixels on the plane are one run. */
static void gather_block(const float *restrict plane,
                         const float *restrict relu_y, int h, int w, int c,
                         int y0, int x0, int span, float *restrict patch)
{
    int qa, qb;
    block_cols(x0, span, w, &qa, &qb);
    size_t prow = (size_t)span * c, lo = (size_t)qa * c,
           n = (size_t)(qb - qa) * c;
    for (int r = 0; r < span; r++) {
        int y = y0 + r;
        float *restrict d = patch + r * prow;
        if (y < 0 || y >= h || n == 0) {
            memset(d, 0, prow * sizeof *d);
            continue;
        }
        memset(d, 0, lo * sizeof *d);
        memset(d + lo + n, 0, (prow - lo - n) * sizeof *d);
        size_t at = ((size_t)y * w + x0 + qa) * c;
        if (!relu_y) {
            memcpy(d + lo, plane + at, n * sizeof *d);
            continue;
        }
        for (size_t k = 0; k < n; k++) {
            float v = plane[at + k];
            d[lo + k] = relu_y[at + k] > 0.0f ? v : 0.0f;
        }
    }
}

/* plane (h x w) += (add) or = the patch's pixels on it */
static void put_block(const float *restrict patch, float *restrict plane,
                      int h, int w, int c, int y0, int x0, int span, int add)
{
    int qa, qb;
    block_cols(x0, span, w, &qa, &qb);
    size_t n = (size_t)(qb - qa) * c;
    for (int r = 0; r < span; r++) {
        int y = y0 + r;
        if (y < 0 || y >= h || n == 0)
            continue;
        float *restrict d = plane + ((size_t)y * w + x0 + qa) * c;
        const float *restrict p = patch + ((size_t)r * span + qa) * c;
        if (add)
            for (size_t k = 0; k < n; k++)
                d[k] += p[k];
        else
            memcpy(d, p, n * sizeof *d);
    }
}

/* v[t][xi][c] for each tile of one NHWC sample x */
static void input_tiles_nhwc(const wino_shape_t *s, const float *x,
                             float *v, float *patch)
{
    int span = s->m + 2;
    size_t C = (size_t)s->c, row = (size_t)s->w * C;
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            int y0 = s->m * ty - s->pad, x0 = s->m * tx - s->pad;
            float *vt = v + (size_t)(ty * s->tw + tx) * s->nxi * C;
            const float *d = patch;
            size_t rd = span * C;
            if (block_inside(y0, x0, span, s->h, s->w))
                d = x + y0 * row + x0 * C, rd = row;
            else
                gather_block(x, NULL, s->h, s->w, s->c, y0, x0, span,
                             patch);
            if (s->m == 4)
                input_tile4(d, C, rd, vt, s->c);
            else
                input_tile(d, C, rd, vt, s->c);
        }
}

/* dx (one NHWC sample) = sum over tiles of B dV B^T */
static void scatter_tiles_nhwc(const wino_shape_t *s, const float *dv,
                               float *dx, float *patch)
{
    int span = s->m + 2;
    size_t C = (size_t)s->c, row = (size_t)s->w * C;
    memset(dx, 0, (size_t)s->h * row * sizeof *dx);
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            int y0 = s->m * ty - s->pad, x0 = s->m * tx - s->pad;
            const float *xt = dv + (size_t)(ty * s->tw + tx) * s->nxi * C;
            int inside = block_inside(y0, x0, span, s->h, s->w);
            float *d = inside ? dx + y0 * row + x0 * C : patch;
            size_t rd = inside ? row : span * C;
            if (!inside)
                memset(patch, 0, (size_t)span * span * C * sizeof *patch);
            if (s->m == 4)
                scatter_tile4(xt, d, C, rd, s->c);
            else
                scatter_tile(xt, d, C, rd, s->c);
            if (!inside)
                put_block(patch, dx, s->h, s->w, s->c, y0, x0, span, 1);
        }
}

/* y (one NHWC sample) from M, bias and the fused relu; tiles past the
 * output (the grid rounded up) through the patch */
static void output_tiles_nhwc(const dt_layer_t *l, const wino_shape_t *s,
                              const float *m, float *y, float *patch)
{
    int n = s->o, mm = s->m;
    size_t row = (size_t)s->ow * n;
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            const float *mt = m + (size_t)(ty * s->tw + tx) * s->nxi * n;
            int inside = block_inside(mm * ty, mm * tx, mm, s->oh, s->ow);
            float *out = inside ? y + mm * (ty * row + (size_t)tx * n)
                                : patch;
            size_t ro = inside ? row : (size_t)mm * n;
            if (mm == 4)
                output_tile4(mt, l->b, l->fused != 0, out, ro, n);
            else
                output_tile(mt, l->b, l->fused != 0, out, ro, n);
            if (!inside)
                put_block(patch, y, s->oh, s->ow, n, mm * ty, mm * tx, mm,
                          0);
        }
}

/* z[t][xi][o] for one NHWC sample's dy (masked where relu_y <= 0 with
 * the relu fused); db += its sums */
static void dy_tiles_nhwc(const wino_shape_t *s, const float *relu_y,
                          const float *dy, float *z, float *db,
                          float *patch)
{
    int n = s->o, mm = s->m;
    size_t row = (size_t)s->ow * n;
    for (int ty = 0; ty < s->th; ty++)
        for (int tx = 0; tx < s->tw; tx++) {
            float *zt = z + (size_t)(ty * s->tw + tx) * s->nxi * n;
            const float *g = patch;
            size_t rg = (size_t)mm * n;
            if (!relu_y &&
                block_inside(mm * ty, mm * tx, mm, s->oh, s->ow))
                g = dy + mm * (ty * row + (size_t)tx * n), rg = row;
            else
                gather_block(dy, relu_y, s->oh, s->ow, n, mm * ty, mm * tx,
                             mm, patch);
            if (mm == 4)
                dy_tile4(g, rg, zt, db, n);
            else
                dy_tile(g, rg, zt, db, n);
        }
}

typedef struct wino_bufs {
    float *u, *du, *v, *z, *dv, *plane, *tmp, *patch;
} wino_bufs_t;

static wino_bufs_t bufs_of(const dt_layer_t *l, const wino_shape_t *s)
{
    size_t uc = (size_t)s->nxi * s->o * s->c,
           t = (size_t)s->group * s->tiles;
    wino_bufs_t b;
    b.u = l->scratch;
    b.du = b.u + uc;
    b.v = b.du + uc;
    b.z = b.v + s->nxi * t * s->c;
    b.dv = b.z + s->nxi * t * s->o;
    b.plane = b.dv + s->nxi * t * s->c;
    b.tmp = b.plane + plane_floats(s);
    b.patch = b.tmp + tmp_floats(s);
    return b;
}

/* V of samples [b0, b0 + n): tiles bl * tiles + t for sample b0 + bl. */
static void group_input(const dt_layer_t *l, const wino_shape_t *s,
                        const wino_bufs_t *b, const float *x, int b0, int n)
{
    size_t in_len = dt_layer_in_size(l);
    for (int bl = 0; bl < n; bl++) {
        if (s->nhwc) {
            input_tiles_nhwc(s, x + (size_t)(b0 + bl) * in_len,
                             b->v + (size_t)bl * s->tiles * s->nxi * s->c,
                             b->patch);
            continue;
        }
        pad_plane(s, x + (size_t)(b0 + bl) * in_len, b->plane);
        input_tiles(s, b->plane,
                    b->v + (size_t)bl * s->tiles * s->nxi * s->c);
    }
}

dt_status_t dt_conv2d_winograd_forward(dt_layer_t *l, const float *x,
                                       float *y, int batch)
{
    wino_shape_t s = shape_of(l, batch);
    wino_bufs_t b = bufs_of(l, &s);
    size_t plane_out = s.pooled ? (size_t)s.tiles : (size_t)s.oh * s.ow,
           uc = (size_t)s.o * s.c;
    if (s.m == 4)
        weights_to_u4(l->w, s.o, s.c, b.u, b.du);
    else
        weights_to_u(l->w, s.o, s.c, b.u);
    for (int b0 = 0; b0 < batch; b0 += s.group) {
        int n = batch - b0 < s.group ? batch - b0 : s.group;
        group_input(l, &s, &b, x, b0, n);
        /* M[.][xi][.] (t x out) = V[.][xi][.] (t x in) U[xi]^T */
        for (int xi = 0; xi < s.nxi; xi++)
            DT_CHECK(dt_gemm(l->dev, 0, 1, n * s.tiles, s.o, s.c, 1.0f,
                             b.v + (size_t)xi * s.c, s.nxi * s.c,
                             b.u + xi * uc, s.c, 0.0f,
                             b.z + (size_t)xi * s.o, s.nxi * s.o));
        for (int bl = 0; bl < n; bl++) {
            size_t at = (size_t)(b0 + bl) * s.o * plane_out;
            int *arg = s.pooled ? (int *)(void *)l[2].scratch + at : NULL;
            if (s.nhwc) {
                output_tiles_nhwc(l, &s,
                                  b.z + (size_t)bl * s.tiles * s.nxi * s.o,
                                  y + at, b.patch);
                continue;
            }
            output_tiles(l, &s, b.z + (size_t)bl * s.tiles * s.nxi * s.o,
                         y + at, arg, b.tmp);
        }
    }
    return DT_OK;
}

dt_status_t dt_conv2d_winograd_backward(dt_layer_t *l, const float *x,
                                        const float *y, const float *dy,
                                        float *dx, int batch)
{
    wino_shape_t s = shape_of(l, batch);
    wino_bufs_t b = bufs_of(l, &s);
    size_t plane_out = s.pooled ? (size_t)s.tiles : (size_t)s.oh * s.ow,
           in_len = dt_layer_in_size(l), uc = (size_t)s.o * s.c;
    if (s.m == 4)
        weights_to_u4(l->w, s.o, s.c, b.u, b.du);
    else
        weights_to_u(l->w, s.o, s.c, b.u);
    for (int o = 0; o < s.o; o++)
        l->db[o] = 0.0f;
    for (int b0 = 0; b0 < batch; b0 += s.group) {
        int n = batch - b0 < s.group ? batch - b0 : s.group, t = n * s.tiles;
        group_input(l, &s, &b, x, b0, n);
        for (int bl = 0; bl < n; bl++) {
            size_t at = (size_t)(b0 + bl) * s.o * plane_out;
            const int *arg =
                s.pooled ? (const int *)(const void *)l[2].scratch + at
                         : NULL;
            if (s.nhwc) {
                dy_tiles_nhwc(&s, l->fused ? y + at : NULL, dy + at,
                              b.z + (size_t)bl * s.tiles * s.nxi * s.o,
                              l->db, b.patch);
                continue;
            }
            dy_tiles(l, &s, y + at, dy + at, arg,
                     b.z + (size_t)bl * s.tiles * s.nxi * s.o, l->db, b.tmp);
        }
        /* dU[xi] (out x in) += Z[.][xi][.]^T V[.][xi][.] */
        for (int xi = 0; xi < s.nxi; xi++)
            DT_CHECK(dt_gemm(l->dev, 1, 0, s.o, s.c, t, 1.0f,
                             b.z + (size_t)xi * s.o, s.nxi * s.o,
                             b.v + (size_t)xi * s.c, s.nxi * s.c,
                             b0 ? 1.0f : 0.0f, b.du + xi * uc, s.c));
        if (!dx)
            continue;
        /* dV[.][xi][.] (t x in) = Z[.][xi][.] U[xi] */
        for (int xi = 0; xi < s.nxi; xi++)
            DT_CHECK(dt_gemm(l->dev, 0, 0, t, s.c, s.o, 1.0f,
                             b.z + (size_t)xi * s.o, s.nxi * s.o,
                             b.u + xi * uc, s.c, 0.0f,
                             b.dv + (size_t)xi * s.c, s.nxi * s.c));
        for (int bl = 0; bl < n; bl++) {
            if (s.nhwc) {
                scatter_tiles_nhwc(&s,
                                   b.dv + (size_t)bl * s.tiles * s.nxi * s.c,
                                   dx + (size_t)(b0 + bl) * in_len, b.patch);
                continue;
            }
            scatter_tiles(&s, b.dv + (size_t)bl * s.tiles * s.nxi * s.c,
                          b.plane);
            unpad_plane(&s, b.plane, dx + (size_t)(b0 + bl) * in_len);
        }
    }
    if (s.m == 4)
        du_to_weights4(b.du, s.o, s.c, l->dw, b.u);
    else
        du_to_weights(b.du, s.o, s.c, l->dw);
    return DT_OK;
}
