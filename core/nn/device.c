/* device.c — open a cpu or cuda device, allocate and copy memory on it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/nn.h>

#ifdef HAVE_OPENBLAS_CBLAS
#include <cblas.h>
#endif
#ifdef DT_HAVE_CUDA_NN
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#endif

int dt_cuda_device_count(void)
{
#ifdef DT_HAVE_CUDA_NN
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
#else
    return 0;
#endif
}

static void open_cpu(dt_device_t *dev, int threads)
{
    dev->kind = DT_DEVICE_CPU;
    dev->mem = DT_MEM_HOST;
    dev->ordinal = -1;
    dev->threads = threads;
#ifdef HAVE_OPENBLAS_CBLAS
    openblas_set_num_threads(threads);
    snprintf(dev->name, sizeof dev->name, "cpu (OpenBLAS, %d thread%s)",
             threads, threads == 1 ? "" : "s");
#else
    snprintf(dev->name, sizeof dev->name, "cpu (no BLAS: plain loops)");
#endif
}

#ifdef DT_HAVE_CUDA_NN
static dt_status_t open_cuda(dt_device_t *dev, int local_rank, int ngpus)
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
#endif

dt_status_t dt_device_open(const char *want, int local_rank, int threads,
                           dt_device_t **out)
{
    *out = NULL;
    if (!want)
        want = "auto";
    if (strcmp(want, "auto") != 0 && strcmp(want, "cpu") != 0 &&
        strcmp(want, "cuda") != 0) {
        dt_error("[train] device = '%s': use auto, cpu or cuda", want);
        return DT_ERR_CONFIG;
    }
    if (threads < 1) {
        dt_error("[train] threads = %d: must be at least 1", threads);
        return DT_ERR_CONFIG;
    }
    int ngpus = strcmp(want, "cpu") == 0 ? 0 : dt_cuda_device_count();
    if (strcmp(want, "cuda") == 0 && ngpus == 0) {
#ifdef DT_HAVE_CUDA_NN
        dt_error("[train] device = cuda, but no GPU is visible (check "
                 "nvidia-smi and CUDA_VISIBLE_DEVICES), or use device = "
                 "auto/cpu");
#else
        dt_error("[train] device = cuda, but this dt was built without CUDA "
                 "(configure found no nvcc/cuBLAS); use device = auto/cpu");
#endif
        return DT_ERR_UNSUPPORTED;
    }
    dt_device_t *dev = calloc(1, sizeof *dev);
    if (!dev)
        return DT_ERR_NOMEM;
    dev->threads = threads;
#ifdef DT_HAVE_CUDA_NN
    if (ngpus > 0) {
        dt_status_t st = open_cuda(dev, local_rank, ngpus);
        if (st != DT_OK) {
            free(dev);
            return st;
        }
        *out = dev;
        return DT_OK;
    }
#endif
    open_cpu(dev, threads);
    *out = dev;
    return DT_OK;
}

void dt_device_close(dt_device_t *dev)
{
    if (!dev)
        return;
#ifdef DT_HAVE_CUDA_NN
    if (dev->blas)
        cublasDestroy((cublasHandle_t)dev->blas);
    if (dev->stream)
        cudaStreamDestroy((cudaStream_t)dev->stream);
#endif
    free(dev);
}

#ifdef DT_HAVE_CUDA_NN
static dt_status_t cuda_check(cudaError_t ce, const dt_device_t *dev,
                              const char *what, size_t bytes)
{
    if (ce == cudaSuccess)
        return DT_OK;
    dt_error("%s (%zu bytes) failed on %s: %s", what, bytes, dev->name,
             cudaGetErrorString(ce));
    return ce == cudaErrorMemoryAllocation ? DT_ERR_NOMEM : DT_ERR_IO;
}
#endif

dt_status_t dt_device_sync(dt_device_t *dev)
{
#ifdef DT_HAVE_CUDA_NN
    if (dev && dev->kind == DT_DEVICE_CUDA)
        return cuda_check(cudaStreamSynchronize((cudaStream_t)dev->stream),
                          dev, "waiting for the GPU stream", 0);
#endif
    (void)dev;
    return DT_OK;
}

dt_status_t dt_device_alloc(dt_device_t *dev, size_t bytes, void **out)
{
    *out = NULL;
    if (bytes == 0)
        bytes = 1;
#ifdef DT_HAVE_CUDA_NN
    if (dev && dev->kind == DT_DEVICE_CUDA) {
        DT_CHECK(cuda_check(cudaMalloc(out, bytes), dev, "cudaMalloc", bytes));
        return cuda_check(cudaMemsetAsync(*out, 0, bytes,
                                          (cudaStream_t)dev->stream),
                          dev, "cudaMemset", bytes);
    }
#endif
    (void)dev;
    *out = calloc(1, bytes);
    if (!*out) {
        dt_error("out of memory allocating %zu bytes", bytes);
        return DT_ERR_NOMEM;
    }
    return DT_OK;
}

void dt_device_free(dt_device_t *dev, void *ptr)
{
#ifdef DT_HAVE_CUDA_NN
    if (dev && dev->kind == DT_DEVICE_CUDA) {
        if (ptr)
            cudaFree(ptr);
        return;
    }
#endif
    (void)dev;
    free(ptr);
}

dt_status_t dt_device_host_alloc(dt_device_t *dev, size_t bytes, void **out)
{
    *out = NULL;
    if (bytes == 0)
        bytes = 1;
#ifdef DT_HAVE_CUDA_NN
    if (dev && dev->kind == DT_DEVICE_CUDA) {
        DT_CHECK(cuda_check(cudaMallocHost(out, bytes), dev,
                            "cudaMallocHost (pinned staging buffer)", bytes));
        memset(*out, 0, bytes);
        return DT_OK;
    }
#endif
    (void)dev;
    *out = calloc(1, bytes);
    return *out ? DT_OK : DT_ERR_NOMEM;
}

void dt_device_host_free(dt_device_t *dev, void *ptr)
{
#ifdef DT_HAVE_CUDA_NN
    if (dev && dev->kind == DT_DEVICE_CUDA) {
        if (ptr)
            cudaFreeHost(ptr);
        return;
    }
#endif
    (void)dev;
    free(ptr);
}

dt_status_t dt_device_copy(dt_device_t *dev, void *dst, dt_mem_t dst_mem,
                           const void *src, dt_mem_t src_mem, size_t bytes)
{
    if (bytes == 0 || dst == src)
        return DT_OK;
    if (dst_mem == DT_MEM_HOST && src_mem == DT_MEM_HOST) {
        memmove(dst, src, bytes);
        return DT_OK;
    }
#ifdef DT_HAVE_CUDA_NN
    if (dev && dev->kind == DT_DEVICE_CUDA) {
        cudaStream_t s = (cudaStream_t)dev->stream;
        DT_CHECK(cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                            s),
                            dev, "cudaMemcpy", bytes));
        return dt_device_sync(dev);
    }
#endif
    dt_error("copy of %zu bytes involves CUDA memory but the device is %s",
             bytes, dev ? dev->name : "none");
    return DT_ERR_INVALID;
}
