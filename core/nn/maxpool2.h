/* maxpool2.h — the 2x2, stride 2 max pooling of one plane, shared by
 * maxpool2d.c and the fused cpu conv (conv2d_cpu.c). */
#ifndef DT_NN_MAXPOOL2_H
#define DT_NN_MAXPOOL2_H

#include "layer.h"

/* Whether the maxpool layer l is 2x2 with stride 2. */
int dt_maxpool2_fusable(const dt_layer_t *l);
/* y and argmax (offset in the plane; first one on ties) of one plane. */
void dt_maxpool2_plane(const float *xp, float *yp, int *ap, int in_w,
                       int out_h, int out_w);
/* dx of one plane: dy at the argmax, 0 elsewhere. relu_y (NULL: none): the
 * pooled values, when the pooled input was a relu's output; dy is then
 * dropped where they are not positive (the relu's backward). */
void dt_unpool2_plane(const float *dyp, const int *ap, const float *relu_y,
                      float *dxp, int in_h, int in_w, int out_h, int out_w);

#endif /* DT_NN_MAXPOOL2_H */
