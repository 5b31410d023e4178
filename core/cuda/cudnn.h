/* cudnn.h (CUDA backend) — the per-device cuDNN state the cudnn_*.c files
 * share: one cudnnHandle_t bound to dev->stream, reusable descriptors, the
 * convolution algorithms chosen per shape and one workspace, grown when a
 * shape needs more. Kept at dev->dnn, made on the first cuDNN call on that
 * device (cudnn_handle.c), freed by dt_cuda_close. A dt_device_t is used
 * by one thread at a time (its trainer), so none of this is locked.
 * Built only with DT_HAVE_CUDNN. */
#ifndef DT_CUDA_CUDNN_H
#define DT_CUDA_CUDNN_H

#include <stddef.h>

#include <cudnn.h>

#include "cuda/kernels.h"

/* The algorithms picked for one convolution shape (cudnn_conv.c). */
typedef struct dt_cudnn_algos {
    int n, c, h, w, out_c, k, stride, pad; /* the key, with:              */
    int precision;                         /* DT_PRECISION_* (precision.c) */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    /* the math type each runs with: CUDNN_FMA_MATH unless cuDNN offered
     * only tensor-op algorithms for the shape (cudnn_conv.c) */
    cudnnMathType_t fwd_math, bwd_data_math, bwd_filter_math;
    /* bf16 asked, no bf16 algorithm: float data, ALLOW_CONVERSION math */
    int float_io;
} dt_cudnn_algos_t;

typedef struct dt_cudnn {
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t x, y, per_channel;
    cudnnFilterDescriptor_t filter;
    cudnnConvolutionDescriptor_t conv;
    cudnnPoolingDescriptor_t pool;
    void *workspace;          /* device memory for the conv algorithms   */
    size_t workspace_bytes;
    void *spare;              /* a dx nobody reads (batchnorm first)     */
    size_t spare_bytes;
    void *half;               /* precision = bf16: the bf16 copies of a
                                 conv's x, w, y and dw (cudnn_conv.c)   */
    size_t half_bytes;
    void *fio;                /* float_io shapes: float copies of a
                                 stored bf16 x and y (cudnn_conv.c)     */
    size_t fio_bytes;
    int bn16_refused;         /* cuDNN ran no bf16 batchnorm here: it
                                 runs on float copies in bnf instead    */
    void *bnf;
    size_t bnf_bytes;
    dt_cudnn_algos_t *algos;  /* the cache, one entry per shape seen     */
    int nalgos, cap;
    /* +1 whenever dt_cudnn_grow moves a buffer: a captured step
     * (graph.c) that points at the old one is stale */
    unsigned long long generation;
} dt_cudnn_t;

/* The device's state, made on first use. */
dt_status_t dt_cudnn_get(dt_device_t *dev, dt_cudnn_t **out);

/* DT_OK for CUDNN_STATUS_SUCCESS; else logs the call, cuDNN's own words
 * and the device, and returns DT_ERR_INTERNAL (DT_ERR_NOMEM when cuDNN
 * could not allocate). */
dt_status_t dt_cudnn_check(dt_device_t *dev, cudnnStatus_t st,
                           const char *call);

/* *buf holds at least bytes of device memory afterwards (*have: what it
 * holds). Growing waits for the stream first: earlier calls may still
 * use the old block. */
dt_status_t dt_cudnn_grow(dt_device_t *dev, void **buf, size_t *have,
                          size_t bytes, const char *what);

/* d = n x c x h x w floats, NCHW packed. */
dt_status_t dt_cudnn_tensor(dt_device_t *dev, cudnnTensorDescriptor_t d,
                            int n, int c, int h, int w);

#endif /* DT_CUDA_CUDNN_H */
