/* backend.h — dt's CUDA backend: a separately built module
 * ($(pkglibdir)/dt-cuda-backend.so) holding everything that needs cudart,
 * cuBLAS or nvcc, reached through one table of function pointers.
 *
 * Why a module: cuBLAS maps about 500 MB at load. libdt links none of it,
 * so dtctl, every worker and every CPU job start without it; libdt opens
 * the module only when a CUDA device is wanted and the NVIDIA driver sees
 * a GPU (see dt_cuda_usable).
 *
 * Internal to dt (not installed): libdt and the module include it; plugins
 * reach the memory and optimizer entries through dt/device.h. The module and libdt are built together,
 * so a table of another ABI or a smaller size is a stale install. */
#ifndef DT_CUDA_BACKEND_H
#define DT_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <dt/device.h>
#include <dt/nn.h>
#include "nn/im2col.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DT_CUDA_BACKEND_ABI 6
#define DT_CUDA_BACKEND_SYMBOL "dt_cuda_backend_v1"
/* Not dt_<kind>_<name>.so, so the plugin scan never lists it. */
#define DT_CUDA_BACKEND_FILE "dt-cuda-backend.so"

/* Scalars of one Adam/AdamW step, computed on the host: the public
 * dt_gpu_adam_args_t (dt/device.h), under the name the kernels use. */
typedef dt_gpu_adam_args_t dt_cuda_adam_args_t;

/* [train] precision: float32 storage everywhere; bf16/fp16 let the
 * libraries compute on tensor cores with 16-bit inputs, tf32 with
 * float32 inputs rounded to TF32 (10-bit mantissa; PyTorch's default for
 * convolutions on Ampere and later). */
enum {
    DT_PRECISION_FP32 = 0,
    DT_PRECISION_BF16 = 1,
    DT_PRECISION_FP16 = 2,
    DT_PRECISION_TF32 = 3
};

/* One batchnorm call (cuDNN): x and y are n x c x h x w floats, NCHW; a
 * flat input is (n, c, 1, 1) with per_activation = 1 (statistics of each
 * feature over the batch), an image per_activation = 0 (each channel over
 * n, h, w). The running statistics keep the unbiased variance (PyTorch's,
 * and dt's cpu layer's). */
typedef struct dt_cuda_bn {
    int n, c, h, w;
    int per_activation;
    double momentum, eps;
    const float *gamma, *beta;          /* c floats each                 */
    float *running_mean, *running_var;  /* c floats each (l->buf)        */
    float *save_mean, *save_invstd;     /* c floats each: the training
                                           forward's, for backward      */
    int x16; /* forward only: x and y are stored bf16 activations
                (activations = bf16 under precision = bf16), read and
                written as they are; backward takes float32 */
} dt_cuda_bn_t;

/* One pooling call (cuDNN): windows kh x kw at strides sh, sw, without
 * padding, over n*c planes of h x w giving oh x ow; avg: average, else
 * max. Global average pooling is the h x w window. */
typedef struct dt_cuda_pool {
    int avg;
    int n, c, h, w;
    int kh, kw, sh, sw;
    int oh, ow;
} dt_cuda_pool_t;

