/* batchnorm.c — batch normalization over the channels of an image
 * (N, C, H, W: statistics over N*H*W per channel) or the features of a
 * flat vector (N, C: over N), PyTorch's BatchNorm2d / BatchNorm1d.
 * args: momentum (0.1), eps (1e-5). Parameters: gamma (the "weights", C,
 * initialized to 1) and beta (the "bias", C, 0). Buffers (layer.h): the
 * running mean (C, starts at 0) then the running variance (C, 1).
 *
 * Train:  mean_c, var_c (biased) over the batch; xhat = (x - mean) *
 *         invstd, invstd = 1/sqrt(var + eps); y = gamma xhat + beta;
 *         running = (1 - momentum) running + momentum * batch value, the
 *         variance unbiased (M/(M-1)) as PyTorch keeps it.
 * Eval:   the same with the running mean and variance.
 * Backward (train): dbeta = sum dy; dgamma = sum dy xhat;
 *         dx = gamma invstd (dy - dbeta/M - xhat dgamma/M), M = N*H*W.
 *
 * The scratch keeps each channel's mean and invstd between forward and
 * backward; xhat is recomputed from x (no batch-sized buffer). Sums run
 * over contiguous planes (memory order for both layouts) in float with
 * 8 partial sums (16 in backward), accumulated per channel in double.
 * The statistics take two passes (the mean, then squared deviations),
 * with sync_bn or without: a one-pass form (sums of x - pivot and its
 * square, pivot the channel's first value) had 5x the variance error
 * of two passes on N(0,1) data and 70x with a pivot 6 sd out (1.2e-7
 * and 1.5e-6 relative against 2e-8) and saved at most 0.3 ms of
 * ResNet-20's 175 ms step (batch 64), within the noise. The output
 * takes one pass (normalize and affine as one multiply-add).
 *
 * An NHWC model's activations (layer.h): the same sums and coefficients,
 * the passes along the channels (batchnorm_nhwc.c).
 *
 * On the cpu a relu right after (read by nothing else) is applied here,
 * l->fused = 1 (model_init.c): forward writes max(y, 0) in the same
 * pass, backward masks dy by y > 0 as it reads it (so the sums below,
 * and with sync_bn what goes to the allreduce, are the masked dy's), and
 * the relu's own passes (and the batchnorm's output buffer) are skipped.
 * cpu only.
 *
 * sync_bn (l->allreduce set, dt_model_set_sync_bn): M, mean and var are
 * those of the global batch. Forward sums, per channel, S = sum x and
 * Q = sum x^2 and the count over the ranks in ONE call (2C+1 doubles);
 * Q is formed locally as M2 + M md^2 from this rank's two-pass squared
 * deviations M2 (md = S/M in double), so var = Q/N - (S/N)^2 cancels
 * only the spread between the ranks' means, never a float sum of
 * squares. Backward sums sum dy and sum dy x in ONE call (2C doubles)
 * before dx; dgamma and dbeta stay this rank's sums (the trainer
 * averages gradients).
 *
 * On CUDA through cuDNN (the backend's bn_forward / bn_backward,
 * core/cuda/cudnn_bn.c): spatial mode for an image, per-activation for a
 * flat input, the running statistics updated in place in l->buf on the
 * device, the batch mean and invstd kept in the scratch for backward.
 * sync_bn on CUDA (bn_forward_sync_cuda, bn_backward_sync_cuda): the same
 * sums and arithmetic as here (elem_math.h's dt_elem_bn_*), all on the
 * device (core/cuda/bn_sync.cu) but the allreduce: the sums go to the
 * host and back, two small copies per layer and pass; the relu is never
 * fused on CUDA. Every such layer waits for its sums: sync_bn is a
 * barrier per layer anyway. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "batchnorm_nhwc.h"
#include "coll/simd_clones.h"
#include "cuda/elem_math.h"
#include "layer.h"

static dt_status_t bn_setup(dt_layer_t *l, char *why, size_t why_len)
{
    l->out_c = l->in_c, l->out_h = l->in_h, l->out_w = l->in_w;
    l->out_flat = l->in_flat;
    l->nweights = (size_t)l->in_c;
    l->nbias = (size_t)l->in_c;
    l->nbuffers = 2 * (size_t)l->in_c;
    l->fan_in = l->fan_out = 1;
    return DT_OK;
}

/* per channel: mean, invstd (kept for backward) as floats, then 2C + 2
 * doubles: the accumulators (2C + 1 of them go to the allreduce with
 * sync_bn) and the global count M, kept for backward; then 3C floats for
 * sync_bn on CUDA: the per-channel coefficients its kernels read. */
