/* precision.c (CUDA backend) — [train] precision and loss scaling on the
 * GPU, through cuBLAS alone:
 *  - set_precision: bf16 and fp16 let cuBLAS run the float32 GEMMs on
 *    tensor cores with 16-bit inputs and float32 accumulation
 *    (CUBLAS_COMPUTE_32F_FAST_16BF / _16F), tf32 with TF32 inputs
 *    (CUBLAS_COMPUTE_32F_FAST_TF32); parameters, gradients and
 *    optimizer state stay float32 (the master copy).
 *  - asum: the loss-scaled gradients' sum of magnitudes, whose
 *    finiteness says whether any element overflowed (inf and nan survive
 *    the sum): cublasSasum. (Dividing them back by S is the backend's
 *    scale kernel, which grad_sync also queues on its own stream.)
 * One process drives one GPU (one trainer, one cuBLAS handle), so the
 * mode is the module's. cuDNN's convolutions follow it too (cudnn_conv.c:
 * FMA math in fp32, tensor-op math with conversion in bf16/fp16). */
#include "config.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <dt/log.h>
#include "cuda/kernels.h"
#include "cuda/precision.h"

static int precision = DT_PRECISION_FP32;

dt_status_t dt_cuda_set_precision(dt_device_t *dev, int p)
{
    if (p != DT_PRECISION_FP32 && p != DT_PRECISION_BF16 &&
        p != DT_PRECISION_FP16 && p != DT_PRECISION_TF32)
        return DT_ERR_INVALID;
    /* bf16 and tf32 tensor cores (and cuDNN's bf16 convolutions) start
     * with Ampere */
    int major = 0;
    if ((p == DT_PRECISION_BF16 || p == DT_PRECISION_TF32) &&
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                               dev->ordinal) == cudaSuccess &&
        major < 8) {
        dt_error("[train] precision = %s needs a GPU of compute capability "
                 "8.0 or newer (Ampere); %s is %d.x: use fp16 or fp32",
                 p == DT_PRECISION_BF16 ? "bf16" : "tf32", dev->name, major);
        return DT_ERR_UNSUPPORTED;
    }
    precision = p;
    return DT_OK;
}

int dt_cuda_precision(void) { return precision; }

cublasComputeType_t dt_cuda_gemm_compute_type(void)
{
    return precision == DT_PRECISION_BF16   ? CUBLAS_COMPUTE_32F_FAST_16BF
           : precision == DT_PRECISION_FP16 ? CUBLAS_COMPUTE_32F_FAST_16F
           : precision == DT_PRECISION_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F;
}

dt_status_t dt_cuda_asum(dt_device_t *dev, const float *x, size_t n,
                         double *out)
{
    cublasHandle_t h = (cublasHandle_t)dev->blas;
    const size_t piece = (size_t)1 << 30;
    double sum = 0.0;
    /* The result to host memory: cuBLAS waits for it (pointer mode host),
     * after the work queued before on the handle's stream. */
    for (size_t at = 0; at < n; at += piece) {
        int len = (int)(n - at < piece ? n - at : piece);
        float part = 0.0f;
        cublasStatus_t st = cublasSasum(h, len, x + at, 1, &part);
        if (st != CUBLAS_STATUS_SUCCESS) {
            dt_error("cuBLAS sasum of %d floats failed: %s (on %s)", len,
                     cublasGetStatusString(st), dev->name);
            return DT_ERR_INTERNAL;
        }
        sum += (double)part;
    }
    *out = sum;
    return DT_OK;
}