typedef struct dt_cuda_backend {
    size_t size;   /* sizeof(dt_cuda_backend_t) as the module was built */
    unsigned abi;  /* DT_CUDA_BACKEND_ABI                               */
    const char *built_with; /* "CUDA 13.0 runtime, cuBLAS 13.1.0"       */

    /* ---- Devices (dt_device_t as in dt/nn.h). ---------------------- */
    /* GPUs the CUDA runtime can use; 0 with the reason in why. */
    int (*device_count)(char *why, size_t why_len);
    /* Fill dev (kind, mem, ordinal, stream, blas, name) for GPU
     * local_rank % ngpus and make it the calling thread's device. */
    dt_status_t (*open)(dt_device_t *dev, int local_rank, int ngpus);
    void (*close)(dt_device_t *dev);
    dt_status_t (*sync)(dt_device_t *dev);
    dt_status_t (*alloc)(dt_device_t *dev, size_t bytes, void **out);
    void (*free)(dt_device_t *dev, void *ptr);
    dt_status_t (*host_alloc)(dt_device_t *dev, size_t bytes, void **out);
    void (*host_free)(dt_device_t *dev, void *ptr);
    /* Any direction, in stream order; returns when done. */
    dt_status_t (*copy)(dt_device_t *dev, void *dst, const void *src,
                        size_t bytes);

    /* ---- Row-major sgemm through cuBLAS (see dt_gemm). ------------- */
    dt_status_t (*gemm)(dt_device_t *dev, int trans_a, int trans_b, int m,
                        int n, int k, float alpha, const float *a, int lda,
                        const float *b, int ldb, float beta, float *c,
                        int ldc);

    /* ---- Layer kernels, queued on dev->stream (the .cu files). --------- */
    dt_status_t (*relu_forward)(dt_device_t *dev, const float *x, float *y,
                                size_t n);
    dt_status_t (*relu_backward)(dt_device_t *dev, const float *y,
                                 const float *dy, float *dx, size_t n);
    dt_status_t (*mul)(dt_device_t *dev, const float *a, const float *b,
                       float *out, size_t n);
    dt_status_t (*dropout_forward)(dt_device_t *dev, const float *x, float *y,
                                   float *mask, size_t n, float p,
                                   float scale, uint64_t key);
    dt_status_t (*add_bias)(dt_device_t *dev, float *y, const float *b,
                            int rows, int cols, int per_column);
    dt_status_t (*bias_grad)(dt_device_t *dev, const float *dy, float *db,
                             int rows, int cols, int per_column);
    dt_status_t (*im2col)(dt_device_t *dev, const dt_conv_geom_t *g,
                          const float *x, float *col);
    dt_status_t (*col2im)(dt_device_t *dev, const dt_conv_geom_t *g,
                          const float *col, float *dx);
    dt_status_t (*cnhw_to_nchw)(dt_device_t *dev, const float *Y,
                                const float *bias, float *y, int n, int c,
                                size_t plane);
    dt_status_t (*nchw_to_cnhw)(dt_device_t *dev, const float *dy, float *Y,
                                float *db, int n, int c, size_t plane);
    dt_status_t (*maxpool_forward)(dt_device_t *dev, const float *x, float *y,
                                   int *arg, int planes, int h, int w, int oh,
                                   int ow, int k, int s);
    dt_status_t (*maxpool_backward)(dt_device_t *dev, const float *dy,
                                    const int *arg, float *dx, int planes,
                                    int in_plane, int out_plane);
    /* smoothing: label smoothing eps (0: none), see layer.h. */
    dt_status_t (*softmax_xent)(dt_device_t *dev, const float *logits,
                                const int *labels, float *probs, float *rows,
                                int batch, int k, float smoothing);
    dt_status_t (*softmax_xent_backward)(dt_device_t *dev, const float *probs,
                                         const int *labels, float *dlogits,
                                         int batch, int k, float smoothing);
    /* ---- Optimizers: raw streams (cudaStream_t; NULL: the default
     * stream) on the calling thread's current device, which
     * dt_device_open made the trainer's GPU. -------------------------- */
    /* Zero-filled device memory; returns once it is zeroed. */
    dt_status_t (*mem_alloc)(size_t bytes, void **out);
    void (*mem_free)(void *ptr);
    /* Any direction, ordered after the work on stream; returns when done. */
    dt_status_t (*mem_copy)(void *stream, void *dst, const void *src,
                            size_t bytes);
    /* g = grad + wd * p; without buf: p -= lr * g; with buf:
     * buf = mu * buf + g; p -= lr * (nesterov ? g + mu * buf : buf). */
    dt_status_t (*sgd_step)(void *stream, float *p, const float *grad,
                            float *buf, size_t n, float lr, float mu,
                            float wd, int nesterov);
    dt_status_t (*adam_step)(void *stream, float *p, const float *grad,
                             float *m, float *v, size_t n,
                             const dt_cuda_adam_args_t *a);
    /* Byte value into device memory, ordered after the work on stream;
     * returns when done. */
    dt_status_t (*mem_set)(void *stream, void *dst, int value, size_t bytes);
    /* Wait for the work queued on stream. */
    dt_status_t (*stream_sync)(void *stream);

    /* ---- Precision and loss scaling (cuBLAS; precision.c). --------- */
    /* DT_PRECISION_*: the math the GEMMs use from now on. */
    dt_status_t (*set_precision)(dt_device_t *dev, int precision);
    /* *out = sum |x_i| (inf or nan when any element is): waits for it. */
    dt_status_t (*asum)(dt_device_t *dev, const float *x, size_t n,
                        double *out);

    /* ==== Device-resident step (issue 18): streams, events, queued
     * copies, for grad_sync and the model. One block, kept at the END of
     * the table (other additions go after it). `stream` NULL means
     * dev->stream; events and streams are opaque cudaEvent_t and
     * cudaStream_t. Each entry first makes dev the calling thread's
     * current GPU, so the gradient thread may call them. ============= */
    /* Make dev the calling thread's current GPU (cudaSetDevice). */
    dt_status_t (*set_current)(dt_device_t *dev);
    /* A non-blocking stream on dev (for copies beside the compute). */
    dt_status_t (*stream_create)(dt_device_t *dev, void **out);
    void (*stream_destroy)(dt_device_t *dev, void *stream);
    /* An event without timing; *out NULL on failure. */
    dt_status_t (*event_create)(dt_device_t *dev, void **out);
    void (*event_destroy)(dt_device_t *dev, void *event);
    /* Record event after the work queued on stream so far. */
    dt_status_t (*event_record)(dt_device_t *dev, void *event, void *stream);
    /* Work queued on stream from now on waits for event (no host wait). */
    dt_status_t (*stream_wait_event)(dt_device_t *dev, void *stream,
                                     void *event);
    /* The host waits until event has happened. */
    dt_status_t (*event_sync)(dt_device_t *dev, void *event);
    /* Any direction, queued on stream; returns at once (host memory must
     * be pinned and stay untouched until an event after it happened). */
    dt_status_t (*copy_async)(dt_device_t *dev, void *dst, const void *src,
                              size_t bytes, void *stream);
    /* x[i] *= f for n floats of device memory, queued on stream. */
    dt_status_t (*scale)(dt_device_t *dev, float *x, float f, size_t n,
                         void *stream);
    /* ==== end of the device-resident step block ==================== */

    /* ---- ABI 2: the residual add and cuDNN (issue 18 part 2). ------- */
    /* out = a + b, n floats, through cuBLAS; out may be a or b (the
     * residual add and the model's gradient sums). */
    dt_status_t (*add)(dt_device_t *dev, const float *a, const float *b,
                       float *out, size_t n);

    /* ---- cuDNN (cudnn_*.c): one cudnnHandle_t per device, bound to
     * dev->stream and made on first use; NCHW float tensors. Built
     * without cuDNN these are NULL and cudnn_missing says why; else
     * cudnn_missing is NULL. -------------------------------------------- */
    const char *cudnn_missing;
    /* y = conv(x, w) (+ bias per output channel unless bias is NULL);
     * w is (out_c, c, k, k). */
    dt_status_t (*conv_forward)(dt_device_t *dev, const dt_conv_geom_t *g,
                                int out_c, const float *x, const float *w,
                                const float *bias, float *y);
    /* dw (overwritten); db (NULL: none) = sums of dy per channel; dx
     * (NULL: not wanted) = the gradient at x. */
    dt_status_t (*conv_backward)(dt_device_t *dev, const dt_conv_geom_t *g,
                                 int out_c, const float *x, const float *w,
                                 const float *dy, float *dw, float *db,
                                 float *dx);
    /* train: batch statistics, running ones updated, save_* written;
     * else the running statistics. */
    dt_status_t (*bn_forward)(dt_device_t *dev, const dt_cuda_bn_t *bn,
                              int train, const float *x, float *y);
    /* after a training forward: dgamma, dbeta overwritten; dx (NULL: not
     * wanted) */
    dt_status_t (*bn_backward)(dt_device_t *dev, const dt_cuda_bn_t *bn,
                               const float *x, const float *dy, float *dx,
                               float *dgamma, float *dbeta);
    dt_status_t (*pool_forward)(dt_device_t *dev, const dt_cuda_pool_t *p,
                                const float *x, float *y);
    /* dx overwritten; x and y are the forward's */
    dt_status_t (*pool_backward)(dt_device_t *dev, const dt_cuda_pool_t *p,
                                 const float *x, const float *y,
                                 const float *dy, float *dx);

    /* ---- ABI 3: [train] cudnn_benchmark (cudnn_conv.c): on, the
     * convolutions' algorithms are picked by timing cuDNN's candidates
     * (cudnnFind*); off, from its heuristics. NULL without cuDNN. ------- */
    dt_status_t (*set_conv_benchmark)(dt_device_t *dev, int on);

    /* ---- ABI 3: sync_bn (bn_sync.cu; no cuDNN needed). NCHW floats
     * (n, c, hw) on dev's stream; per channel arrays of c floats in
     * device memory. ------------------------------------------------- */
    /* out (2c doubles, device) = per channel: sum a, then sum a b (b
     * NULL: sum a a), over n and hw. */
    dt_status_t (*bn_sums)(dt_device_t *dev, int n, int c, int hw,
                           const float *a, const float *b, double *out);
    /* y = x s_c + t_c (elem_math.h dt_elem_bn_apply) */
    dt_status_t (*bn_apply)(dt_device_t *dev, int n, int c, int hw,
                            const float *x, const float *s, const float *t,
                            float *y);
    /* dx = k_c (dy - x b_c + off_c) (dt_elem_bn_dx) */
    dt_status_t (*bn_dx)(dt_device_t *dev, int n, int c, int hw,
                         const float *dy, const float *x, const float *k,
                         const float *b, const float *off, float *dx);

    /* ---- ABI 4: sync_bn's per-channel arithmetic on the device
     * (elem_math.h dt_elem_bn_*), one thread per channel; sums: 2c
     * doubles (device), the count M at [2c] where used. --------------- */
    /* From the global S, Q and M: mean, invstd; rmean, rvar moved by
     * momentum mom (in place); the apply coefficients s = gamma invstd,
     * t = beta - mean s. */
    dt_status_t (*bn_stats)(dt_device_t *dev, int c, const double *sums,
                            double eps, double mom, const float *gamma,
                            const float *beta, float *mean, float *invstd,
                            float *rmean, float *rvar, float *s, float *t);
    /* From this rank's sum g and sum g x: dgamma, dbeta. */
    dt_status_t (*bn_grads)(dt_device_t *dev, int c, const double *sums,
                            const float *mean, const float *invstd,
                            float *dgamma, float *dbeta);
    /* From the global sums and M: bn_dx's k, b, off. */
    dt_status_t (*bn_dx_coef)(dt_device_t *dev, int c, const double *sums,
                              const float *mean, const float *invstd,
                              const float *gamma, float *k, float *b,
                              float *off);

    /* ---- ABI 5: 16-bit activation storage (model.c, [train]
     * activations = bf16): n floats to bf16 (round to nearest even,
     * elem_math.h dt_elem_to_bf16) and back, queued on dev's stream. --- */
    dt_status_t (*to_bf16)(dt_device_t *dev, const float *x, void *y,
                           size_t n);
    dt_status_t (*from_bf16)(dt_device_t *dev, const void *x, float *y,
                             size_t n);
    /* Memory, in bytes: in use on the GPU (cudaMemGetInfo: every process
     * and context on it), its total, and what dt's cuDNN state holds
     * there (the conv workspace and the bf16 conv copies; 0 without
     * cuDNN). For the trainer's report of where memory goes. */
    dt_status_t (*mem_info)(dt_device_t *dev, size_t *used, size_t *total,
                            size_t *workspace, size_t *copies);
    /* The DT_PRECISION_* set_precision set last (the model's convs read
     * and write stored bf16 activations as they are under bf16). */
    int (*get_precision)(void);
    /* relu on stored bf16 activations, n elements: y = x > 0 ? x : 0 (y
     * may be x); dx = y > 0 ? dy : 0 from the bf16 output. */
    dt_status_t (*relu16_forward)(dt_device_t *dev, const void *x, void *y,
                                  size_t n);
    dt_status_t (*relu16_backward)(dt_device_t *dev, const void *y,
                                   const float *dy, float *dx, size_t n);
    /* The residual add on stored bf16: out = a + b (float sum, rounded
     * to nearest even); out may be a or b. */
    dt_status_t (*add16)(dt_device_t *dev, const void *a, const void *b,
                         void *out, size_t n);

    /* ---- ABI 6: CUDA graphs ([train] cuda_graphs, graph.c). ---------- */
    /* Capture what body queues on dev->stream (body's host code runs
     * once, now; its kernels run at each launch) into *exec. A body
     * that fails, or a call in it that cannot be captured (a cudaMalloc,
     * a synchronization), ends the capture: DT_ERR_UNSUPPORTED with the
     * reason in why, nothing kept, the stream usable again. */
    dt_status_t (*graph_capture)(dt_device_t *dev,
                                 dt_status_t (*body)(void *arg), void *arg,
                                 void **exec, char *why, size_t why_len);
    /* Queue the captured work on dev->stream. */
    dt_status_t (*graph_launch)(dt_device_t *dev, void *exec);
    void (*graph_destroy)(dt_device_t *dev, void *exec);
    /* Changes whenever the backend moves a buffer of its own that the
     * layers' calls use (cuDNN's workspace and copies grow on demand): a
     * graph captured under another value points at freed memory. */
    unsigned long long (*buffers_generation)(dt_device_t *dev);
} dt_cuda_backend_t;

