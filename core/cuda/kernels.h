/* kernels.h — the CUDA side of the layers (core/cuda), callable from C.
 * Built only when configure finds nvcc and cuBLAS (DT_HAVE_CUDA_NN).
 * Every function queues work on dev->stream and returns at once; errors
 * from the launch are logged with the kernel's name. Pointers are device
 * memory. */
#ifndef DT_CUDA_KERNELS_H
#define DT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <dt/nn.h>
#include "nn/im2col.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Elementwise (elementwise.cu). */
dt_status_t dt_cuda_relu_forward(dt_device_t *dev, const float *x, float *y,
                                 size_t n);
dt_status_t dt_cuda_relu_backward(dt_device_t *dev, const float *y,
                                  const float *dy, float *dx, size_t n);
dt_status_t dt_cuda_mul(dt_device_t *dev, const float *a, const float *b,
                        float *out, size_t n);
dt_status_t dt_cuda_dropout_forward(dt_device_t *dev, const float *x,
                                    float *y, float *mask, size_t n, float p,
                                    float scale, uint64_t key);
/* per_column 1: y[i][j] += b[j] / db[j] = sum_i dy[i][j] (rows x cols). */
dt_status_t dt_cuda_add_bias(dt_device_t *dev, float *y, const float *b,
                             int rows, int cols, int per_column);
dt_status_t dt_cuda_bias_grad(dt_device_t *dev, const float *dy, float *db,
                              int rows, int cols, int per_column);

/* Convolution helpers (conv.cu). */
dt_status_t dt_cuda_im2col(dt_device_t *dev, const dt_conv_geom_t *g,
                           const float *x, float *col);
dt_status_t dt_cuda_col2im(dt_device_t *dev, const dt_conv_geom_t *g,
                           const float *col, float *dx);
dt_status_t dt_cuda_cnhw_to_nchw(dt_device_t *dev, const float *Y,
                                 const float *bias, float *y, int n, int c,
                                 size_t plane);
dt_status_t dt_cuda_nchw_to_cnhw(dt_device_t *dev, const float *dy, float *Y,
                                 float *db, int n, int c, size_t plane);

/* Pooling (pool.cu). */
dt_status_t dt_cuda_maxpool_forward(dt_device_t *dev, const float *x,
                                    float *y, int *arg, int planes, int h,
                                    int w, int oh, int ow, int k, int s);
dt_status_t dt_cuda_maxpool_backward(dt_device_t *dev, const float *dy,
                                     const int *arg, float *dx, int planes,
                                     int in_plane, int out_plane);

/* Softmax cross-entropy (softmax.cu): rows gets (loss, correct) per row
 * when labels is not NULL. */
dt_status_t dt_cuda_softmax_xent(dt_device_t *dev, const float *logits,
                                 const int *labels, float *probs, float *rows,
                                 int batch, int k);
dt_status_t dt_cuda_softmax_xent_backward(dt_device_t *dev, const float *probs,
                                          const int *labels, float *dlogits,
                                          int batch, int k);

#ifdef __cplusplus
}
#endif
#endif /* DT_CUDA_KERNELS_H */
