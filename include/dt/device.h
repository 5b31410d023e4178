/* dt/device.h — GPU memory, streams and the optimizers' vector updates,
 * for plugins (installed; part of the plugin SDK).
 *
 * An optimizer plugin whose parameters live in CUDA memory (create() was
 * given DT_MEM_CUDA) keeps its state there and steps it with these calls;
 * the core uses the same calls to stage device buffers through host
 * memory for a transport that cannot read them (dt_allreduce_mem, dt.h).
 * Everything runs in dt's CUDA backend, a module libdt loads on first use
 * (the first call here, or the trainer's first CUDA device): a plugin that
 * uses this header links no CUDA library, needs no nvcc and loads on
 * CPU-only machines, where these calls fail with DT_ERR_UNSUPPORTED and
 * say why.
 *
 *   char why[256];
 *   if (!dt_gpu_available(why, sizeof why)) { dt_error("%s", why); ... }
 *   float *m;
 *   dt_gpu_alloc(n * sizeof(float), (void **)&m);           // zeroed
 *   dt_gpu_adam_step(stream, params, grads, m, v, n, &args);
 *   dt_gpu_copy(blob, DT_MEM_HOST, m, DT_MEM_CUDA, bytes, stream);
 *   dt_gpu_free(m);
 *
 * Conventions:
 * - `stream` is a cudaStream_t passed as void * (the one the optimizer's
 *   step() received); NULL is the CUDA default stream. Work is ordered
 *   after what is already queued on that stream.
 * - Calls work on the calling thread's current CUDA device. The trainer
 *   makes its GPU current on its thread (dt_device_open, dt/nn.h), and
 *   calls optimizer plugins from that thread.
 * - Pointers of kind DT_MEM_CUDA come from dt_gpu_alloc or from dt itself
 *   (a model's parameters and gradients on a CUDA dt_device_t).
 * - Every function returns DT_OK or a negative dt_status_t after logging
 *   what failed.
 * - Not the same thing as dt_device_t in dt/nn.h: that is the trainer's
 *   compute device (cpu or cuda, with its own stream and cuBLAS handle);
 *   this is raw device memory for code that has only a stream.
 */
#ifndef DT_DEVICE_H
#define DT_DEVICE_H

#include <stddef.h>
#include <dt/status.h>
#include <dt/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when dt's CUDA backend is loaded or loads now (it is looked for on the
 * plugin search path: DT_PLUGIN_PATH, the build tree, $(pkglibdir)); 0
 * with the reason in why (may be NULL), e.g. that this dt was built
 * without CUDA. Logs nothing. Whether the machine has a GPU is a separate
 * question: dt_cuda_device_count() in dt/nn.h. */
int dt_gpu_available(char *why, size_t why_len);

/* bytes (0 counts as 1) of zero-filled device memory; returns once it is
 * zeroed. *out is NULL on failure. */
dt_status_t dt_gpu_alloc(size_t bytes, void **out);
/* Frees what dt_gpu_alloc returned; NULL is ignored. */
void dt_gpu_free(void *ptr);

/* Copy bytes from src to dst; each side is host (DT_MEM_HOST) or device
 * (DT_MEM_CUDA) memory, so this is host to device, device to host or
 * device to device (host to host is a plain memcpy and needs no backend).
 * Ordered after the work queued on stream; returns when the copy is done,
 * so host memory may be reused at once. The regions must not overlap. */
dt_status_t dt_gpu_copy(void *dst, dt_mem_t dst_mem, const void *src,
                        dt_mem_t src_mem, size_t bytes, void *stream);

/* Set bytes of device memory to the byte value, ordered after the work
 * queued on stream; returns when done. */
dt_status_t dt_gpu_memset(void *dst, int value, size_t bytes, void *stream);

/* Wait until all work queued on stream has finished. */
dt_status_t dt_gpu_stream_sync(void *stream);

/* ---- Elementwise updates of n float32 values in device memory, queued on
 * stream (they return before the kernel finishes; a later dt_gpu_copy or
 * dt_gpu_stream_sync on the same stream waits for it). The arithmetic and
 * its order are those of the in-tree optimizers' CPU loops, so CPU and GPU
 * results agree to rounding. ----------------------------------------- */

/* SGD as torch.optim.SGD with dampening 0. g = grad + wd * p; then
 * without buf (momentum 0): p -= lr * g; with buf (n floats):
 * buf = mu * buf + g; p -= lr * (nesterov ? g + mu * buf : buf). */
dt_status_t dt_gpu_sgd_step(void *stream, float *p, const float *grad,
                            float *buf, size_t n, float lr, float mu,
                            float wd, int nesterov);

/* Scalars of one Adam/AdamW step, computed on the host by the caller
 * (plugins/optimizer/adam_core.h shows how, from lr, the betas and the
 * step number t):
 *   l2 = weight decay added to the gradient (Adam; 0 for AdamW)
 *   shrink = 1 - lr * weight decay (AdamW's decoupled decay; 1 for Adam)
 *   step_size = lr / (1 - beta1^t);  rbc2 = 1 / sqrt(1 - beta2^t) */
typedef struct dt_gpu_adam_args {
    float beta1, beta2, eps;
    float l2, shrink, step_size, rbc2;
} dt_gpu_adam_args_t;

/* g = grad + l2 * p; m = beta1 m + (1 - beta1) g;
 * v = beta2 v + (1 - beta2) g^2;
 * p = p * shrink - step_size * m / (sqrt(v) * rbc2 + eps). */
dt_status_t dt_gpu_adam_step(void *stream, float *p, const float *grad,
                             float *m, float *v, size_t n,
                             const dt_gpu_adam_args_t *a);

#ifdef __cplusplus
}
#endif
#endif /* DT_DEVICE_H */
