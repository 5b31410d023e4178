/* optim.cu — the optimizer plugins' steps on the GPU (sgd, adam, adamw).
 * The same arithmetic, in the same order, as their CPU loops
 * (plugins/optimizer/sgd/sgd.c, adam_core.h); the scalars of a step are
 * computed on the host by the plugin.
 *
 * Hand-written because no CUDA library has these steps (cuBLAS axpy/scal
 * would take 3 to 6 passes over the parameters for what is one pass here,
 * and cuDNN has no optimizers); their arithmetic is the CPU plugins' own,
 * which test_optimizers_cuda checks on a GPU. */
#include "cuda/launch.h"

static __global__ void sgd_plain(float *p, const float *grad, size_t n,
                                 float lr, float wd)
{
    DT_GRID_STRIDE(i, n) p[i] -= lr * (grad[i] + wd * p[i]);
}

static __global__ void sgd_momentum(float *p, const float *grad, float *buf,
                                    size_t n, float lr, float mu, float wd,
                                    int nesterov)
{
    DT_GRID_STRIDE(i, n)
    {
        float g = grad[i] + wd * p[i];
        float b = mu * buf[i] + g;
        buf[i] = b;
        p[i] -= lr * (nesterov ? g + mu * b : b);
    }
}

static __global__ void adam(float *p, const float *grad, float *m, float *v,
                            size_t n, dt_cuda_adam_args_t a)
{
    DT_GRID_STRIDE(i, n)
    {
        float g = grad[i] + a.l2 * p[i];
        float mi = a.beta1 * m[i] + (1.0f - a.beta1) * g;
        float vi = a.beta2 * v[i] + (1.0f - a.beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * a.shrink - a.step_size * mi / (sqrtf(vi) * a.rbc2 + a.eps);
    }
}

/* Status of the launch just made, naming the kernel. */
static dt_status_t launched(const char *what)
{
    cudaError_t ce = cudaGetLastError();
    if (ce == cudaSuccess)
        return DT_OK;
    dt_error("CUDA kernel %s failed on the current GPU: %s", what,
             cudaGetErrorString(ce));
    return DT_ERR_INTERNAL;
}

extern "C" {

dt_status_t dt_cuda_sgd_step(void *stream, float *p, const float *grad,
                             float *buf, size_t n, float lr, float mu,
                             float wd, int nesterov)
{
    if (n == 0)
        return DT_OK;
    cudaStream_t s = (cudaStream_t)stream;
    if (!buf) {
        sgd_plain<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, s>>>(p, grad, n,
                                                                lr, wd);
        return launched("sgd_step");
    }
    sgd_momentum<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, s>>>(
        p, grad, buf, n, lr, mu, wd, nesterov);
    return launched("sgd_step (momentum)");
}

dt_status_t dt_cuda_adam_step(void *stream, float *p, const float *grad,
                              float *m, float *v, size_t n,
                              const dt_cuda_adam_args_t *a)
{
    if (n == 0)
        return DT_OK;
    adam<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        p, grad, m, v, n, *a);
    return launched("adam_step");
}

} /* extern "C" */