static size_t bn_scratch(const dt_layer_t *l, int batch)
{
    return 9 * (size_t)l->in_c + 4;
}

/* The cuDNN call's shape, parameters and buffers. */
static dt_cuda_bn_t cuda_bn(dt_layer_t *l, int batch)
{
    int C = l->in_c;
    dt_cuda_bn_t bn = {.n = batch, .c = C, .h = l->in_h, .w = l->in_w,
                       .per_activation = l->in_flat,
                       .momentum = l->args[0], .eps = l->args[1],
                       .gamma = l->w, .beta = l->b,
                       .running_mean = l->buf, .running_var = l->buf + C,
                       .save_mean = l->scratch,
                       .save_invstd = l->scratch + C};
    return bn;
}

/* ---- sync_bn on CUDA ---------------------------------------------------
 * Device scratch as on the cpu: mean, invstd (C floats each), 2C + 2
 * doubles (the sums, then the global count M at 2C), then 3C floats of
 * coefficients. Only the sums cross to the host, for the allreduce, and
 * back; the per-channel arithmetic runs on the device (the backend's
 * bn_stats, bn_grads, bn_dx_coef: elem_math.h's functions, as here). */
typedef struct bn_sync {
    const dt_cuda_backend_t *cu;
    int C, hw;
    float *dmean, *dinvstd, *dcoef; /* device */
    double *dsums;                  /* device: 2C sums, M at 2C         */
    double *h;                      /* host: 2C + 1 doubles              */
} bn_sync_t;

static dt_status_t bn_sync_open(dt_layer_t *l, bn_sync_t *s)
{
    int C = l->in_c;
    s->cu = dt_cuda_backend_loaded();
    s->C = C;
    s->hw = l->in_h * l->in_w;
    s->dmean = l->scratch;
    s->dinvstd = s->dmean + C;
    s->dsums = (double *)(void *)(s->dinvstd + C);
    s->dcoef = (float *)(void *)(s->dsums + 2 * C + 2);
    s->h = malloc((2 * (size_t)C + 1) * sizeof(double));
    return s->h ? DT_OK : DT_ERR_NOMEM;
}

static dt_status_t bn_sync_failed(const dt_layer_t *l, const char *what,
                                  dt_status_t st)
{
    dt_error("batchnorm (layer %d): summing the %s over the ranks failed "
             "(%s)", l->index, what, dt_status_str(st));
    return st;
}

/* The first n of the device's sums summed over the ranks, in place: the
 * one round trip through the host. */
static dt_status_t bn_sync_allreduce(dt_layer_t *l, bn_sync_t *s, size_t n,
                                     const char *what)
{
    size_t bytes = 2 * (size_t)s->C * sizeof(double);
    DT_CHECK(dt_device_copy(l->dev, s->h, DT_MEM_HOST, s->dsums, DT_MEM_CUDA,
                            bytes));
    dt_status_t st = l->allreduce(l->allreduce_arg, s->h, n);
    if (st != DT_OK)
        return bn_sync_failed(l, what, st);
    return dt_device_copy(l->dev, s->dsums, DT_MEM_CUDA, s->h, DT_MEM_HOST,
                          n * sizeof(double));
}

