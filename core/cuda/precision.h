/* precision.h (CUDA backend) — the module's math mode for GEMMs
 * (precision.c), for gemm.c. */
#ifndef DT_CUDA_PRECISION_H
#define DT_CUDA_PRECISION_H

#include <cublas_v2.h>

/* CUBLAS_COMPUTE_32F, or _32F_FAST_16BF / _16F under [train] precision
 * = bf16 / fp16. */
cublasComputeType_t dt_cuda_gemm_compute_type(void);

/* DT_PRECISION_*, as set_precision last set it (cudnn_conv.c's math). */
int dt_cuda_precision(void);

#endif /* DT_CUDA_PRECISION_H */
