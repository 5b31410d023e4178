/* batchnorm_nhwc.h — batchnorm's cpu passes over an NHWC model's
 * activations (layer.h): rows of C channels, rows = batch x pixels.
 * batchnorm.c computes the per-channel coefficients; these loops run
 * along the channels (contiguous, vectorized), in float partial sums
 * over blocks of rows, accumulated per channel in double. */
#ifndef DT_NN_BATCHNORM_NHWC_H
#define DT_NN_BATCHNORM_NHWC_H

#include <stddef.h>

/* S[c] += sum of x[., c] */
void dt_bn_nhwc_sums(const float *x, size_t rows, int C, double *S);
/* Q[c] += sum of (x[., c] - mean[c])^2 */
void dt_bn_nhwc_sqdev(const float *x, size_t rows, int C, const float *mean,
                      double *Q);
/* y = max(x s + t, floor) per channel */
void dt_bn_nhwc_apply(const float *x, float *y, size_t rows, int C,
                      const float *s, const float *t, float floor);
/* acc[c] += sum g, accx[c] += sum g x, g = dy (relu: dy where y > 0) */
void dt_bn_nhwc_grad_sums(const float *x, const float *y, const float *dy,
                          size_t rows, int C, int relu, double *acc,
                          double *accx);
/* dx = dt_elem_bn_dx(g, x, k, b, off) per channel, g as above */
void dt_bn_nhwc_dx(const float *x, const float *y, const float *dy,
                   float *dx, size_t rows, int C, int relu, const float *k,
                   const float *b, const float *off);

#endif /* DT_NN_BATCHNORM_NHWC_H */
