/* cudnn_pool.c (CUDA backend) — pooling through cuDNN (cudnnPoolingForward,
 * cudnnPoolingBackward), without padding: average pooling (avgpool, and
 * gap as the window of the whole plane) and max pooling
 * (CUDNN_POOLING_MAX_DETERMINISTIC). dt's maxpool layer keeps its own
 * kernels (pool.cu), whose argmax picks the first maximum of a window as
 * the cpu layer does. */
#include "config.h"

#include <dt/log.h>
#include "cuda/cudnn.h"

static dt_status_t describe(dt_device_t *dev, dt_cudnn_t *s,
                            const dt_cuda_pool_t *p)
{
    DT_CHECK(dt_cudnn_check(
        dev,
        cudnnSetPooling2dDescriptor(
            s->pool,
            p->avg ? CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
                   : CUDNN_POOLING_MAX_DETERMINISTIC,
            CUDNN_NOT_PROPAGATE_NAN, p->kh, p->kw, 0, 0, p->sh, p->sw),
        "cudnnSetPooling2dDescriptor"));
    DT_CHECK(dt_cudnn_tensor(dev, s->x, p->n, p->c, p->h, p->w));
    DT_CHECK(dt_cudnn_tensor(dev, s->y, p->n, p->c, p->oh, p->ow));
    int n, c, h, w;
    DT_CHECK(dt_cudnn_check(
        dev, cudnnGetPooling2dForwardOutputDim(s->pool, s->x, &n, &c, &h, &w),
        "cudnnGetPooling2dForwardOutputDim"));
    if (n != p->n || c != p->c || h != p->oh || w != p->ow) {
        dt_error("cuDNN sees a %dx%dx%dx%d output for the pooling with a "
                 "%dx%dx%dx%d output on %s", n, c, h, w, p->n, p->c, p->oh,
                 p->ow, dev->name);
        return DT_ERR_INTERNAL;
    }
    return DT_OK;
}

dt_status_t dt_cudnn_pool_forward(dt_device_t *dev, const dt_cuda_pool_t *p,
                                  const float *x, float *y)
{
    dt_cudnn_t *s;
    const float one = 1.0f, zero = 0.0f;
    DT_CHECK(dt_cudnn_get(dev, &s));
    DT_CHECK(describe(dev, s, p));
    return dt_cudnn_check(dev,
                          cudnnPoolingForward(s->handle, s->pool, &one, s->x,
                                              x, &zero, s->y, y),
                          "cudnnPoolingForward");
}

dt_status_t dt_cudnn_pool_backward(dt_device_t *dev, const dt_cuda_pool_t *p,
                                   const float *x, const float *y,
                                   const float *dy, float *dx)
{
    dt_cudnn_t *s;
    const float one = 1.0f, zero = 0.0f;
    DT_CHECK(dt_cudnn_get(dev, &s));
    DT_CHECK(describe(dev, s, p));
    return dt_cudnn_check(dev,
                          cudnnPoolingBackward(s->handle, s->pool, &one, s->y,
                                               y, s->y, dy, s->x, x, &zero,
                                               s->x, dx),
                          "cudnnPoolingBackward");
}
