/* device.c (CUDA backend) — GPUs, streams, memory and copies through the
 * CUDA runtime; the cpu side is in core/nn/device.c. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <dt/log.h>
#include "cuda/kernels.h"

int dt_cuda_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t ce = cudaGetDeviceCount(&n);
    if (ce != cudaSuccess) {
        if (why && why_len)
            snprintf(why, why_len,
                     "the CUDA runtime finds no usable GPU: %s (is the "
                     "NVIDIA driver older than this CUDA %d.%d runtime?)",
                     cudaGetErrorString(ce), CUDART_VERSION / 1000,
                     CUDART_VERSION % 1000 / 10);
        cudaGetLastError(); /* clear the sticky error */
        return 0;
    }
    if (n == 0 && why && why_len)
        snprintf(why, why_len, "the CUDA runtime sees no GPU");
    return n;
}

dt_status_t dt_cuda_open(dt_device_t *dev, int local_rank, int ngpus)
{
    dev->kind = DT_DEVICE_CUDA;
    dev->mem = DT_MEM_CUDA;
    dev->ordinal = (local_rank < 0 ? 0 : local_rank) % ngpus;
    struct cudaDeviceProp prop;
    cudaStream_t stream = NULL;
    cublasHandle_t blas = NULL;
    cudaError_t ce = cudaSetDevice(dev->ordinal);
    if (ce == cudaSuccess)
        ce = cudaGetDeviceProperties(&prop, dev->ordinal);
    if (ce == cudaSuccess)
        ce = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (ce != cudaSuccess) {
        dt_error("cannot use GPU %d (local rank %d of %d GPUs): %s",
                 dev->ordinal, local_rank, ngpus, cudaGetErrorString(ce));
        return DT_ERR_IO;
    }
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) {
        dt_error("cuBLAS could not start on GPU %d: check the CUDA "
                 "installation (libcublas) matches the driver",
                 dev->ordinal);
        if (blas)
            cublasDestroy(blas);
        cudaStreamDestroy(stream);
        return DT_ERR_IO;
    }
    dev->stream = stream;
    dev->blas = blas;
    snprintf(dev->name, sizeof dev->name, "cuda:%d (%.100s)", dev->ordinal,
             prop.name);
    return DT_OK;
}

void dt_cuda_close(dt_device_t *dev)
{
#ifdef DT_HAVE_CUDNN
    dt_cudnn_release(dev);
#endif
    if (dev->blas)
        cublasDestroy((cublasHandle_t)dev->blas);
    if (dev->stream)
        cudaStreamDestroy((cudaStream_t)dev->stream);
    dev->blas = dev->stream = NULL;
}

static dt_status_t check(cudaError_t ce, const char *on, const char *what,
                         size_t bytes)
{
    if (ce == cudaSuccess)
        return DT_OK;
    dt_error("%s (%zu bytes) failed on %s: %s", what, bytes, on,
             cudaGetErrorString(ce));
    return ce == cudaErrorMemoryAllocation ? DT_ERR_NOMEM : DT_ERR_IO;
}

dt_status_t dt_cuda_sync(dt_device_t *dev)
{
    return check(cudaStreamSynchronize((cudaStream_t)dev->stream), dev->name,
                 "waiting for the GPU stream", 0);
}

dt_status_t dt_cuda_alloc(dt_device_t *dev, size_t bytes, void **out)
{
    *out = NULL;
    DT_CHECK(check(cudaMalloc(out, bytes), dev->name, "cudaMalloc", bytes));
    dt_status_t st = check(cudaMemsetAsync(*out, 0, bytes,
                                           (cudaStream_t)dev->stream),
                           dev->name, "cudaMemset", bytes);
    if (st != DT_OK) { /* no error with *out still allocated */
        cudaFree(*out);
        *out = NULL;
    }
    return st;
}

void dt_cuda_free(dt_device_t *dev, void *ptr)
{
    (void)dev;
    cudaFree(ptr);
}

dt_status_t dt_cuda_host_alloc(dt_device_t *dev, size_t bytes, void **out)
{
    DT_CHECK(check(cudaMallocHost(out, bytes), dev->name,
                   "cudaMallocHost (pinned staging buffer)", bytes));
    memset(*out, 0, bytes);
    return DT_OK;
}

void dt_cuda_host_free(dt_device_t *dev, void *ptr)
{
    (void)dev;
    cudaFreeHost(ptr);
}

dt_status_t dt_cuda_copy(dt_device_t *dev, void *dst, const void *src,
                         size_t bytes)
{
    DT_CHECK(check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                   (cudaStream_t)dev->stream),
                   dev->name, "cudaMemcpy", bytes));
    return dt_cuda_sync(dev);
}

/* ---- For the optimizer plugins: the thread's current device. ---------- */

dt_status_t dt_cuda_mem_alloc(size_t bytes, void **out)
{
    *out = NULL;
    if (bytes == 0)
        bytes = 1;
    DT_CHECK(check(cudaMalloc(out, bytes), "the current GPU", "cudaMalloc",
                   bytes));
    /* The default stream does not order the trainer's non-blocking
     * stream: wait here so the zeros are in place before any step. */
    dt_status_t st = check(cudaMemsetAsync(*out, 0, bytes, 0),
                           "the current GPU", "cudaMemset", bytes);
    if (st == DT_OK)
        st = check(cudaStreamSynchronize(0), "the current GPU",
                   "cudaMemset", bytes);
    if (st != DT_OK) {
        cudaFree(*out);
        *out = NULL;
    }
    return st;
}

