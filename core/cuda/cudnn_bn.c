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

static dt_status_t describe(dt_device_t *dev, dt_cudnn_t *s,
                            const dt_cuda_bn_t *bn,
                            cudnnBatchNormMode_t *mode)
{
    if (bn->eps < CUDNN_BN_MIN_EPSILON) {
        dt_error("batchnorm eps %g is below cuDNN's minimum %g on %s",
                 bn->eps, (double)CUDNN_BN_MIN_EPSILON, dev->name);
        return DT_ERR_INVALID;
    }
    *mode = bn->per_activation ? CUDNN_BATCHNORM_PER_ACTIVATION
                               : CUDNN_BATCHNORM_SPATIAL;
    DT_CHECK(dt_cudnn_tensor(dev, s->x, bn->n, bn->c, bn->h, bn->w));
    return dt_cudnn_check(dev,
                          cudnnDeriveBNTensorDescriptor(s->per_channel, s->x,
                                                        *mode),
                          "cudnnDeriveBNTensorDescriptor");
}

dt_status_t dt_cudnn_bn_forward(dt_device_t *dev, const dt_cuda_bn_t *bn,
                                int train, const float *x, float *y)
{
    dt_cudnn_t *s;
    cudnnBatchNormMode_t mode;
    const float one = 1.0f, zero = 0.0f;
    DT_CHECK(dt_cudnn_get(dev, &s));
    DT_CHECK(describe(dev, s, bn, &mode));
    if (!train)
        return dt_cudnn_check(
            dev,
            cudnnBatchNormalizationForwardInference(
                s->handle, mode, &one, &zero, s->x, x, s->x, y,
                s->per_channel, bn->gamma, bn->beta, bn->running_mean,
                bn->running_var, bn->eps),
            "cudnnBatchNormalizationForwardInference");
    return dt_cudnn_check(
        dev,
        cudnnBatchNormalizationForwardTraining(
            s->handle, mode, &one, &zero, s->x, x, s->x, y, s->per_channel,
            bn->gamma, bn->beta, bn->momentum, bn->running_mean,
            bn->running_var, bn->eps, bn->save_mean, bn->save_invstd),
        "cudnnBatchNormalizationForwardTraining");
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