static dt_status_t bn_forward_sync_cuda_(dt_layer_t *l, bn_sync_t *s,
                                         const float *x, float *y, int batch)
{
    int C = s->C;
    DT_CHECK(s->cu->bn_sums(l->dev, batch, C, s->hw, x, NULL, s->dsums));
    s->h[2 * C] = (double)batch * s->hw; /* the count, summed with them */
    DT_CHECK(bn_sync_allreduce(l, s, 2 * (size_t)C + 1,
                               "batch statistics"));
    /* mean, invstd; the running statistics in place; y = x s + t */
    float *sc = s->dcoef, *sh = s->dcoef + C;
    DT_CHECK(s->cu->bn_stats(l->dev, C, s->dsums, l->args[1], l->args[0],
                             l->w, l->b, s->dmean, s->dinvstd, l->buf,
                             l->buf + C, sc, sh));
    return s->cu->bn_apply(l->dev, batch, C, s->hw, x, sc, sh, y);
}

static dt_status_t bn_forward_sync_cuda(dt_layer_t *l, const float *x,
                                        float *y, int batch)
{
    bn_sync_t s;
    DT_CHECK(bn_sync_open(l, &s));
    dt_status_t st = bn_forward_sync_cuda_(l, &s, x, y, batch);
    free(s.h);
    return st;
}

static dt_status_t bn_backward_sync_cuda_(dt_layer_t *l, bn_sync_t *s,
                                          const float *x, const float *dy,
                                          float *dx, int batch)
{
    int C = s->C;
    /* sum dy, sum dy x; this rank's dgamma, dbeta from them (the trainer
     * averages gradients); M stays at 2C from forward */
    DT_CHECK(s->cu->bn_sums(l->dev, batch, C, s->hw, dy, x, s->dsums));
    DT_CHECK(s->cu->bn_grads(l->dev, C, s->dsums, s->dmean, s->dinvstd,
                             l->dw, l->db));
    if (!dx)
        return DT_OK;
    DT_CHECK(bn_sync_allreduce(l, s, 2 * (size_t)C, "gradient statistics"));
    float *k = s->dcoef, *b = s->dcoef + C, *off = s->dcoef + 2 * C;
    DT_CHECK(s->cu->bn_dx_coef(l->dev, C, s->dsums, s->dmean, s->dinvstd,
                               l->w, k, b, off));
    return s->cu->bn_dx(l->dev, batch, C, s->hw, dy, x, k, b, off, dx);
}

static dt_status_t bn_backward_sync_cuda(dt_layer_t *l, const float *x,
                                         const float *dy, float *dx,
                                         int batch)
{
    bn_sync_t s;
    DT_CHECK(bn_sync_open(l, &s));
    dt_status_t st = bn_backward_sync_cuda_(l, &s, x, dy, dx, batch);
    free(s.h);
    return st;
}

static dt_status_t bn_forward_cuda(dt_layer_t *l, const float *x, float *y,
                                   int batch, int train)
{
    if (train && l->allreduce)
        return bn_forward_sync_cuda(l, x, y, batch);
    dt_cuda_bn_t bn = cuda_bn(l, batch);
    bn.x16 = (l->io16 & 3) == 3; /* stored bf16 in and out */
    return dt_cuda_backend_loaded()->bn_forward(l->dev, &bn, train, x, y);
}

static inline __attribute__((always_inline)) float
sum8(const float *restrict v, int n)
{
    float part[8] = {0};
    int p = 0;
    for (; p + 8 <= n; p += 8)
        for (int j = 0; j < 8; j++)
            part[j] += v[p + j];
    float s = 0.0f;
    for (int j = 0; j < 8; j++)
        s += part[j];
    for (; p < n; p++)
        s += v[p];
    return s;
}