/* ---- libdt's side (core/nn/cuda_*.c), for libdt and the tests; plugins
 * use dt/device.h (core/nn/gpu.c). -------------------------------------- */

/* The backend, loading it on first use (DT_PLUGIN_PATH, the build tree's
 * plugins/modules, then $(pkglibdir), as for plugins). On failure logs
 * what is missing and returns DT_ERR_UNSUPPORTED. */
dt_status_t dt_cuda_backend(const dt_cuda_backend_t **out);

/* The same without logging: NULL with the reason in why (may be NULL). */
const dt_cuda_backend_t *dt_cuda_backend_try(char *why, size_t why_len);

/* The backend if it is already loaded, else NULL. Every CUDA device was
 * opened through it, so code holding a CUDA dt_device_t may use this. */
const dt_cuda_backend_t *dt_cuda_backend_loaded(void);

/* NULL when the loaded backend has cuDNN (its conv, batchnorm and pooling
 * entries), else why not: for the layers' cuda_missing. */
const char *dt_cuda_cudnn_missing(void);

/* Load and check one module file; the reason for a failure in why. */
dt_status_t dt_cuda_backend_open_file(const char *path,
                                      const dt_cuda_backend_t **out,
                                      char *why, size_t why_len);

/* GPUs the NVIDIA driver reports, asking libcuda.so.1 itself (cuInit,
 * cuDeviceGetCount): no cuBLAS or CUDA runtime is loaded to find that a
 * machine has no GPU. 0 with the reason in why (may be NULL). */
int dt_cuda_driver_device_count(char *why, size_t why_len);

/* GPUs dt can use: the driver's count, then the backend (loaded only when
 * the driver sees a GPU) and its runtime's count. 0 with the reason. */
int dt_cuda_usable(char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* DT_CUDA_BACKEND_H */
