/* elem_math.h — the per-element arithmetic of dt's own CUDA kernels, as
 * inline functions both compilers build: nvcc as __host__ __device__ (the
 * kernels call them), the C compiler as plain static inline, so that a
 * cmocka test (tests/test_elem_math.c) runs the very same arithmetic on
 * the CPU against the CPU layers. A kernel added to core/cuda keeps its
 * arithmetic here and only its indexing in the .cu file.
 *
 * Header-only; no CUDA header needed from C. */
#ifndef DT_CUDA_ELEM_MATH_H
#define DT_CUDA_ELEM_MATH_H

#ifdef __CUDACC__
#define DT_HD __host__ __device__
#else
#define DT_HD
#include <math.h>
#endif

/* Softmax cross-entropy with label smoothing eps over k classes: the
 * target is q = (1 - eps) onehot + eps/k (eps = 0: onehot). */

/* The target probability of class j (label: the row's true class). */
static inline DT_HD float dt_elem_xent_target(int j, int label, int k,
                                              float eps)
{
    float off = eps / (float)k, on = 1.0f - eps + off;
    return j == label ? on : off;
}

/* dlogits of one element: (p - q) / batch. The same operations, in the
 * same order, as the CPU's dt_softmax_xent_backward. */
static inline DT_HD float dt_elem_xent_grad(float p, int j, int label, int k,
                                            float eps, int batch)
{
    float inv = 1.0f / (float)batch;
    return (p - dt_elem_xent_target(j, label, k, eps)) * inv;
}

/* The row's loss: log(sum) + max - target logit, the target logit being
 * (1 - eps) z_label + eps/k sum_j z_j with smoothing. lse_part is
 * logf(sum) + max, as the caller computed it; zsum the row's sum of
 * logits (unused without smoothing). Matches softmax_xent.c. */
static inline DT_HD float dt_elem_xent_loss(float lse_part, float z_label,
                                            float zsum, int k, float eps)
{
    float target = z_label;
    if (eps > 0.0f)
        target = (1.0f - eps) * target + eps / (float)k * zsum;
    return lse_part - target;
}

/* Batch normalization with the statistics already known (sync_bn on
 * CUDA: core/cuda/bn_sync.cu; the CPU layer: core/nn/batchnorm.c), per
 * channel c folded into a multiply-add: y = x s_c + t_c with s_c = gamma_c
 * invstd_c and t_c = beta_c - mean_c s_c, clamped at floor (0 with a
 * fused relu, else -inf). */
static inline DT_HD float dt_elem_bn_apply(float x, float s, float t,
                                           float floor)
{
    float v = x * s + t;
    return v > floor ? v : floor;
}

/* dt_elem_bn_apply's s and t of one channel */
static inline DT_HD void dt_elem_bn_scale_shift(float gamma, float beta,
                                                float mean, float invstd,
                                                float *s, float *t)
{
    *s = gamma * invstd;
    *t = beta - mean * *s;
}

/* Its input gradient, from the batch sums: dx = k (g - x b + off) with
 * k = gamma invstd, b = (sum g xhat / M) invstd, off = mean b - sum g / M
 * (g: the gradient at the output, masked by a fused relu). */
static inline DT_HD float dt_elem_bn_dx(float g, float x, float k, float b,
                                        float off)
{
    return k * (g - x * b + off);
}

/* sync_bn's per-channel arithmetic (the CPU layer, core/nn/batchnorm.c,
 * and the CUDA kernels of core/cuda/bn_sync.cu both call these). */

/* Forward, from the global sums S = sum x and Q = sum x^2 over M
 * values: the batch mean and invstd; the running mean and variance (in
 * and out) moved by momentum mom toward the batch's, the variance
 * unbiased (M / (M - 1)) as PyTorch keeps it. */
static inline DT_HD void dt_elem_bn_stats(double S, double Q, double M,
                                          double eps, double mom,
                                          float *mean, float *invstd,
                                          float *rmean, float *rvar)
{
    double md = S / M, var = Q / M - md * md;
    if (var < 0.0)
        var = 0.0;
    *mean = (float)md;
    *invstd = (float)(1.0 / sqrt(var + eps));
    if (M < 2.0)
        return; /* one value per channel has no variance to learn: the
                   running statistics stay (moved toward 0, they would
                   wreck evaluation) */
    double unbiased = var * M / (M - 1);
    *rmean = (float)((1.0 - mom) * *rmean + mom * *mean);
    *rvar = (float)((1.0 - mom) * *rvar + mom * unbiased);
}

/* sum g xhat = invstd (sum g x - mean sum g): dgamma, from acc = sum g
 * and accx = sum g x */
static inline DT_HD double dt_elem_bn_gxhat(double acc, double accx,
                                            float mean, float invstd)
{
    return invstd * (accx - mean * acc);
}

/* dt_elem_bn_dx's k, b, off for one channel, from the sums over M values
 * (gxhat: dt_elem_bn_gxhat of the same sums) */
static inline DT_HD void dt_elem_bn_dx_coef(double acc, double gxhat,
                                            double M, float mean,
                                            float invstd, float gamma,
                                            float *k, float *b, float *off)
{
    float a = (float)(acc / M);
    *k = gamma * invstd;
    *b = (float)((float)gxhat / M) * invstd;
    *off = -a + mean * *b;
}

/* float32 <-> bfloat16 (the upper 16 bits), round to nearest even; a NaN
 * stays a (quiet) NaN. The same rounding as the core's compressed
 * allreduce (core/coll/coll_half.c bf16_round). */
static inline DT_HD unsigned short dt_elem_to_bf16(float f)
{
    union { float f; unsigned int u; } v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((v.u >> 16) | 0x40u);
    return (unsigned short)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

static inline DT_HD float dt_elem_from_bf16(unsigned short h)
{
    union { float f; unsigned int u; } v;
    v.u = (unsigned int)h << 16;
    return v.f;
}

/* relu on a stored bf16 activation: exactly to_bf16(relu(from_bf16(h)))
 * (the value itself or +0; nan and -0 give +0, as the float layer's
 * x > 0 ? x : 0 does), without the float round trip. */
static inline DT_HD unsigned short dt_elem_relu_bf16(unsigned short h)
{
    return dt_elem_from_bf16(h) > 0.0f ? h : (unsigned short)0;
}

/* relu's input gradient from its stored bf16 output y: dy where y > 0. */
static inline DT_HD float dt_elem_relu_grad_bf16(unsigned short y, float dy)
{
    return dt_elem_from_bf16(y) > 0.0f ? dy : 0.0f;
}

/* The residual add on stored bf16: exactly to_bf16(from(a) + from(b)),
 * the widened path's float sum rounded as it is stored. */
static inline DT_HD unsigned short dt_elem_add_bf16(unsigned short a,
                                                    unsigned short b)
{
    return dt_elem_to_bf16(dt_elem_from_bf16(a) + dt_elem_from_bf16(b));
}

#endif /* DT_CUDA_ELEM_MATH_H */
