/* conv2d_winograd.h — 3x3, stride 1 conv2d on the cpu by Winograd's
 * minimal filtering F(2x2, 3x3) or F(4x4, 3x3) (l->winograd): the same
 * results as im2col + GEMM up to float rounding with 2.25x (4x) fewer
 * multiplies in the GEMMs (16 (36) products of (out x in) by (in x tiles)
 * per group of samples instead of one (out x 9 in) by (9 in x pixels)). Used by conv2d.c for the layers
 * dt_conv2d_winograd_applies() accepts when the model's conv algorithm
 * (dt_model_set_conv_algo) allows it; fuses relu and 2x2 max pooling like
 * the im2col path (l->fused, layer.h). */
#ifndef DT_NN_CONV2D_WINOGRAD_H
#define DT_NN_CONV2D_WINOGRAD_H

#include "layer.h"

/* Whether l can run by Winograd: a 3x3 kernel with stride 1. */
int dt_conv2d_winograd_applies(const dt_layer_t *l);
/* Whether F(4x4, 3x3) is the faster of the two tile sizes for l (by
 * its shape alone; measured in docs/PERFORMANCE.md#conv_algo): what
 * DT_CONV_AUTO runs. */
int dt_conv2d_winograd4_pays(const dt_layer_t *l);
/* Scratch floats for batches of up to `batch` samples. */
size_t dt_conv2d_winograd_scratch(const dt_layer_t *l, int batch);
dt_status_t dt_conv2d_winograd_forward(dt_layer_t *l, const float *x,
                                       float *y, int batch);
/* As dt_conv2d_cpu_backward: dw, db and dx (NULL: not wanted)
 * overwritten; y, dy those of the last layer the conv applies. */
dt_status_t dt_conv2d_winograd_backward(dt_layer_t *l, const float *x,
                                        const float *y, const float *dy,
                                        float *dx, int batch);

#endif /* DT_NN_CONV2D_WINOGRAD_H */
