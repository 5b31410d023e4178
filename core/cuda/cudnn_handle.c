/* cudnn_handle.c (CUDA backend) — the per-device cuDNN state (cudnn.h):
 * the handle bound to dev->stream, the descriptors, the workspace. */
#include "config.h"

#include <stdlib.h>

#include <cuda_runtime_api.h>

#include <dt/log.h>
#include "cuda/cudnn.h"

dt_status_t dt_cudnn_check(dt_device_t *dev, cudnnStatus_t st,
                           const char *call)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return DT_OK;
    dt_error("cuDNN %s failed on %s: %s", call, dev->name,
             cudnnGetErrorString(st));
    return st == CUDNN_STATUS_ALLOC_FAILED ? DT_ERR_NOMEM : DT_ERR_INTERNAL;
}

static void destroy(dt_cudnn_t *s)
{
    if (s->pool)
        cudnnDestroyPoolingDescriptor(s->pool);
    if (s->conv)
        cudnnDestroyConvolutionDescriptor(s->conv);
    if (s->filter)
        cudnnDestroyFilterDescriptor(s->filter);
    if (s->per_channel)
        cudnnDestroyTensorDescriptor(s->per_channel);
    if (s->y)
        cudnnDestroyTensorDescriptor(s->y);
    if (s->x)
        cudnnDestroyTensorDescriptor(s->x);
    if (s->handle)
        cudnnDestroy(s->handle);
    if (s->workspace)
        cudaFree(s->workspace);
    if (s->spare)
        cudaFree(s->spare);
    if (s->half)
        cudaFree(s->half);
    if (s->bnf)
        cudaFree(s->bnf);
    if (s->fio)
        cudaFree(s->fio);
    free(s->algos);
    free(s);
}

dt_status_t dt_cudnn_get(dt_device_t *dev, dt_cudnn_t **out)
{
    if (dev->dnn) {
        *out = dev->dnn;
        return DT_OK;
    }
    *out = NULL;
    /* the handle belongs to the GPU current at cudnnCreate: this one */
    cudaError_t ce = cudaSetDevice(dev->ordinal);
    if (ce != cudaSuccess) {
        dt_error("cannot make %s current for cuDNN: %s", dev->name,
                 cudaGetErrorString(ce));
        return DT_ERR_INTERNAL;
    }
    dt_cudnn_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    dt_status_t st = dt_cudnn_check(dev, cudnnCreate(&s->handle),
                                    "cudnnCreate");
    if (st == DT_OK)
        st = dt_cudnn_check(
            dev, cudnnSetStream(s->handle, (cudaStream_t)dev->stream),
            "cudnnSetStream");
    if (st == DT_OK)
        st = dt_cudnn_check(dev, cudnnCreateTensorDescriptor(&s->x),
                            "cudnnCreateTensorDescriptor");
    if (st == DT_OK)
        st = dt_cudnn_check(dev, cudnnCreateTensorDescriptor(&s->y),
                            "cudnnCreateTensorDescriptor");
    if (st == DT_OK)
        st = dt_cudnn_check(dev, cudnnCreateTensorDescriptor(&s->per_channel),
                            "cudnnCreateTensorDescriptor");
    if (st == DT_OK)
        st = dt_cudnn_check(dev, cudnnCreateFilterDescriptor(&s->filter),
                            "cudnnCreateFilterDescriptor");
    if (st == DT_OK)
        st = dt_cudnn_check(dev, cudnnCreateConvolutionDescriptor(&s->conv),
                            "cudnnCreateConvolutionDescriptor");
    if (st == DT_OK)
        st = dt_cudnn_check(dev, cudnnCreatePoolingDescriptor(&s->pool),
                            "cudnnCreatePoolingDescriptor");
    if (st != DT_OK) {
        dt_error("cuDNN could not start on %s: check that libcudnn.so.9 "
                 "(and its libcudnn_*.so.9) match this CUDA runtime and "
                 "driver", dev->name);
        destroy(s);
        return st;
    }
    /* the library found at run time may be another 9.x than the headers */
    size_t v = cudnnGetVersion();
    dt_info("cuDNN %zu.%zu.%zu on %s (built with %d.%d.%d)", v / 10000,
            v / 100 % 100, v % 100, dev->name, CUDNN_MAJOR, CUDNN_MINOR,
            CUDNN_PATCHLEVEL);
    dev->dnn = s;
    *out = s;
    return DT_OK;
}

void dt_cudnn_release(dt_device_t *dev)
{
    if (!dev->dnn)
        return;
    /* the stream may still run work that uses the workspace */
    cudaStreamSynchronize((cudaStream_t)dev->stream);
    destroy(dev->dnn);
    dev->dnn = NULL;
}

dt_status_t dt_cudnn_grow(dt_device_t *dev, void **buf, size_t *have,
                          size_t bytes, const char *what)
{
    if (bytes <= *have && *buf)
        return DT_OK;
    cudaError_t ce = cudaStreamSynchronize((cudaStream_t)dev->stream);
    if (ce != cudaSuccess) { /* the old buffer stays, still in use */
        dt_error("cuDNN %s: cannot grow it to %zu bytes on %s: waiting for "
                 "the stream failed: %s%s", what, bytes, dev->name,
                 cudaGetErrorString(ce),
                 ce == cudaErrorStreamCaptureUnsupported
                     ? " (inside a CUDA graph capture)"
                     : "");
        cudaGetLastError();
        return DT_ERR_INTERNAL;
    }
    if (*buf)
        cudaFree(*buf);
    *buf = NULL;
    *have = 0;
    ce = cudaMalloc(buf, bytes ? bytes : 1);
    if (dev->dnn)
        ((dt_cudnn_t *)dev->dnn)->generation++;
    if (ce != cudaSuccess) {
        *buf = NULL;
        dt_error("cuDNN %s (%zu bytes) could not be allocated on %s: %s",
                 what, bytes, dev->name, cudaGetErrorString(ce));
        return ce == cudaErrorMemoryAllocation ? DT_ERR_NOMEM
                                               : DT_ERR_INTERNAL;
    }
    *have = bytes;
    return DT_OK;
}

dt_status_t dt_cudnn_tensor(dt_device_t *dev, cudnnTensorDescriptor_t d,
                            int n, int c, int h, int w)
{
    return dt_cudnn_check(dev,
                          cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW,
                                                     CUDNN_DATA_FLOAT, n, c,
                                                     h, w),
                          "cudnnSetTensor4dDescriptor");
}

void dt_cudnn_sizes(const dt_device_t *dev, size_t *workspace,
                    size_t *copies)
{
    const dt_cudnn_t *s = dev->dnn;
    *workspace = s ? s->workspace_bytes : 0;
    *copies = s ? s->half_bytes + s->bnf_bytes + s->fio_bytes : 0;
}
