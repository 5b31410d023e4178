/* gemm.c (CUDA backend) — row-major sgemm with cuBLAS, which is
 * column-major: it sees our row-major matrices as their transposes, so
 * C^T = op(B)^T op(A)^T is computed by swapping the operands. */
#include "config.h"

#include <limits.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <dt/log.h>
#include "cuda/kernels.h"
#include "cuda/precision.h"

dt_status_t dt_cuda_gemm(dt_device_t *dev, int trans_a, int trans_b, int m,
                         int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c,
                         int ldc)
{
    cublasComputeType_t ct = dt_cuda_gemm_compute_type();
    cublasStatus_t st;
    if (ct == CUBLAS_COMPUTE_32F)
        st = cublasSgemm((cublasHandle_t)dev->blas,
                         trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                         trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
                         b, ldb, a, lda, &beta, c, ldc);
    else /* [train] precision = bf16 | fp16: tensor cores, fp32 storage */
        st = cublasGemmEx((cublasHandle_t)dev->blas,
                          trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                          trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                          &alpha, b, CUDA_R_32F, ldb, a, CUDA_R_32F, lda,
                          &beta, c, CUDA_R_32F, ldc, ct,
                          CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        dt_error("cuBLAS sgemm (%dx%dx%d) failed with status %d on %s", m, n,
                 k, (int)st, dev->name);
        return DT_ERR_INTERNAL;
    }
    return DT_OK;
}

/* out = a + b: a copy (unless out is already a or b) and a saxpy, in
 * pieces of at most INT_MAX floats (cuBLAS counts in int). */
dt_status_t dt_cuda_add(dt_device_t *dev, const float *a, const float *b,
                        float *out, size_t n)
{
    if (out == b) { /* out = b + a */
        b = a;
        a = out;
    }
    if (out != a && n > 0) {
        cudaError_t ce = cudaMemcpyAsync(out, a, n * sizeof *out,
                                         cudaMemcpyDeviceToDevice,
                                         (cudaStream_t)dev->stream);
        if (ce != cudaSuccess) {
            dt_error("cudaMemcpyAsync (%zu floats, residual add) failed on "
                     "%s: %s", n, dev->name, cudaGetErrorString(ce));
            return DT_ERR_INTERNAL;
        }
    }
    const float one = 1.0f;
    for (size_t at = 0; at < n; at += INT_MAX) {
        int len = n - at > (size_t)INT_MAX ? INT_MAX : (int)(n - at);
        cublasStatus_t st = cublasSaxpy((cublasHandle_t)dev->blas, len, &one,
                                        b + at, 1, out + at, 1);
        if (st != CUBLAS_STATUS_SUCCESS) {
            dt_error("cuBLAS saxpy (%d floats, residual add) failed with "
                     "status %d on %s", len, (int)st, dev->name);
            return DT_ERR_INTERNAL;
        }
    }
    return DT_OK;
}
