/* launch.h — grid sizes and launch-error checks shared by the .cu files. */
#ifndef DT_CUDA_LAUNCH_H
#define DT_CUDA_LAUNCH_H

#include <cuda_runtime.h>

#include <dt/log.h>
#include "cuda/kernels.h"

#define DT_CUDA_THREADS 256

static inline unsigned dt_cuda_blocks(size_t n)
{
    size_t b = (n + DT_CUDA_THREADS - 1) / DT_CUDA_THREADS;
    if (b > 65535u * 16u)
        b = 65535u * 16u; /* kernels loop with a grid stride beyond this */
    return (unsigned)(b ? b : 1);
}

static inline cudaStream_t dt_cuda_stream(dt_device_t *dev)
{
    return (cudaStream_t)dev->stream;
}

/* Status of the launch just made; logs the kernel's name on failure. */
static inline dt_status_t dt_cuda_launched(dt_device_t *dev, const char *what)
{
    cudaError_t ce = cudaGetLastError();
    if (ce == cudaSuccess)
        return DT_OK;
    dt_error("CUDA kernel %s failed on %s: %s", what, dev->name,
             cudaGetErrorString(ce));
    return DT_ERR_INTERNAL;
}

#define DT_GRID_STRIDE(i, n)                                                  \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);   \
         i += (size_t)gridDim.x * blockDim.x)

#endif /* DT_CUDA_LAUNCH_H */
