/* conv2d_nhwc.h — conv2d by im2col + GEMM on an NHWC model's
 * activations (layer.h; conv2d_nhwc.c). The fused relu (l->fused == 1)
 * as in conv2d_cpu.h; a fused pool never (model_layout.c). */
#ifndef DT_NN_CONV2D_NHWC_H
#define DT_NN_CONV2D_NHWC_H

#include "layer.h"

/* Scratch floats: one sample's columns, its masked dy, and room for the
 * reordered weights and their gradient. */
size_t dt_conv2d_nhwc_scratch(const dt_layer_t *l);
dt_status_t dt_conv2d_nhwc_forward(dt_layer_t *l, const float *x, float *y,
                                   int batch);
dt_status_t dt_conv2d_nhwc_backward(dt_layer_t *l, const float *x,
                                    const float *y, const float *dy,
                                    float *dx, int batch);

#endif /* DT_NN_CONV2D_NHWC_H */