/* sum of (v - m)^2 */
static inline __attribute__((always_inline)) float
sqdev8(const float *restrict v, int n, float m)
{
    float part[8] = {0};
    int p = 0;
    for (; p + 8 <= n; p += 8)
        for (int j = 0; j < 8; j++) {
            float d = v[p + j] - m;
            part[j] += d * d;
        }
    float s = 0.0f;
    for (int j = 0; j < 8; j++)
        s += part[j];
    for (; p < n; p++)
        s += (v[p] - m) * (v[p] - m);
    return s;
}

/* S[c] += the sum of channel c over the batch, in either layout */
static inline __attribute__((always_inline)) void
channel_sums(const dt_layer_t *l, const float *x, int batch, double *S)
{
    int C = l->in_c, plane = l->in_h * l->in_w;
    if (l->nhwc) {
        dt_bn_nhwc_sums(x, (size_t)batch * plane, C, S);
        return;
    }
    size_t len = (size_t)C * plane;
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++)
            S[c] += sum8(x + n * len + (size_t)c * plane, plane);
}

/* Q[c] += the sum of channel c's squared deviations from mean[c] */
static inline __attribute__((always_inline)) void
channel_sqdevs(const dt_layer_t *l, const float *x, int batch,
               const float *mean, double *Q)
{
    int C = l->in_c, plane = l->in_h * l->in_w;
    if (l->nhwc) {
        dt_bn_nhwc_sqdev(x, (size_t)batch * plane, C, mean, Q);
        return;
    }
    size_t len = (size_t)C * plane;
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++)
            Q[c] += sqdev8(x + n * len + (size_t)c * plane, plane, mean[c]);
}

/* Built for AVX-512 and AVX2 as well as the baseline (simd_clones.h):
 * every loop below runs along a plane; the partial sums keep their
 * lanes (part[j]) whatever the vector width. */
