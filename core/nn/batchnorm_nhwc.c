/* batchnorm_nhwc.c — see batchnorm_nhwc.h.
 *
 * ResNets' C (16, 32, 64) divides W = 64: then the rows are folded, W
 * floats (W / C rows) per step, lane j holding channel j % C, so every
 * loop is W floats wide whatever C is (a row of 16 channels alone is
 * one AVX-512 vector, and per-row loops of a variable 16 spent their
 * time in loop overhead: batchnorm ran 1.5x its NCHW time). Other C go
 * in chunks of W channels. Float partial sums over RB steps, then
 * accumulated per channel in double. */
#include "config.h"

#include <string.h>

#include "batchnorm_nhwc.h"
#include "coll/simd_clones.h"
#include "cuda/elem_math.h"

#define W 64
#define RB 64

/* C folds into W-float steps */
static int folds(int C) { return C <= W && W % C == 0; }

/* v[j] = a[j % C] for the W lanes */
static void spread(const float *a, int C, float v[W])
{
    for (int j = 0; j < W; j++)
        v[j] = a[j % C];
}

/* The loops below walk "steps" of W floats: the folded rows (lane j:
 * channel j % C), or one W-channel chunk of one row (lane j: channel c0
 * + j; n lanes used). at(step) is the step's first float. */
typedef struct walk {
    int fold, C, c0, n;
    size_t steps;
} walk_t;

static walk_t walk_folded(size_t rows, int C)
{
    walk_t k = {1, C, 0, W, rows * (size_t)C / W};
    return k;
}

static size_t at(const walk_t *k, size_t step)
{
    return k->fold ? step * W : step * k->C + k->c0;
}

/* fold: the floats past the last whole step (rows * C % W of them) */
static size_t tail_start(const walk_t *k) { return k->steps * W; }

DT_SIMD_CLONES
void dt_bn_nhwc_sums(const float *x, size_t rows, int C, double *S)
{
    if (folds(C)) {
        walk_t k = walk_folded(rows, C);
        for (size_t s0 = 0; s0 < k.steps; s0 += RB) {
            size_t s1 = s0 + RB < k.steps ? s0 + RB : k.steps;
            float part[W] = {0};
            for (size_t s = s0; s < s1; s++) {
                const float *restrict xr = x + at(&k, s);
                for (int j = 0; j < W; j++)
                    part[j] += xr[j];
            }
            for (int j = 0; j < W; j++)
                S[j % C] += part[j];
        }
        for (size_t i = tail_start(&k); i < rows * (size_t)C; i++)
            S[i % C] += x[i];
        return;
    }
    for (int c0 = 0; c0 < C; c0 += W) {
        int n = C - c0 < W ? C - c0 : W;
        for (size_t r0 = 0; r0 < rows; r0 += RB) {
            size_t r1 = r0 + RB < rows ? r0 + RB : rows;
            float part[W] = {0};
            for (size_t r = r0; r < r1; r++) {
                const float *restrict xr = x + r * C + c0;
                for (int c = 0; c < n; c++)
                    part[c] += xr[c];
            }
            for (int c = 0; c < n; c++)
                S[c0 + c] += part[c];
        }
    }
}

DT_SIMD_CLONES
void dt_bn_nhwc_sqdev(const float *x, size_t rows, int C, const float *mean,
                      double *Q)
{
    if (folds(C)) {
        walk_t k = walk_folded(rows, C);
        float m[W];
        spread(mean, C, m);
        for (size_t s0 = 0; s0 < k.steps; s0 += RB) {
            size_t s1 = s0 + RB < k.steps ? s0 + RB : k.steps;
            float part[W] = {0};
            for (size_t s = s0; s < s1; s++) {
                const float *restrict xr = x + at(&k, s);
                for (int j = 0; j < W; j++) {
                    float d = xr[j] - m[j];
                    part[j] += d * d;
                }
            }
            for (int j = 0; j < W; j++)
                Q[j % C] += part[j];
        }
        for (size_t i = tail_start(&k); i < rows * (size_t)C; i++) {
            float d = x[i] - mean[i % C];
            Q[i % C] += d * d;
        }
        return;
    }
    for (int c0 = 0; c0 < C; c0 += W) {
        int n = C - c0 < W ? C - c0 : W;
        for (size_t r0 = 0; r0 < rows; r0 += RB) {
            size_t r1 = r0 + RB < rows ? r0 + RB : rows;
            float part[W] = {0};
            for (size_t r = r0; r < r1; r++) {
                const float *restrict xr = x + r * C + c0;
                for (int c = 0; c < n; c++) {
                    float d = xr[c] - mean[c0 + c];
                    part[c] += d * d;
                }
            }
            for (int c = 0; c < n; c++)
                Q[c0 + c] += part[c];
        }
    }
}

