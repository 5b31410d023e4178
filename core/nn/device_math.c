/* device_math.c — sum |x| on the cpu or through the CUDA backend's
 * cuBLAS sasum, for loss scaling (core/train/loss_scale.c); x *= f is
 * dt_device_scale (device_step.h). */
#include "config.h"

#include <math.h>

#include "cuda/backend.h"
#include "device_math.h"

static const dt_cuda_backend_t *gpu(const dt_device_t *dev)
{
    return dev && dev->kind == DT_DEVICE_CUDA ? dt_cuda_backend_loaded()
                                              : NULL;
}

dt_status_t dt_device_abs_sum(dt_device_t *dev, const float *x, size_t n,
                              double *out)
{
    if (gpu(dev))
        return gpu(dev)->asum(dev, x, n, out);
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += fabs((double)x[i]);
    *out = s;
    return DT_OK;
}
