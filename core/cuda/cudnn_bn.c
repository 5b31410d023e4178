/* cudnn_bn.c (CUDA backend) — batch normalization through cuDNN:
 * cudnnBatchNormalizationForwardTraining, ForwardInference and Backward,
 * spatial mode for an image (statistics per channel over n, h, w),
 * per-activation mode for a flat input (per feature over n). The running
 * statistics (the layer's model buffers, on the device) are updated by
 * cuDNN as running = (1 - momentum) running + momentum batch, the
 * variance unbiased, as dt's cpu layer and PyTorch keep them. The
 * training forward saves the batch mean and 1/sqrt(var + eps) for
 * backward. */
#include "config.h"

#include <dt/log.h>
#include "cuda/cudnn.h"

/* x (and y: the same shape and type) as t; the per-channel parameters'
 * descriptor derived from it (float for float and bf16 data). */
static dt_status_t describe_as(dt_device_t *dev, dt_cudnn_t *s,
                               const dt_cuda_bn_t *bn, cudnnDataType_t t,
                               cudnnBatchNormMode_t *mode)
{
    if (bn->eps < CUDNN_BN_MIN_EPSILON) {
        dt_error("batchnorm eps %g is below cuDNN's minimum %g on %s",
                 bn->eps, (double)CUDNN_BN_MIN_EPSILON, dev->name);
        return DT_ERR_INVALID;
    }
    *mode = bn->per_activation ? CUDNN_BATCHNORM_PER_ACTIVATION
                               : CUDNN_BATCHNORM_SPATIAL;
    DT_CHECK(dt_cudnn_check(dev,
                            cudnnSetTensor4dDescriptor(s->x,
                                                       CUDNN_TENSOR_NCHW, t,
                                                       bn->n, bn->c, bn->h,
                                                       bn->w),
                            "cudnnSetTensor4dDescriptor"));
    return dt_cudnn_check(dev,
                          cudnnDeriveBNTensorDescriptor(s->per_channel, s->x,
                                                        *mode),
                          "cudnnDeriveBNTensorDescriptor");
}

static dt_status_t describe(dt_device_t *dev, dt_cudnn_t *s,
                            const dt_cuda_bn_t *bn,
                            cudnnBatchNormMode_t *mode)
{
    return describe_as(dev, s, bn, CUDNN_DATA_FLOAT, mode);
}

/* The forward call on data of the descriptor's type; cuDNN's status. */
static cudnnStatus_t forward_call(dt_cudnn_t *s, const dt_cuda_bn_t *bn,
                                  cudnnBatchNormMode_t mode, int train,
                                  const void *x, void *y)
{
    const float one = 1.0f, zero = 0.0f;
    if (!train)
        return cudnnBatchNormalizationForwardInference(
            s->handle, mode, &one, &zero, s->x, x, s->x, y, s->per_channel,
            bn->gamma, bn->beta, bn->running_mean, bn->running_var, bn->eps);
    /* One value per channel (a batch of one after gap, say) has no
     * variance to learn: the running statistics stay, as on the cpu. Not
     * by a factor of 0: the unbiased variance n/(n-1) is NaN at n = 1 and
     * 0 x NaN is NaN. cuDNN takes both running pointers NULL (PyTorch
     * passes NULL for a layer without running statistics). */
    double per = bn->per_activation ? bn->n : (double)bn->n * bn->h * bn->w;
    int keep = per < 2;
    return cudnnBatchNormalizationForwardTraining(
        s->handle, mode, &one, &zero, s->x, x, s->x, y, s->per_channel,
        bn->gamma, bn->beta, keep ? 0.0 : bn->momentum,
        keep ? NULL : bn->running_mean, keep ? NULL : bn->running_var,
        bn->eps, bn->save_mean, bn->save_invstd);
}

/* bf16 in and out (bn->x16). cuDNN's batchnorm takes bf16 data with
 * float parameters from Ampere on (TensorFlow's and NNlib's bf16 batch
 * norms use it); where this cuDNN refuses it, once said, the data goes
 * through float copies (bnf: the widened x, then the float y). */