DT_SIMD_CLONES
void dt_bn_nhwc_apply(const float *x, float *y, size_t rows, int C,
                      const float *s, const float *t, float floor)
{
    size_t i = 0, total = rows * (size_t)C;
    if (folds(C)) {
        float sv[W], tv[W];
        spread(s, C, sv);
        spread(t, C, tv);
        for (; i + W <= total; i += W) {
            const float *restrict xr = x + i;
            float *restrict yr = y + i;
            for (int j = 0; j < W; j++)
                yr[j] = dt_elem_bn_apply(xr[j], sv[j], tv[j], floor);
        }
        for (; i < total; i++)
            y[i] = dt_elem_bn_apply(x[i], s[i % C], t[i % C], floor);
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * C;
        float *restrict yr = y + r * C;
        for (int c = 0; c < C; c++)
            yr[c] = dt_elem_bn_apply(xr[c], s[c], t[c], floor);
    }
}

/* one step of the gradient sums: W (or n) lanes */
static inline __attribute__((always_inline)) void
grad_step(const float *restrict xr, const float *restrict g,
          const float *restrict yr, int relu, int n, float *restrict part,
          float *restrict partx)
{
    if (relu)
        for (int j = 0; j < n; j++) {
            /* both loads unconditional: a select */
            float gv = g[j], d = yr[j] > 0.0f ? gv : 0.0f;
            part[j] += d;
            partx[j] += d * xr[j];
        }
    else
        for (int j = 0; j < n; j++) {
            part[j] += g[j];
            partx[j] += g[j] * xr[j];
        }
}

DT_SIMD_CLONES
void dt_bn_nhwc_grad_sums(const float *x, const float *y, const float *dy,
                          size_t rows, int C, int relu, double *acc,
                          double *accx)
{
    if (folds(C)) {
        walk_t k = walk_folded(rows, C);
        for (size_t s0 = 0; s0 < k.steps; s0 += RB) {
            size_t s1 = s0 + RB < k.steps ? s0 + RB : k.steps;
            float part[W] = {0}, partx[W] = {0};
            for (size_t s = s0; s < s1; s++) {
                size_t a = at(&k, s);
                grad_step(x + a, dy + a, y + a, relu, W, part, partx);
            }
            for (int j = 0; j < W; j++) {
                acc[j % C] += part[j];
                accx[j % C] += partx[j];
            }
        }
        for (size_t i = tail_start(&k); i < rows * (size_t)C; i++) {
            float d = !relu || y[i] > 0.0f ? dy[i] : 0.0f;
            acc[i % C] += d;
            accx[i % C] += d * x[i];
        }
        return;
    }
    for (int c0 = 0; c0 < C; c0 += W) {
        int n = C - c0 < W ? C - c0 : W;
        for (size_t r0 = 0; r0 < rows; r0 += RB) {
            size_t r1 = r0 + RB < rows ? r0 + RB : rows;
            float part[W] = {0}, partx[W] = {0};
            for (size_t r = r0; r < r1; r++) {
                size_t a = r * C + c0;
                grad_step(x + a, dy + a, y + a, relu, n, part, partx);
            }
            for (int c = 0; c < n; c++) {
                acc[c0 + c] += part[c];
                accx[c0 + c] += partx[c];
            }
        }
    }
}

/* dx over floats [i0, i1) whose lane j has coefficients k[j], b[j],
 * off[j] */
static inline __attribute__((always_inline)) void
dx_run(const float *restrict x, const float *restrict y,
       const float *restrict dy, float *restrict dx, int relu, int n,
       const float *k, const float *b, const float *off)
{
    if (relu)
        for (int j = 0; j < n; j++) {
            float gv = dy[j], gm = y[j] > 0.0f ? gv : 0.0f;
            dx[j] = dt_elem_bn_dx(gm, x[j], k[j], b[j], off[j]);
        }
    else
        for (int j = 0; j < n; j++)
            dx[j] = dt_elem_bn_dx(dy[j], x[j], k[j], b[j], off[j]);
}

DT_SIMD_CLONES
void dt_bn_nhwc_dx(const float *x, const float *y, const float *dy,
                   float *dx, size_t rows, int C, int relu, const float *k,
                   const float *b, const float *off)
{
    size_t i = 0, total = rows * (size_t)C;
    if (folds(C)) {
        float kv[W], bv[W], ov[W];
        spread(k, C, kv);
        spread(b, C, bv);
        spread(off, C, ov);
        for (; i + W <= total; i += W)
            dx_run(x + i, y + i, dy + i, dx + i, relu, W, kv, bv, ov);
        for (; i < total; i++) {
            int c = (int)(i % C);
            float g = !relu || y[i] > 0.0f ? dy[i] : 0.0f;
            dx[i] = dt_elem_bn_dx(g, x[i], k[c], b[c], off[c]);
        }
        return;
    }
    for (size_t r = 0; r < rows; r++)
        dx_run(x + r * C, y + r * C, dy + r * C, dx + r * C, relu, C, k, b,
               off);
}
