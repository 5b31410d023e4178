/* kernels.h — the functions of the CUDA backend module (core/cuda), which
 * table.c puts into its dt_cuda_backend_t. Built only when configure finds
 * nvcc and cuBLAS (DT_HAVE_CUDA_NN); hidden inside the module.
 * Kernels queue work on dev->stream (or the given stream) and return at
 * once; errors from the launch are logged with the kernel's name.
 * Pointers are device memory. */
#ifndef DT_CUDA_KERNELS_H
#define DT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <dt/nn.h>
#include "cuda/backend.h"
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
                                 int batch, int k, float smoothing);
dt_status_t dt_cuda_softmax_xent_backward(dt_device_t *dev, const float *probs,
                                          const int *labels, float *dlogits,
                                          int batch, int k, float smoothing);

/* Devices and memory (device.c). */
int dt_cuda_count(char *why, size_t why_len);
dt_status_t dt_cuda_open(dt_device_t *dev, int local_rank, int ngpus);
void dt_cuda_close(dt_device_t *dev);
dt_status_t dt_cuda_sync(dt_device_t *dev);
dt_status_t dt_cuda_alloc(dt_device_t *dev, size_t bytes, void **out);
void dt_cuda_free(dt_device_t *dev, void *ptr);
dt_status_t dt_cuda_host_alloc(dt_device_t *dev, size_t bytes, void **out);
void dt_cuda_host_free(dt_device_t *dev, void *ptr);
dt_status_t dt_cuda_copy(dt_device_t *dev, void *dst, const void *src,
                         size_t bytes);
dt_status_t dt_cuda_mem_alloc(size_t bytes, void **out);
void dt_cuda_mem_free(void *ptr);
dt_status_t dt_cuda_mem_copy(void *stream, void *dst, const void *src,
                             size_t bytes);
dt_status_t dt_cuda_mem_set(void *stream, void *dst, int value,
                            size_t bytes);
dt_status_t dt_cuda_stream_sync(void *stream);
/* Device-resident step: streams, events, queued copies (device.c) and
 * the gradient scale kernel (elementwise.cu). */
dt_status_t dt_cuda_set_current(dt_device_t *dev);
dt_status_t dt_cuda_stream_create(dt_device_t *dev, void **out);
void dt_cuda_stream_destroy(dt_device_t *dev, void *stream);
dt_status_t dt_cuda_event_create(dt_device_t *dev, void **out);
void dt_cuda_event_destroy(dt_device_t *dev, void *event);
dt_status_t dt_cuda_event_record(dt_device_t *dev, void *event, void *stream);
dt_status_t dt_cuda_stream_wait_event(dt_device_t *dev, void *stream,
                                      void *event);
dt_status_t dt_cuda_event_sync(dt_device_t *dev, void *event);
dt_status_t dt_cuda_copy_async(dt_device_t *dev, void *dst, const void *src,
                               size_t bytes, void *stream);
dt_status_t dt_cuda_scale(dt_device_t *dev, float *x, float f, size_t n,
                          void *stream);

/* Matrix product (gemm.c). */
dt_status_t dt_cuda_gemm(dt_device_t *dev, int trans_a, int trans_b, int m,
                         int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c,
                         int ldc);
/* out = a + b through cuBLAS saxpy (gemm.c). */
dt_status_t dt_cuda_add(dt_device_t *dev, const float *a, const float *b,
                        float *out, size_t n);

/* cuDNN (cudnn_*.c, built with DT_HAVE_CUDNN; see cuda/cudnn.h). */
dt_status_t dt_cudnn_conv_forward(dt_device_t *dev, const dt_conv_geom_t *g,
                                  int out_c, const float *x, const float *w,
                                  const float *bias, float *y);
dt_status_t dt_cudnn_conv_backward(dt_device_t *dev, const dt_conv_geom_t *g,
                                   int out_c, const float *x, const float *w,
                                   const float *dy, float *dw, float *db,
                                   float *dx);
dt_status_t dt_cudnn_bn_forward(dt_device_t *dev, const dt_cuda_bn_t *bn,
                                int train, const float *x, float *y);
dt_status_t dt_cudnn_bn_backward(dt_device_t *dev, const dt_cuda_bn_t *bn,
                                 const float *x, const float *dy, float *dx,
                                 float *dgamma, float *dbeta);