DT_SIMD_CLONES
static dt_status_t bn_forward(dt_layer_t *l, const float *x, float *y,
                              int batch, int train)
{
    if (dt_layer_on_cuda(l))
        return bn_forward_cuda(l, x, y, batch, train);
    int C = l->in_c, plane = l->in_h * l->in_w, relu = l->fused;
    size_t len = (size_t)C * plane;
    float *mean = l->scratch, *invstd = mean + C;
    double *acc = (double *)(void *)(invstd + C);
    float *rmean = l->buf, *rvar = l->buf + C;
    double eps = l->args[1], mom = l->args[0];
    if (train && l->allreduce) {
        double *count = acc + 2 * C, *keepM = acc + 2 * C + 1;
        double M = (double)batch * plane;
        double *S = acc, *Q = acc + C;
        for (int c = 0; c < C; c++)
            S[c] = Q[c] = 0.0;
        channel_sums(l, x, batch, S);
        for (int c = 0; c < C; c++)
            mean[c] = (float)(S[c] / M); /* this rank's, for the M2 pass */
        channel_sqdevs(l, x, batch, mean, Q);
        for (int c = 0; c < C; c++) {
            /* sum (x - md)^2 = sum (x - m)^2 - M (md - m)^2, m = mean[c] */
            double md = S[c] / M, d = md - mean[c];
            Q[c] = (Q[c] - M * d * d) + M * md * md;
        }
        *count = M;
        dt_status_t st = l->allreduce(l->allreduce_arg, acc,
                                      2 * (size_t)C + 1);
        if (st != DT_OK) {
            dt_error("batchnorm (layer %d): summing the batch statistics "
                     "over the ranks failed (%s)", l->index,
                     dt_status_str(st));
            return st;
        }
        M = *count;
        *keepM = M;
        for (int c = 0; c < C; c++)
            dt_elem_bn_stats(S[c], Q[c], M, eps, mom, &mean[c], &invstd[c],
                             &rmean[c], &rvar[c]);
    } else if (train) {
        double M = (double)batch * plane;
        /* two passes (mean, then squared deviations): no cancellation */
        for (int c = 0; c < C; c++)
            acc[c] = 0.0;
        channel_sums(l, x, batch, acc);
        for (int c = 0; c < C; c++) {
            mean[c] = (float)(acc[c] / M);
            acc[c] = 0.0;
        }
        channel_sqdevs(l, x, batch, mean, acc);
        for (int c = 0; c < C; c++) {
            double var = acc[c] / M;
            invstd[c] = (float)(1.0 / sqrt(var + eps));
            if (M < 2.0)
                continue; /* one value per channel: running stats stay */
            double unbiased = var * M / (M - 1);
            rmean[c] = (float)((1.0 - mom) * rmean[c] + mom * mean[c]);
            rvar[c] = (float)((1.0 - mom) * rvar[c] + mom * unbiased);
        }
    } else {
        for (int c = 0; c < C; c++) {
            mean[c] = rmean[c];
            invstd[c] = (float)(1.0 / sqrt((double)rvar[c] + eps));
        }
    }
    /* normalize and scale folded into one multiply-add; with the relu
     * fused (l->fused), its max in the same pass */
    float floor = relu ? 0.0f : -INFINITY;
    if (l->nhwc) { /* the coefficients per channel, in the cpu's 3C
                    * floats of scratch that sync_bn on CUDA uses */
        float *s = (float *)(void *)(acc + 2 * C + 2), *t = s + C;
        for (int c = 0; c < C; c++)
            dt_elem_bn_scale_shift(l->w[c], l->b[c], mean[c], invstd[c],
                                   &s[c], &t[c]);
        dt_bn_nhwc_apply(x, y, (size_t)batch * plane, C, s, t, floor);
        return DT_OK;
    }
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++) {
            const float *restrict xr = x + n * len + (size_t)c * plane;
            float *restrict yr = y + n * len + (size_t)c * plane;
            float s, t;
            dt_elem_bn_scale_shift(l->w[c], l->b[c], mean[c], invstd[c], &s,
                                   &t);
            for (int p = 0; p < plane; p++)
                yr[p] = dt_elem_bn_apply(xr[p], s, t, floor);
        }
    return DT_OK;
}

/* With the relu fused, y and dy are the relu's: the gradient at the
 * batchnorm's output is dy where y > 0, recomputed in both passes. */
