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
 * 8 partial sums, accumulated per channel in double. cpu only.
 *
 * sync_bn (l->allreduce set, dt_model_set_sync_bn): M, mean and var are
 * those of the global batch. Forward sums, per channel, S = sum x and
 * Q = sum x^2 and the count over the ranks in ONE call (2C+1 doubles);
 * Q is formed locally as M2 + M md^2 from this rank's two-pass squared
 * deviations M2 (md = S/M in double), so var = Q/N - (S/N)^2 cancels
 * only the spread between the ranks' means, never a float sum of
 * squares. Backward sums sum dy and sum dy x in ONE call (2C doubles)
 * before dx; dgamma and dbeta stay this rank's sums (the trainer
 * averages gradients). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
 * sync_bn) and the global count M, kept for backward. */
static size_t bn_scratch(const dt_layer_t *l, int batch)
{
    return 6 * (size_t)l->in_c + 4;
}

static float sum8(const float *restrict v, int n)
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
static float sqdev8(const float *restrict v, int n, float m)
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

static dt_status_t bn_forward(dt_layer_t *l, const float *x, float *y,
                              int batch, int train)
{
    int C = l->in_c, plane = l->in_h * l->in_w;
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
        for (int n = 0; n < batch; n++)
            for (int c = 0; c < C; c++)
                S[c] += sum8(x + n * len + (size_t)c * plane, plane);
        for (int c = 0; c < C; c++)
            mean[c] = (float)(S[c] / M); /* this rank's, for the M2 pass */
        for (int n = 0; n < batch; n++)
            for (int c = 0; c < C; c++)
                Q[c] += sqdev8(x + n * len + (size_t)c * plane, plane,
                               mean[c]);
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
        for (int c = 0; c < C; c++) {
            double md = S[c] / M, var = Q[c] / M - md * md;
            if (var < 0.0)
                var = 0.0;
            mean[c] = (float)md;
            invstd[c] = (float)(1.0 / sqrt(var + eps));
            double unbiased = M > 1 ? var * M / (M - 1) : var;
            rmean[c] = (float)((1.0 - mom) * rmean[c] + mom * mean[c]);
            rvar[c] = (float)((1.0 - mom) * rvar[c] + mom * unbiased);
        }
    } else if (train) {
        double M = (double)batch * plane;
        /* two passes (mean, then squared deviations): no cancellation */
        for (int c = 0; c < C; c++)
            acc[c] = 0.0;
        for (int n = 0; n < batch; n++)
            for (int c = 0; c < C; c++)
                acc[c] += sum8(x + n * len + (size_t)c * plane, plane);
        for (int c = 0; c < C; c++) {
            mean[c] = (float)(acc[c] / M);
            acc[c] = 0.0;
        }
        for (int n = 0; n < batch; n++)
            for (int c = 0; c < C; c++)
                acc[c] += sqdev8(x + n * len + (size_t)c * plane, plane,
                                 mean[c]);
        for (int c = 0; c < C; c++) {
            double var = acc[c] / M;
            invstd[c] = (float)(1.0 / sqrt(var + eps));
            double unbiased = M > 1 ? var * M / (M - 1) : var;
            rmean[c] = (float)((1.0 - mom) * rmean[c] + mom * mean[c]);
            rvar[c] = (float)((1.0 - mom) * rvar[c] + mom * unbiased);
        }
    } else {
        for (int c = 0; c < C; c++) {
            mean[c] = rmean[c];
            invstd[c] = (float)(1.0 / sqrt((double)rvar[c] + eps));
        }
    }
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++) {
            const float *restrict xr = x + n * len + (size_t)c * plane;
            float *restrict yr = y + n * len + (size_t)c * plane;
            float s = l->w[c] * invstd[c], t = l->b[c] - mean[c] * s;
            for (int p = 0; p < plane; p++)
                yr[p] = xr[p] * s + t;
        }
    return DT_OK;
}

static dt_status_t bn_backward(dt_layer_t *l, const float *x, const float *y,
                               const float *dy, float *dx, int batch)
{
    int C = l->in_c, plane = l->in_h * l->in_w;
    size_t len = (size_t)C * plane;
    const float *mean = l->scratch, *invstd = mean + C;
    double *acc = (double *)(void *)(l->scratch + 2 * C); /* sum dy */
    double *accx = acc + C;                              /* sum dy*x */
    for (int c = 0; c < C; c++)
        acc[c] = accx[c] = 0.0;
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++) {
            const float *restrict xr = x + n * len + (size_t)c * plane,
                                  *restrict g = dy + n * len +
                                                (size_t)c * plane;
            float part[8] = {0}, partx[8] = {0};
            int p = 0;
            for (; p + 8 <= plane; p += 8)
                for (int j = 0; j < 8; j++) {
                    part[j] += g[p + j];
                    partx[j] += g[p + j] * xr[p + j];
                }
            float s = 0.0f, sx = 0.0f;
            for (int j = 0; j < 8; j++)
                s += part[j], sx += partx[j];
            for (; p < plane; p++)
                s += g[p], sx += g[p] * xr[p];
            acc[c] += s;
            accx[c] += sx;
        }
    double M = (double)batch * plane;
    for (int c = 0; c < C; c++) {
        /* sum dy xhat = invstd (sum dy x - mean sum dy) */
        double dgamma = invstd[c] * (accx[c] - mean[c] * acc[c]);
        l->dw[c] = (float)dgamma;
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
            accx[c] = invstd[c] * (accx[c] - mean[c] * acc[c]);
    }
    for (int n = 0; n < batch; n++)
        for (int c = 0; c < C; c++) {
            const float *restrict xr = x + n * len + (size_t)c * plane,
                                  *restrict g = dy + n * len +
                                                (size_t)c * plane;
            float *restrict d = dx + n * len + (size_t)c * plane;
            /* dx = k (dy - a - xhat b) with xhat = (x - mean) invstd:
             * dx = k dy + (k xhat) coefficients folded per channel */
            float is = invstd[c], k = l->w[c] * is,
                  a = (float)(acc[c] / M),
                  b = (float)((global ? (float)accx[c] : l->dw[c]) / M) *
                      is; /* per unit of x-mean */
            float off = -a + mean[c] * b;
            for (int p = 0; p < plane; p++)
                d[p] = k * (g[p] - xr[p] * b + off);
        }
    return DT_OK;
}

const char *dt_layer_cpu_only(const dt_layer_t *l)
{
    return "it has no CUDA implementation yet";
}

const dt_layer_ops_t dt_layer_batchnorm = {
    "batchnorm", bn_setup, bn_scratch, bn_forward, bn_backward,
    dt_layer_cpu_only};
