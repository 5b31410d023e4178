// nccl_half.cu — float32 <-> bfloat16 on the device for the nccl
// transport's compressed allreduce ([collectives] compression = bf16,
// nccl_coll.c): round to nearest even (__float2bfloat16_rn), widening is
// exact. Built only where configure finds nvcc (DT_NCCL_KERNELS).
#include <cstddef>
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

namespace {

__global__ void to_bf16(const float *src, __nv_bfloat16 *dst, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void from_bf16(const __nv_bfloat16 *src, float *dst, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __bfloat162float(src[i]);
}

unsigned grid_for(size_t n)
{
    size_t g = (n + 255) / 256;
    return (unsigned)(g < 4096 ? (g ? g : 1) : 4096);
}

} // namespace

extern "C" __attribute__((visibility("hidden"))) cudaError_t nccl_f32_to_bf16(const float *src, void *dst,
                                        size_t n, cudaStream_t s)
{
    to_bf16<<<grid_for(n), 256, 0, s>>>(src, (__nv_bfloat16 *)dst, n);
    return cudaGetLastError();
}

extern "C" __attribute__((visibility("hidden"))) cudaError_t nccl_bf16_to_f32(const void *src, float *dst,
                                        size_t n, cudaStream_t s)
{
    from_bf16<<<grid_for(n), 256, 0, s>>>((const __nv_bfloat16 *)src, dst,
                                           n);
    return cudaGetLastError();
}
