/* im2col.h — unfold image patches into columns for conv2d (cpu).
 *
 * For a batch x (n, c, h, w) and a k x k kernel with stride s and zero
 * padding pad, the column matrix has c*k*k rows and n*oh*ow columns:
 * col[(ci*k + ki)*k + kj][b*oh*ow + oy*ow + ox] =
 *     x[b][ci][oy*s - pad + ki][ox*s - pad + kj]   (0 outside the image).
 * One GEMM with the (out, c*k*k) weights then convolves the whole batch. */
#ifndef DT_NN_IM2COL_H
#define DT_NN_IM2COL_H

typedef struct dt_conv_geom {
    int n, c, h, w;   /* input batch                      */
    int k, s, pad;    /* square kernel, stride, padding   */
    int oh, ow;       /* output height and width          */
    /* CUDA with [train] activations = bf16 and precision = bf16: x (and
     * y) are the model's stored bf16 activations, read (written) by
     * cuDNN as they are, without a float32 copy (model_act16.c) */
    int x16, y16;
} dt_conv_geom_t;

void dt_im2col_cpu(const dt_conv_geom_t *g, const float *x, float *col);
/* The adjoint: dx = sum of every column entry back into its pixel
 * (dx is overwritten). */
void dt_col2im_cpu(const dt_conv_geom_t *g, const float *col, float *dx);

#endif /* DT_NN_IM2COL_H */
