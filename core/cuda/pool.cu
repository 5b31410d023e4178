/* pool.cu — max pooling forward (with argmax) and backward.
 *
 * Not cuDNN's max pooling (cudnn_pool.c could: CUDNN_POOLING_MAX*):
 * these kernels keep the argmax of the forward, the first maximum of the
 * window as the cpu layer picks it, so that ties (common after relu: many
 * zeros) route the gradient to the same input as on the CPU; cuDNN's
 * backward recomputes the maximum and documents no tie rule. They also
 * keep maxpool on the GPU in a backend built without cuDNN. */
#include "cuda/launch.h"

static __global__ void maxpool_fwd(const float *x, float *y, int *arg,
                                   int planes, int h, int w, int oh, int ow,
                                   int k, int s)
{
    size_t total = (size_t)planes * oh * ow;
    DT_GRID_STRIDE(i, total)
    {
        int ox = (int)(i % ow), oy = (int)(i / ow % oh);
        const float *xp = x + i / ((size_t)oh * ow) * (size_t)h * w;
        int best = oy * s * w + ox * s;
        for (int a = 0; a < k; a++)
            for (int b = 0; b < k; b++) {
                int at = (oy * s + a) * w + ox * s + b;
                if (xp[at] > xp[best])
                    best = at;
            }
        y[i] = xp[best];
        arg[i] = best;
    }
}

/* Overlapping windows (stride < k) may route two outputs to one input:
 * atomicAdd into the zeroed dx. */
static __global__ void maxpool_bwd(const float *dy, const int *arg, float *dx,
                                   int planes, int in_plane, int out_plane)
{
    size_t total = (size_t)planes * out_plane;
    DT_GRID_STRIDE(i, total)
    atomicAdd(&dx[i / out_plane * in_plane + arg[i]], dy[i]);
}

extern "C" {

dt_status_t dt_cuda_maxpool_forward(dt_device_t *dev, const float *x,
                                    float *y, int *arg, int planes, int h,
                                    int w, int oh, int ow, int k, int s)
{
    size_t total = (size_t)planes * oh * ow;
    maxpool_fwd<<<dt_cuda_blocks(total), DT_CUDA_THREADS, 0,
                  dt_cuda_stream(dev)>>>(x, y, arg, planes, h, w, oh, ow, k,
                                         s);
    return dt_cuda_launched(dev, "maxpool_forward");
}

dt_status_t dt_cuda_maxpool_backward(dt_device_t *dev, const float *dy,
                                     const int *arg, float *dx, int planes,
                                     int in_plane, int out_plane)
{
    cudaError_t ce = cudaMemsetAsync(
        dx, 0, (size_t)planes * in_plane * sizeof *dx, dt_cuda_stream(dev));
    if (ce != cudaSuccess) {
        dt_error("cudaMemset for maxpool backward failed on %s: %s",
                 dev->name, cudaGetErrorString(ce));
        return DT_ERR_INTERNAL;
    }
    size_t total = (size_t)planes * out_plane;
    maxpool_bwd<<<dt_cuda_blocks(total), DT_CUDA_THREADS, 0,
                  dt_cuda_stream(dev)>>>(dy, arg, dx, planes, in_plane,
                                         out_plane);
    return dt_cuda_launched(dev, "maxpool_backward");
}

} /* extern "C" */
