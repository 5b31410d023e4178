/* graph.c (CUDA backend) — CUDA graphs for the steady-state step
 * ([train] cuda_graphs; core/nn/model_graph.c): the step's kernels are
 * captured once from dev->stream and replayed with one launch, so the
 * host neither launches nor waits for them one by one.
 *
 * Captured in cudaStreamCaptureModeThreadLocal: the loader and gradient
 * threads may go on calling CUDA while the trainer's thread captures;
 * only this thread's unsafe calls (a cudaMalloc or a synchronization in
 * the body: a buffer that had to grow) break the capture, which is then
 * ended, thrown away and reported: the caller runs the step eagerly. */
#include "config.h"

#include <stdio.h>

#include <cuda_runtime_api.h>

#include <dt/log.h>
#include "cuda/kernels.h"
#ifdef DT_HAVE_CUDNN
#include "cuda/cudnn.h"
#endif

dt_status_t dt_cuda_graph_capture(dt_device_t *dev,
                                  dt_status_t (*body)(void *arg), void *arg,
                                  void **exec, char *why, size_t why_len)
{
    *exec = NULL;
    if (why && why_len)
        why[0] = '\0';
    cudaStream_t s = (cudaStream_t)dev->stream;
    cudaError_t ce = cudaSetDevice(dev->ordinal);
    if (ce == cudaSuccess)
        ce = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (ce != cudaSuccess) {
        snprintf(why, why_len, "cudaStreamBeginCapture: %s",
                 cudaGetErrorString(ce));
        cudaGetLastError();
        return DT_ERR_UNSUPPORTED;
    }
    dt_status_t st = body(arg);
    cudaGraph_t graph = NULL;
    /* Always ended: a stream left capturing refuses all later work. */
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (st != DT_OK || end != cudaSuccess || !graph) {
        cudaError_t last = cudaGetLastError(); /* not sticky: cleared */
        if (st == DT_OK)
            snprintf(why, why_len, "cudaStreamEndCapture: %s",
                     cudaGetErrorString(end != cudaSuccess ? end : last));
        else
            snprintf(why, why_len, "a call of the step could not be "
                     "captured (%s)", cudaGetErrorString(
                                          end != cudaSuccess ? end : last));
        if (graph)
            cudaGraphDestroy(graph);
        return DT_ERR_UNSUPPORTED;
    }
    cudaGraphExec_t ge = NULL;
    ce = cudaGraphInstantiateWithFlags(&ge, graph, 0);
    cudaGraphDestroy(graph); /* the executable graph keeps what it needs */
    if (ce != cudaSuccess) {
        snprintf(why, why_len, "cudaGraphInstantiate: %s",
                 cudaGetErrorString(ce));
        cudaGetLastError();
        return DT_ERR_UNSUPPORTED;
    }
    /* Uploaded now, so that the first launch costs what the others do. */
    ce = cudaGraphUpload(ge, s);
    if (ce != cudaSuccess) {
        snprintf(why, why_len, "cudaGraphUpload: %s", cudaGetErrorString(ce));
        cudaGraphExecDestroy(ge);
        cudaGetLastError();
        return DT_ERR_UNSUPPORTED;
    }
    *exec = ge;
    return DT_OK;
}

dt_status_t dt_cuda_graph_launch(dt_device_t *dev, void *exec)
{
    cudaError_t ce = cudaSetDevice(dev->ordinal);
    if (ce == cudaSuccess)
        ce = cudaGraphLaunch((cudaGraphExec_t)exec,
                             (cudaStream_t)dev->stream);
    if (ce == cudaSuccess)
        return DT_OK;
    dt_error("cudaGraphLaunch of the captured step failed on %s: %s",
             dev->name, cudaGetErrorString(ce));
    return DT_ERR_IO;
}

void dt_cuda_graph_destroy(dt_device_t *dev, void *exec)
{
    if (!exec)
        return;
    cudaSetDevice(dev->ordinal);
    cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

unsigned long long dt_cuda_buffers_generation(dt_device_t *dev)
{
#ifdef DT_HAVE_CUDNN
    return dev->dnn ? ((const dt_cudnn_t *)dev->dnn)->generation : 0;
#else
    (void)dev;
    return 0;
#endif
}
