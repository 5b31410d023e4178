/* device_math.h — the finiteness check loss scaling needs, on the
 * model's device (a cpu loop, cuBLAS on CUDA). Internal to libdt. */
#ifndef DT_NN_DEVICE_MATH_H
#define DT_NN_DEVICE_MATH_H

#include <stddef.h>
#include <dt/nn.h>

/* *out = sum of |x_i| in double: inf or nan when any element is. */
dt_status_t dt_device_abs_sum(dt_device_t *dev, const float *x, size_t n,
                              double *out);

#endif /* DT_NN_DEVICE_MATH_H */
