/* gemm.c — row-major single-precision matrix products on a device:
 * OpenBLAS on cpu (loaded on first use, nn/blas_load.h; plain loops when
 * dt was built without it), cuBLAS on cuda (in the CUDA backend,
 * core/cuda/gemm.c). */
#include "config.h"

#include <string.h>

#include <dt/log.h>
#include "layer.h"

#include "nn/blas_load.h"

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


dt_status_t dt_gemm(dt_device_t *dev, int trans_a, int trans_b, int m, int n,
                    int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return DT_OK;
    DT_CUDA_DISPATCH(dev, gemm(dev, trans_a, trans_b, m, n, k, alpha, a, lda,
                               b, ldb, beta, c, ldc));
    if (k <= 0) { /* an empty product: C = beta * C */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[(size_t)i * ldc + j] =
                    beta == 0.0f ? 0.0f : beta * c[(size_t)i * ldc + j];
        return DT_OK;
    }
#ifdef HAVE_OPENBLAS_CBLAS
    /* Loaded by dt_device_open with the device's threads; a caller that
     * opened no device gets OpenBLAS's own default here. */
    char why[2048];
    const dt_blas_t *blas = dt_blas_load(0, why, sizeof why);
    if (!blas) {
        dt_error("%s", why);
        return DT_ERR_UNSUPPORTED;
    }
    if (beta == 0.0f) {
        /* OpenBLAS zeroes C for beta = 0 column by column (sgemm_beta),
         * then accumulates into it; a row of a conv's C is often a few
         * channels, so that loop cost a small ResNet's step 7.8% of its
         * instructions. Zeroed here a row at a time, the same product is
         * accumulated onto the same zeros with beta = 1. */
        if (ldc == n)
            memset(c, 0, (size_t)m * (size_t)n * sizeof *c);
        else
            for (int i = 0; i < m; i++)
                memset(c + (size_t)i * ldc, 0, (size_t)n * sizeof *c);
        beta = 1.0f;
    }
    blas->sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
                b, ldb, beta, c, ldc);
#else
    gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
               ldc);
#endif
    return DT_OK;
}
