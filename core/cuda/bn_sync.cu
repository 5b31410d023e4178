/* bn_sync.cu — batch normalization with statistics over every rank
 * ([model] sync_bn = yes) on CUDA: the per-channel sums the ranks add up,
 * and the normalization and input gradient from the summed statistics.
 *
 * Why hand-written: cuDNN's batchnorm computes and uses the statistics of
 * the batch it is given (cudnnBatchNormalizationForwardTraining /
 * Backward) and exposes neither the sums to allreduce nor a way to give
 * it global ones for the backward pass; PyTorch's SyncBatchNorm has CUDA
 * kernels of its own for the same reason. The per-element arithmetic is
 * in elem_math.h (dt_elem_bn_apply, dt_elem_bn_dx, and per channel
 * dt_elem_bn_stats, dt_elem_bn_gxhat, dt_elem_bn_dx_coef), shared with
 * the CPU layer; the sums accumulate in double, as the CPU's do. The
 * per-channel kernels (one thread a channel) keep everything but the
 * allreduce on the device: the host sees the sums only. */
#include <math.h>

#include "cuda/elem_math.h"
#include "cuda/launch.h"

#define BN_SUM_THREADS 256

/* One block per channel c of NCHW a (n, C, hw): out[c] = sum a, out[C +
 * c] = sum a b (b NULL: a a). */
static __global__ void bn_sums_kernel(const float *a, const float *b, int n,
                                      int C, int hw, double *out)
{
    __shared__ double s1[BN_SUM_THREADS], s2[BN_SUM_THREADS];
    int c = blockIdx.x;
    size_t m = (size_t)n * hw;
    double p1 = 0.0, p2 = 0.0;
    for (size_t i = threadIdx.x; i < m; i += blockDim.x) {
        size_t at = ((i / hw) * C + c) * (size_t)hw + i % hw;
        double v = a[at];
        p1 += v;
        p2 += v * (b ? (double)b[at] : v);
    }
    s1[threadIdx.x] = p1;
    s2[threadIdx.x] = p2;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if ((int)threadIdx.x < k) {
            s1[threadIdx.x] += s1[threadIdx.x + k];
            s2[threadIdx.x] += s2[threadIdx.x + k];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[c] = s1[0];
        out[C + c] = s2[0];
    }
}

static __global__ void bn_apply_kernel(const float *x, const float *s,
                                       const float *t, int C, int hw,
                                       size_t n, float *y)
{
    DT_GRID_STRIDE(i, n)
    {
        int c = (int)((i / hw) % C);
        y[i] = dt_elem_bn_apply(x[i], s[c], t[c], -INFINITY);
    }
}

static __global__ void bn_dx_kernel(const float *dy, const float *x,
                                    const float *k, const float *b,
                                    const float *off, int C, int hw,
                                    size_t n, float *dx)
{
    DT_GRID_STRIDE(i, n)
    {
        int c = (int)((i / hw) % C);
        dx[i] = dt_elem_bn_dx(dy[i], x[i], k[c], b[c], off[c]);
    }
}

dt_status_t dt_cuda_bn_sums(dt_device_t *dev, int n, int c, int hw,
                            const float *a, const float *b, double *out)
{
    bn_sums_kernel<<<c, BN_SUM_THREADS, 0, dt_cuda_stream(dev)>>>(a, b, n, c,
                                                                 hw, out);
    return dt_cuda_launched(dev, "bn_sums");
}

dt_status_t dt_cuda_bn_apply(dt_device_t *dev, int n, int c, int hw,
                             const float *x, const float *s, const float *t,
                             float *y)
{
    size_t len = (size_t)n * c * hw;
    bn_apply_kernel<<<dt_cuda_blocks(len), DT_CUDA_THREADS, 0,
                      dt_cuda_stream(dev)>>>(x, s, t, c, hw, len, y);
    return dt_cuda_launched(dev, "bn_apply");
}

dt_status_t dt_cuda_bn_dx(dt_device_t *dev, int n, int c, int hw,
                          const float *dy, const float *x, const float *k,
                          const float *b, const float *off, float *dx)
{
    size_t len = (size_t)n * c * hw;
    bn_dx_kernel<<<dt_cuda_blocks(len), DT_CUDA_THREADS, 0,
                   dt_cuda_stream(dev)>>>(dy, x, k, b, off, c, hw, len, dx);
    return dt_cuda_launched(dev, "bn_dx");
}

#define BN_COEF_THREADS 128

static int coef_blocks(int c)
{
    return (c + BN_COEF_THREADS - 1) / BN_COEF_THREADS;
}

static __global__ void bn_stats_kernel(const double *sums, int C, double eps,
                                       double mom, const float *gamma,
                                       const float *beta, float *mean,
                                       float *invstd, float *rmean,
                                       float *rvar, float *s, float *t)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    dt_elem_bn_stats(sums[c], sums[C + c], sums[2 * C], eps, mom, &mean[c],
                     &invstd[c], &rmean[c], &rvar[c]);
    dt_elem_bn_scale_shift(gamma[c], beta[c], mean[c], invstd[c], &s[c],
                           &t[c]);
}

static __global__ void bn_grads_kernel(const double *sums, int C,
                                       const float *mean,
                                       const float *invstd, float *dgamma,
                                       float *dbeta)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    dgamma[c] = (float)dt_elem_bn_gxhat(sums[c], sums[C + c], mean[c],
                                        invstd[c]);
    dbeta[c] = (float)sums[c];
}

static __global__ void bn_dx_coef_kernel(const double *sums, int C,
                                         const float *mean,
                                         const float *invstd,
                                         const float *gamma, float *k,
                                         float *b, float *off)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    double gx = dt_elem_bn_gxhat(sums[c], sums[C + c], mean[c], invstd[c]);
    dt_elem_bn_dx_coef(sums[c], gx, sums[2 * C], mean[c], invstd[c],
                       gamma[c], &k[c], &b[c], &off[c]);
}

dt_status_t dt_cuda_bn_stats(dt_device_t *dev, int c, const double *sums,
                             double eps, double mom, const float *gamma,
                             const float *beta, float *mean, float *invstd,
                             float *rmean, float *rvar, float *s, float *t)
{
    bn_stats_kernel<<<coef_blocks(c), BN_COEF_THREADS, 0,
                      dt_cuda_stream(dev)>>>(sums, c, eps, mom, gamma, beta,
                                             mean, invstd, rmean, rvar, s,
                                             t);
    return dt_cuda_launched(dev, "bn_stats");
}

dt_status_t dt_cuda_bn_grads(dt_device_t *dev, int c, const double *sums,
                             const float *mean, const float *invstd,
                             float *dgamma, float *dbeta)
{
    bn_grads_kernel<<<coef_blocks(c), BN_COEF_THREADS, 0,
                      dt_cuda_stream(dev)>>>(sums, c, mean, invstd, dgamma,
                                             dbeta);
    return dt_cuda_launched(dev, "bn_grads");
}

dt_status_t dt_cuda_bn_dx_coef(dt_device_t *dev, int c, const double *sums,
                               const float *mean, const float *invstd,
                               const float *gamma, float *k, float *b,
                               float *off)
{
    bn_dx_coef_kernel<<<coef_blocks(c), BN_COEF_THREADS, 0,
                        dt_cuda_stream(dev)>>>(sums, c, mean, invstd, gamma,
                                               k, b, off);
    return dt_cuda_launched(dev, "bn_dx_coef");
}
