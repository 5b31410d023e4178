/* gemm.c (CUDA backend) — row-major sgemm with cuBLAS, which is
 * column-major: it sees our row-major matrices as their transposes, so
 * C^T = op(B)^T op(A)^T is computed by swapping the operands. */
#include "config.h"

#include <cublas_v2.h>

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