dt_status_t dt_cudnn_pool_forward(dt_device_t *dev, const dt_cuda_pool_t *p,
                                  const float *x, float *y);
dt_status_t dt_cudnn_pool_backward(dt_device_t *dev, const dt_cuda_pool_t *p,
                                   const float *x, const float *y,
                                   const float *dy, float *dx);
/* [train] cudnn_benchmark: pick algorithms by timing (cudnn_conv.c). */
dt_status_t dt_cudnn_set_benchmark(dt_device_t *dev, int on);
/* The device's cuDNN state goes with it (dt_cuda_close). */
void dt_cudnn_release(dt_device_t *dev);
/* The bytes of the cuDNN state's conv workspace and bf16 copies (0, 0
 * before its first use). */
void dt_cudnn_sizes(const dt_device_t *dev, size_t *workspace,
                    size_t *copies);
/* used/total/workspace/copies (cuda/backend.h mem_info; device.c). */
dt_status_t dt_cuda_mem_info(dt_device_t *dev, size_t *used, size_t *total,
                             size_t *workspace, size_t *copies);

/* float <-> bf16 copies, n elements (elementwise.cu). */
dt_status_t dt_cuda_to_bf16(dt_device_t *dev, const float *x, void *y,
                            size_t n);
dt_status_t dt_cuda_from_bf16(dt_device_t *dev, const void *x, float *y,
                              size_t n);

/* The residual add on stored bf16 activations (elementwise.cu). */
dt_status_t dt_cuda_add16(dt_device_t *dev, const void *a, const void *b,
                          void *out, size_t n);
/* relu on stored bf16 activations (elementwise.cu). */
dt_status_t dt_cuda_relu16_forward(dt_device_t *dev, const void *x, void *y,
                                   size_t n);
dt_status_t dt_cuda_relu16_backward(dt_device_t *dev, const void *y,
                                    const float *dy, float *dx, size_t n);

/* sync_bn (bn_sync.cu). */
dt_status_t dt_cuda_bn_sums(dt_device_t *dev, int n, int c, int hw,
                            const float *a, const float *b, double *out);
dt_status_t dt_cuda_bn_apply(dt_device_t *dev, int n, int c, int hw,
                             const float *x, const float *s, const float *t,
                             float *y);
dt_status_t dt_cuda_bn_dx(dt_device_t *dev, int n, int c, int hw,
                          const float *dy, const float *x, const float *k,
                          const float *b, const float *off, float *dx);
dt_status_t dt_cuda_bn_stats(dt_device_t *dev, int c, const double *sums,
                             double eps, double mom, const float *gamma,
                             const float *beta, float *mean, float *invstd,
                             float *rmean, float *rvar, float *s, float *t);
dt_status_t dt_cuda_bn_grads(dt_device_t *dev, int c, const double *sums,
                             const float *mean, const float *invstd,
                             float *dgamma, float *dbeta);
dt_status_t dt_cuda_bn_dx_coef(dt_device_t *dev, int c, const double *sums,
                               const float *mean, const float *invstd,
                               const float *gamma, float *k, float *b,
                               float *off);

/* [train] precision and loss scaling (precision.c). */
dt_status_t dt_cuda_set_precision(dt_device_t *dev, int precision);
dt_status_t dt_cuda_asum(dt_device_t *dev, const float *x, size_t n,
                         double *out);

/* CUDA graphs (graph.c; backend.h's ABI 6 block). */
dt_status_t dt_cuda_graph_capture(dt_device_t *dev,
                                  dt_status_t (*body)(void *arg), void *arg,
                                  void **exec, char *why, size_t why_len);
dt_status_t dt_cuda_graph_launch(dt_device_t *dev, void *exec);
void dt_cuda_graph_destroy(dt_device_t *dev, void *exec);
unsigned long long dt_cuda_buffers_generation(dt_device_t *dev);

/* Optimizer steps (optim.cu). */
dt_status_t dt_cuda_sgd_step(void *stream, float *p, const float *grad,
                             float *buf, size_t n, float lr, float mu,
                             float wd, int nesterov);
dt_status_t dt_cuda_adam_step(void *stream, float *p, const float *grad,
                              float *m, float *v, size_t n,
                              const dt_cuda_adam_args_t *a);

#ifdef __cplusplus
}
#endif
#endif /* DT_CUDA_KERNELS_H */
