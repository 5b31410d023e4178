/* gemm.c — row-major single-precision matrix products on a device:
 * OpenBLAS on cpu (plain loops when dt was built without it), cuBLAS on
 * cuda (row-major through the transposed column-major product). */
#include "config.h"

#include <string.h>

#include <dt/log.h>
#include "layer.h"

#ifdef HAVE_OPENBLAS_CBLAS
#include <cblas.h>
#endif
#ifdef DT_HAVE_CUDA_NN
#include <cublas_v2.h>
#endif

#ifndef HAVE_OPENBLAS_CBLAS
/* Loop fallback, i-p-j order so the inner loop runs along rows. */
static void gemm_loops(int ta, int tb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb,
                       float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++) {
        float *ci = c + (size_t)i * ldc;
        for (int j = 0; j < n; j++)
            ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
        for (int p = 0; p < k; p++) {
            float av = alpha * (ta ? a[(size_t)p * lda + i]
                                   : a[(size_t)i * lda + p]);
            if (tb)
                for (int j = 0; j < n; j++)
                    ci[j] += av * b[(size_t)j * ldb + p];
            else {
                const float *bp = b + (size_t)p * ldb;
                for (int j = 0; j < n; j++)
                    ci[j] += av * bp[j];
            }
        }
    }
}
#endif

#ifdef DT_HAVE_CUDA_NN
/* C^T = op(B)^T op(A)^T: column-major cuBLAS sees our row-major matrices
 * as their transposes, so swap the operands. */
static dt_status_t gemm_cublas(dt_device_t *dev, int ta, int tb, int m, int n,
                               int k, float alpha, const float *a, int lda,
                               const float *b, int ldb, float beta, float *c,
                               int ldc)
{
    cublasStatus_t st = cublasSgemm(
        (cublasHandle_t)dev->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
        ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
        &beta, c, ldc);
    if (st != CUBLAS_STATUS_SUCCESS) {
        dt_error("cuBLAS sgemm (%dx%dx%d) failed with status %d on %s", m, n,
                 k, (int)st, dev->name);
        return DT_ERR_INTERNAL;
    }
    return DT_OK;
}
#endif

dt_status_t dt_gemm(dt_device_t *dev, int trans_a, int trans_b, int m, int n,
                    int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return DT_OK;
    DT_CUDA_DISPATCH(dev, gemm_cublas(dev, trans_a, trans_b, m, n, k, alpha,
                                      a, lda, b, ldb, beta, c, ldc));
    if (k <= 0) { /* an empty product: C = beta * C */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[(size_t)i * ldc + j] =
                    beta == 0.0f ? 0.0f : beta * c[(size_t)i * ldc + j];
        return DT_OK;
    }
#ifdef HAVE_OPENBLAS_CBLAS
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
                b, ldb, beta, c, ldc);
#else
    gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
               ldc);
#endif
    return DT_OK;
}