void dt_cuda_mem_free(void *ptr)
{
    if (ptr)
        cudaFree(ptr);
}

dt_status_t dt_cuda_mem_copy(void *stream, void *dst, const void *src,
                             size_t bytes)
{
    if (bytes == 0)
        return DT_OK;
    cudaStream_t s = (cudaStream_t)stream;
    DT_CHECK(check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s),
                   "the current GPU", "cudaMemcpy", bytes));
    return check(cudaStreamSynchronize(s), "the current GPU", "cudaMemcpy",
                 bytes);
}

dt_status_t dt_cuda_mem_set(void *stream, void *dst, int value, size_t bytes)
{
    if (bytes == 0)
        return DT_OK;
    cudaStream_t s = (cudaStream_t)stream;
    DT_CHECK(check(cudaMemsetAsync(dst, value, bytes, s), "the current GPU",
                   "cudaMemset", bytes));
    return check(cudaStreamSynchronize(s), "the current GPU", "cudaMemset",
                 bytes);
}

dt_status_t dt_cuda_stream_sync(void *stream)
{
    return check(cudaStreamSynchronize((cudaStream_t)stream),
                 "the current GPU", "waiting for the GPU stream", 0);
}

/* ---- Device-resident step (backend.h's last block): streams, events and
 * queued copies. Every entry makes dev current first: the gradient
 * thread calls them, and cudaSetDevice is per thread. ------------------ */

dt_status_t dt_cuda_set_current(dt_device_t *dev)
{
    return check(cudaSetDevice(dev->ordinal), dev->name, "cudaSetDevice", 0);
}

static cudaStream_t stream_of(dt_device_t *dev, void *stream)
{
    return stream ? (cudaStream_t)stream : (cudaStream_t)dev->stream;
}

dt_status_t dt_cuda_stream_create(dt_device_t *dev, void **out)
{
    *out = NULL;
    DT_CHECK(dt_cuda_set_current(dev));
    cudaStream_t s;
    DT_CHECK(check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                   dev->name, "cudaStreamCreate", 0));
    *out = s;
    return DT_OK;
}

void dt_cuda_stream_destroy(dt_device_t *dev, void *stream)
{
    if (!stream)
        return;
    cudaSetDevice(dev->ordinal);
    cudaStreamDestroy((cudaStream_t)stream);
}

dt_status_t dt_cuda_event_create(dt_device_t *dev, void **out)
{
    *out = NULL;
    DT_CHECK(dt_cuda_set_current(dev));
    cudaEvent_t e;
    DT_CHECK(check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                   dev->name, "cudaEventCreate", 0));
    *out = e;
    return DT_OK;
}

void dt_cuda_event_destroy(dt_device_t *dev, void *event)
{
    if (!event)
        return;
    cudaSetDevice(dev->ordinal);
    cudaEventDestroy((cudaEvent_t)event);
}

dt_status_t dt_cuda_event_record(dt_device_t *dev, void *event, void *stream)
{
    DT_CHECK(dt_cuda_set_current(dev));
    return check(cudaEventRecord((cudaEvent_t)event, stream_of(dev, stream)),
                 dev->name, "cudaEventRecord", 0);
}

dt_status_t dt_cuda_stream_wait_event(dt_device_t *dev, void *stream,
                                      void *event)
{
    DT_CHECK(dt_cuda_set_current(dev));
    return check(cudaStreamWaitEvent(stream_of(dev, stream),
                                     (cudaEvent_t)event, 0),
                 dev->name, "cudaStreamWaitEvent", 0);
}

dt_status_t dt_cuda_event_sync(dt_device_t *dev, void *event)
{
    DT_CHECK(dt_cuda_set_current(dev));
    return check(cudaEventSynchronize((cudaEvent_t)event), dev->name,
                 "waiting for a GPU event (a kernel before it failed?)", 0);
}

dt_status_t dt_cuda_copy_async(dt_device_t *dev, void *dst, const void *src,
                               size_t bytes, void *stream)
{
    if (bytes == 0)
        return DT_OK;
    DT_CHECK(dt_cuda_set_current(dev));
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                 stream_of(dev, stream)),
                 dev->name, "cudaMemcpyAsync (queued)", bytes);
}

dt_status_t dt_cuda_mem_info(dt_device_t *dev, size_t *used, size_t *total,
                             size_t *workspace, size_t *copies)
{
    size_t free_b = 0, total_b = 0;
    DT_CHECK(check(cudaSetDevice(dev->ordinal), dev->name, "cudaSetDevice",
                   0));
    DT_CHECK(check(cudaMemGetInfo(&free_b, &total_b), dev->name,
                   "cudaMemGetInfo", 0));
    *used = total_b - free_b;
    *total = total_b;
    *workspace = *copies = 0;
#ifdef DT_HAVE_CUDNN
    dt_cudnn_sizes(dev, workspace, copies);
#endif
    return DT_OK;
}