static dt_status_t forward16(dt_device_t *dev, dt_cudnn_t *s,
                             const dt_cuda_bn_t *bn, int train,
                             const void *x, void *y)
{
    cudnnBatchNormMode_t mode = bn->per_activation
                                    ? CUDNN_BATCHNORM_PER_ACTIVATION
                                    : CUDNN_BATCHNORM_SPATIAL;
    if (!s->bn16_refused) {
        /* cuDNN 9's codes are finer than its categories (3003: not
         * supported, data type): a refusal is the category; describing
         * bf16 data may already be one */
        cudnnStatus_t st = cudnnSetTensor4dDescriptor(
            s->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, bn->n, bn->c,
            bn->h, bn->w);
        if (st == CUDNN_STATUS_SUCCESS)
            st = cudnnDeriveBNTensorDescriptor(s->per_channel, s->x, mode);
        if (st == CUDNN_STATUS_SUCCESS)
            st = forward_call(s, bn, mode, train, x, y);
        if (st == CUDNN_STATUS_SUCCESS)
            return DT_OK;
        cudnnStatus_t cat = (cudnnStatus_t)CUDNN_STATUS_CATEGORY(st);
        if (cat != CUDNN_STATUS_NOT_SUPPORTED && cat != CUDNN_STATUS_BAD_PARAM)
            return dt_cudnn_check(dev, st, "cudnnBatchNormalization (bf16)");
        s->bn16_refused = 1;
        dt_warn("cuDNN %zu runs no bf16 batchnorm on %s (%s): its "
                "activations go through float32 copies",
                (size_t)cudnnGetVersion(), dev->name,
                cudnnGetErrorString(st));
    }
    size_t n = (size_t)bn->n * bn->c * bn->h * bn->w;
    DT_CHECK(dt_cudnn_grow(dev, &s->bnf, &s->bnf_bytes, 2 * n * sizeof(float),
                           "batchnorm float copies"));
    float *xf = s->bnf, *yf = xf + n;
    DT_CHECK(dt_cuda_from_bf16(dev, x, xf, n));
    DT_CHECK(describe(dev, s, bn, &mode));
    DT_CHECK(dt_cudnn_check(dev, forward_call(s, bn, mode, train, xf, yf),
                            "cudnnBatchNormalization"));
    return dt_cuda_to_bf16(dev, yf, y, n);
}

dt_status_t dt_cudnn_bn_forward(dt_device_t *dev, const dt_cuda_bn_t *bn,
                                int train, const float *x, float *y)
{
    dt_cudnn_t *s;
    cudnnBatchNormMode_t mode;
    DT_CHECK(dt_cudnn_get(dev, &s));
    if (bn->x16) {
        if (bn->eps < CUDNN_BN_MIN_EPSILON) /* said by describe */
            return describe(dev, s, bn, &mode);
        return forward16(dev, s, bn, train, x, y);
    }
    DT_CHECK(describe(dev, s, bn, &mode));
    return dt_cudnn_check(dev, forward_call(s, bn, mode, train, x, y),
                          train ? "cudnnBatchNormalizationForwardTraining"
                                : "cudnnBatchNormalizationForwardInference");
}

dt_status_t dt_cudnn_bn_backward(dt_device_t *dev, const dt_cuda_bn_t *bn,
                                 const float *x, const float *dy, float *dx,
                                 float *dgamma, float *dbeta)
{
    dt_cudnn_t *s;
    cudnnBatchNormMode_t mode;
    const float one = 1.0f, zero = 0.0f;
    DT_CHECK(dt_cudnn_get(dev, &s));
    DT_CHECK(describe(dev, s, bn, &mode));
    if (!dx) { /* cuDNN always writes dx: into a spare block */
        size_t bytes = (size_t)bn->n * bn->c * bn->h * bn->w * sizeof *dx;
        DT_CHECK(dt_cudnn_grow(dev, &s->spare, &s->spare_bytes, bytes,
                               "batchnorm spare gradient"));
        dx = s->spare;
    }
    return dt_cudnn_check(
        dev,
        cudnnBatchNormalizationBackward(
            s->handle, mode, &one, &zero, &one, &zero, s->x, x, s->x, dy,
            s->x, dx, s->per_channel, bn->gamma, dgamma, dbeta, bn->eps,
            bn->save_mean, bn->save_invstd),
        "cudnnBatchNormalizationBackward");
}