DT_SIMD_CLONES
static dt_status_t bn_backward(dt_layer_t *l, const float *x, const float *y,
                               const float *dy, float *dx, int batch)
{
    if (dt_layer_on_cuda(l) && l->allreduce)
        return bn_backward_sync_cuda(l, x, dy, dx, batch);
    if (dt_layer_on_cuda(l)) {
        dt_cuda_bn_t bn = cuda_bn(l, batch);
        return dt_cuda_backend_loaded()->bn_backward(l->dev, &bn, x, dy, dx,
                                                     l->dw, l->db);
    }
    int C = l->in_c, plane = l->in_h * l->in_w, relu = l->fused;
    size_t len = (size_t)C * plane;
    const float *mean = l->scratch, *invstd = mean + C;
    double *acc = (double *)(void *)(l->scratch + 2 * C); /* sum dy */
    double *accx = acc + C;                              /* sum dy*x */
    for (int c = 0; c < C; c++)
        acc[c] = accx[c] = 0.0;
    if (l->nhwc)
        dt_bn_nhwc_grad_sums(x, y, dy, (size_t)batch * plane, C, relu, acc,
                             accx);
    for (int n = 0; n < batch && !l->nhwc; n++)
        for (int c = 0; c < C; c++) {
            size_t at = n * len + (size_t)c * plane;
            const float *restrict xr = x + at, *restrict g = dy + at,
                                  *restrict yr = y + at;
            float part[16] = {0}, partx[16] = {0};
            int p = 0;
            if (relu)
                for (; p + 16 <= plane; p += 16)
                    for (int j = 0; j < 16; j++) {
                        /* both loads unconditional: a select, no branch */
                        float gv = g[p + j], d = yr[p + j] > 0.0f ? gv : 0.0f;
                        part[j] += d;
                        partx[j] += d * xr[p + j];
                    }
            else
                for (; p + 16 <= plane; p += 16)
                    for (int j = 0; j < 16; j++) {
                        part[j] += g[p + j];
                        partx[j] += g[p + j] * xr[p + j];
                    }
            float s = 0.0f, sx = 0.0f;
            for (; p < plane; p++) {
                float gv = g[p], d = !relu || yr[p] > 0.0f ? gv : 0.0f;
                s += d, sx += d * xr[p];
            }
            for (int j = 0; j < 16; j++)
                s += part[j], sx += partx[j];
            acc[c] += s;
            accx[c] += sx;
        }
    double M = (double)batch * plane;
    for (int c = 0; c < C; c++) {
        l->dw[c] = (float)dt_elem_bn_gxhat(acc[c], accx[c], mean[c],
                                           invstd[c]);
        l->db[c] = (float)acc[c];
    }
    if (!dx)
        return DT_OK;
    /* sync_bn: dx needs the global batch's sums (acc, accx become them)
     * and the global sum dy xhat (then kept in accx). */
    int global = l->allreduce != NULL;
    if (global) {
        dt_status_t st = l->allreduce(l->allreduce_arg, acc, 2 * (size_t)C);
        if (st != DT_OK) {
            dt_error("batchnorm (layer %d): summing the gradient statistics "
                     "over the ranks failed (%s)", l->index,
                     dt_status_str(st));
            return st;
        }
        M = acc[2 * C + 1]; /* the forward's global count */
        for (int c = 0; c < C; c++)
            accx[c] = dt_elem_bn_gxhat(acc[c], accx[c], mean[c], invstd[c]);
    }
    if (l->nhwc) { /* the same coefficients, per channel, then one pass */
        float *k = (float *)(void *)(acc + 2 * C + 2), *b = k + C,
              *off = b + C;
        for (int c = 0; c < C; c++)
            dt_elem_bn_dx_coef(acc[c], global ? accx[c] : l->dw[c], M,
                               mean[c], invstd[c], l->w[c], &k[c], &b[c],
                               &off[c]);
        dt_bn_nhwc_dx(x, y, dy, dx, (size_t)batch * plane, C, relu, k, b,
                      off);
        return DT_OK;
    }
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++) {
            size_t at = n * len + (size_t)c * plane;
            const float *restrict xr = x + at, *restrict g = dy + at,
                                  *restrict yr = y + at;
            float *restrict d = dx + at;
            /* dx = k (dy - a - xhat b) with xhat = (x - mean) invstd:
             * dx = k dy + (k xhat) coefficients folded per channel */
            float k, b, off;
            dt_elem_bn_dx_coef(acc[c], global ? accx[c] : l->dw[c], M,
                               mean[c], invstd[c], l->w[c], &k, &b, &off);
            if (relu)
                for (int p = 0; p < plane; p++) {
                    float gv = g[p], gm = yr[p] > 0.0f ? gv : 0.0f;
                    d[p] = dt_elem_bn_dx(gm, xr[p], k, b, off);
                }
            else
                for (int p = 0; p < plane; p++)
                    d[p] = dt_elem_bn_dx(g[p], xr[p], k, b, off);
        }
    return DT_OK;
}

const char *dt_layer_cpu_only(const dt_layer_t *l)
{
    return "it has no CUDA implementation yet";
}

const char *dt_layer_needs_cudnn(const dt_layer_t *l)
{
    (void)l;
    return dt_cuda_cudnn_missing();
}

const dt_layer_ops_t dt_layer_batchnorm = {
    "batchnorm", bn_setup, bn_scratch, bn_forward, bn_backward,
    dt_layer_needs_cudnn};
