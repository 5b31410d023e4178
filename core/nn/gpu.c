/* gpu.c — the public device-memory API (dt/device.h) over dt's CUDA
 * backend (cuda/backend.h), which it loads on first use. Host-to-host
 * copies need no backend. */
#include "config.h"

#include <string.h>

#include <dt/device.h>
#include <dt/log.h>
#include "cuda/backend.h"

/* The backend, loaded now if need be; logs why it cannot be had. */
static const dt_cuda_backend_t *need(void)
{
    const dt_cuda_backend_t *be = dt_cuda_backend_loaded();
    if (!be && dt_cuda_backend(&be) != DT_OK)
        return NULL;
    return be;
}

int dt_gpu_available(char *why, size_t why_len)
{
    return dt_cuda_backend_try(why, why_len) != NULL;
}

dt_status_t dt_gpu_alloc(size_t bytes, void **out)
{
    *out = NULL;
    const dt_cuda_backend_t *be = need();
    if (!be)
        return DT_ERR_UNSUPPORTED;
    dt_status_t st = be->mem_alloc(bytes ? bytes : 1, out);
    if (st != DT_OK)
        *out = NULL;
    return st;
}

void dt_gpu_free(void *ptr)
{
    const dt_cuda_backend_t *be = dt_cuda_backend_loaded();
    /* Device memory only exists once the backend is loaded. */
    if (ptr && be)
        be->mem_free(ptr);
}

static int mem_ok(dt_mem_t m)
{
    return m == DT_MEM_HOST || m == DT_MEM_CUDA;
}

dt_status_t dt_gpu_copy(void *dst, dt_mem_t dst_mem, const void *src,
                        dt_mem_t src_mem, size_t bytes, void *stream)
{
    if (!mem_ok(dst_mem) || !mem_ok(src_mem)) {
        dt_error("dt_gpu_copy: unknown memory kind (%d to %d)", (int)src_mem,
                 (int)dst_mem);
        return DT_ERR_INVALID;
    }
    if (bytes == 0)
        return DT_OK;
    if (dst_mem == DT_MEM_HOST && src_mem == DT_MEM_HOST) {
        memcpy(dst, src, bytes);
        return DT_OK;
    }
    const dt_cuda_backend_t *be = need();
    if (!be)
        return DT_ERR_UNSUPPORTED;
    /* The backend copies with cudaMemcpyDefault: the pointers say which
     * way (unified addressing). */
    return be->mem_copy(stream, dst, src, bytes);
}

dt_status_t dt_gpu_memset(void *dst, int value, size_t bytes, void *stream)
{
    const dt_cuda_backend_t *be = need();
    if (!be)
        return DT_ERR_UNSUPPORTED;
    return bytes ? be->mem_set(stream, dst, value, bytes) : DT_OK;
}

dt_status_t dt_gpu_stream_sync(void *stream)
{
    const dt_cuda_backend_t *be = need();
    return be ? be->stream_sync(stream) : DT_ERR_UNSUPPORTED;
}

dt_status_t dt_gpu_sgd_step(void *stream, float *p, const float *grad,
                            float *buf, size_t n, float lr, float mu,
                            float wd, int nesterov)
{
    const dt_cuda_backend_t *be = need();
    if (!be)
        return DT_ERR_UNSUPPORTED;
    return be->sgd_step(stream, p, grad, buf, n, lr, mu, wd, nesterov);
}

dt_status_t dt_gpu_adam_step(void *stream, float *p, const float *grad,
                             float *m, float *v, size_t n,
                             const dt_gpu_adam_args_t *a)
{
    const dt_cuda_backend_t *be = need();
    if (!be)
        return DT_ERR_UNSUPPORTED;
    return be->adam_step(stream, p, grad, m, v, n, a);
}
