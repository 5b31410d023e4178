/* device_math.c — x *= alpha and sum |x| on the cpu or through the CUDA
 * backend's cuBLAS calls (loss scaling: core/train/loss_scale.c). */
#include "config.h"

#include <math.h>

#include "cuda/backend.h"
#include "device_math.h"

static const dt_cuda_backend_t *gpu(const dt_device_t *dev)
{
    return dev && dev->kind == DT_DEVICE_CUDA ? dt_cuda_backend_loaded()
                                              : NULL;
}

dt_status_t dt_device_scale(dt_device_t *dev, float *x, size_t n,
                            float alpha)
{
    if (gpu(dev))
        return gpu(dev)->scal(dev, x, n, alpha);
    for (size_t i = 0; i < n; i++)
        x[i] *= alpha;
    return DT_OK;
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
