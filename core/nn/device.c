/* device.c — open a cpu or cuda device, allocate and copy memory on it.
 * CUDA work goes through the lazily loaded backend (cuda/backend.h):
 * libdt itself links no CUDA library. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/nn.h>
#include "cuda/backend.h"
#include "nn/blas_start.h"
#include "nn/device_step.h"

static dt_status_t open_cpu(dt_device_t *dev, int threads)
{
    dev->kind = DT_DEVICE_CPU;
    dev->mem = DT_MEM_HOST;
    dev->ordinal = -1;
    dev->threads = threads;
#ifdef HAVE_OPENBLAS_CBLAS
    /* The first device loads OpenBLAS with these threads, not one per
     * CPU, and fewer where an address-space limit has no room for their
     * buffers (nn/blas_start.h). This sets OPENBLAS_NUM_THREADS for a
     * moment: dt-train gets here before threads of its own that touch the
     * environment exist (its input loaders and the rendezvous server do
     * not), and dt/nn.h asks the same of other programs. */
    int started = 0;
    dt_status_t st = dt_blas_start(threads, &started);
    if (st != DT_OK)
        return st;
    dev->threads = started; /* fewer where an address-space limit says */
    snprintf(dev->name, sizeof dev->name, "cpu (OpenBLAS, %d thread%s)",
             started, started == 1 ? "" : "s");
#else
    snprintf(dev->name, sizeof dev->name, "cpu (no BLAS: plain loops)");
#endif
    return DT_OK;
}

/* The backend of a CUDA device, NULL for cpu. */
static const dt_cuda_backend_t *gpu(const dt_device_t *dev)
{
    return dev && dev->kind == DT_DEVICE_CUDA ? dt_cuda_backend_loaded()
                                              : NULL;
}

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
    int ngpus = 0;
    char why[1024] = "";
    if (strcmp(want, "cpu") != 0)
        ngpus = dt_cuda_usable(why, sizeof why);
    if (ngpus == 0 && strcmp(want, "cuda") == 0) {
        dt_error("[train] device = cuda, but no GPU can be used here: %s; "
                 "use device = auto or cpu", why);
        return DT_ERR_UNSUPPORTED;
    }
    /* Once per host (its local rank 0; the others at debug level): the
     * same line from each of 128 workers of a host buried the rest. */
    if (ngpus == 0 && strcmp(want, "auto") == 0 && local_rank <= 0)
        dt_info("device = auto: using the CPU (%s)", why);
    else if (ngpus == 0 && strcmp(want, "auto") == 0)
        dt_debug("device = auto: using the CPU (%s)", why);
    dt_device_t *dev = calloc(1, sizeof *dev);
    if (!dev)
        return DT_ERR_NOMEM;
    dev->threads = threads;
    if (ngpus > 0) {
        /* dt_cuda_usable loaded the backend. */
        dt_status_t st = dt_cuda_backend_loaded()->open(dev, local_rank, ngpus);
        if (st != DT_OK) {
            free(dev);
            return st;
        }
        *out = dev;
        return DT_OK;
    }
    dt_status_t st = open_cpu(dev, threads);
    if (st != DT_OK) {
        free(dev);
        return st;
    }
    *out = dev;
    return DT_OK;
}

void dt_device_close(dt_device_t *dev)
{
    if (!dev)
        return;
    if (gpu(dev))
        gpu(dev)->close(dev);
    free(dev);
}

dt_status_t dt_device_sync(dt_device_t *dev)
{
    return gpu(dev) ? gpu(dev)->sync(dev) : DT_OK;
}

dt_status_t dt_device_alloc(dt_device_t *dev, size_t bytes, void **out)
{
    *out = NULL;
    if (bytes == 0)
        bytes = 1;
    if (gpu(dev))
        return gpu(dev)->alloc(dev, bytes, out);
    *out = calloc(1, bytes);
    if (!*out) {
        dt_error("out of memory allocating %zu bytes", bytes);
        return DT_ERR_NOMEM;
    }
    return DT_OK;
}

void dt_device_free(dt_device_t *dev, void *ptr)
{
    if (gpu(dev)) {
        if (ptr)
            gpu(dev)->free(dev, ptr);
        return;
    }
    free(ptr);
}

dt_status_t dt_device_host_alloc(dt_device_t *dev, size_t bytes, void **out)
{
    *out = NULL;
    if (bytes == 0)
        bytes = 1;
    if (gpu(dev))
        return gpu(dev)->host_alloc(dev, bytes, out);
    *out = calloc(1, bytes);
    return *out ? DT_OK : DT_ERR_NOMEM;
}

void dt_device_host_free(dt_device_t *dev, void *ptr)
{
    if (gpu(dev)) {
        if (ptr)
            gpu(dev)->host_free(dev, ptr);
        return;
    }
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
    if (gpu(dev))
        return gpu(dev)->copy(dev, dst, src, bytes);
    dt_error("copy of %zu bytes involves CUDA memory but the device is %s",
             bytes, dev ? dev->name : "none");
    return DT_ERR_INVALID;
}

/* ---- Streams, events and queued copies (nn/device_step.h). ------------ */

dt_status_t dt_device_make_current(dt_device_t *dev)
{
    return gpu(dev) ? gpu(dev)->set_current(dev) : DT_OK;
}

dt_status_t dt_device_stream_new(dt_device_t *dev, void **out)
{
    *out = NULL;
    return gpu(dev) ? gpu(dev)->stream_create(dev, out) : DT_OK;
}

void dt_device_stream_free(dt_device_t *dev, void *stream)
{
    if (gpu(dev) && stream)
        gpu(dev)->stream_destroy(dev, stream);
}

dt_status_t dt_device_event_new(dt_device_t *dev, void **out)
{
    *out = NULL;
    return gpu(dev) ? gpu(dev)->event_create(dev, out) : DT_OK;
}

void dt_device_event_free(dt_device_t *dev, void *event)
{
    if (gpu(dev) && event)
        gpu(dev)->event_destroy(dev, event);
}

dt_status_t dt_device_event_record(dt_device_t *dev, void *event,
                                   void *stream)
{
    return gpu(dev) ? gpu(dev)->event_record(dev, event, stream) : DT_OK;
}

dt_status_t dt_device_stream_wait(dt_device_t *dev, void *stream,
                                  void *event)
{
    return gpu(dev) ? gpu(dev)->stream_wait_event(dev, stream, event)
                    : DT_OK;
}

dt_status_t dt_device_event_sync(dt_device_t *dev, void *event)
{
    return gpu(dev) ? gpu(dev)->event_sync(dev, event) : DT_OK;
}

dt_status_t dt_device_copy_async(dt_device_t *dev, void *dst,
                                 const void *src, size_t bytes, void *stream)
{
    if (bytes == 0 || dst == src)
        return DT_OK;
    if (gpu(dev))
        return gpu(dev)->copy_async(dev, dst, src, bytes, stream);
    memmove(dst, src, bytes);
    return DT_OK;
}

dt_status_t dt_device_scale(dt_device_t *dev, float *x, float f, size_t n,
                            void *stream)
{
    if (gpu(dev))
        return gpu(dev)->scale(dev, x, f, n, stream);
    for (size_t i = 0; i < n; i++)
        x[i] *= f;
    return DT_OK;
}
