/* conv2d_cpu.h — the cpu half of conv2d (conv2d.c keeps the shapes and
 * the batched CUDA path). */
#ifndef DT_NN_CONV2D_CPU_H
#define DT_NN_CONV2D_CPU_H

#include "layer.h"

/* Scratch floats: one sample's columns (c*k*k x oh*ow) and its output
 * (out x oh*ow: y before pooling, or dy before the relu). */
size_t dt_conv2d_cpu_scratch(const dt_layer_t *l);
dt_status_t dt_conv2d_cpu_forward(dt_layer_t *l, const float *x, float *y,
                                  int batch);
/* dw, db overwritten; dx (NULL: not wanted) overwritten. y, dy: those of
 * the last layer the conv applies (l->fused). */
dt_status_t dt_conv2d_cpu_backward(dt_layer_t *l, const float *x,
                                   const float *y, const float *dy,
                                   float *dx, int batch);

#endif /* DT_NN_CONV2D_CPU_H */
