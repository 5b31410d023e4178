/* conv.cu — im2col/col2im and the layout changes of conv2d (see
 * core/nn/im2col.h for the column layout).
 *
 * Not a library call because it is the fallback: with cuDNN (DT_HAVE_CUDNN)
 * conv2d runs through cudnnConvolution* (cudnn_conv.c) and none of these
 * kernels is launched; they keep a backend built without cuDNN able to
 * train a CNN on the GPU (im2col + cuBLAS GEMM). */
#include "cuda/launch.h"

static __global__ void im2col(dt_conv_geom_t g, const float *x, float *col)
{
    size_t plane = (size_t)g.oh * g.ow, ncols = (size_t)g.n * plane;
    size_t total = (size_t)g.c * g.k * g.k * ncols;
    DT_GRID_STRIDE(i, total)
    {
        size_t row = i / ncols, j = i % ncols;
        int kj = (int)(row % g.k), ki = (int)(row / g.k % g.k),
            ci = (int)(row / g.k / g.k);
        int b = (int)(j / plane), p = (int)(j % plane);
        int iy = p / g.ow * g.s - g.pad + ki, ix = p % g.ow * g.s - g.pad + kj;
        col[i] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w
                     ? x[(((size_t)b * g.c + ci) * g.h + iy) * g.w + ix]
                     : 0.0f;
    }
}

/* One thread per input pixel gathers every column entry that read it:
 * no atomics, deterministic. */
static __global__ void col2im(dt_conv_geom_t g, const float *col, float *dx)
{
    size_t plane = (size_t)g.oh * g.ow, ncols = (size_t)g.n * plane;
    size_t total = (size_t)g.n * g.c * g.h * g.w;
    DT_GRID_STRIDE(i, total)
    {
        int ix = (int)(i % g.w), iy = (int)(i / g.w % g.h),
            ci = (int)(i / g.w / g.h % g.c), b = (int)(i / g.w / g.h / g.c);
        float sum = 0.0f;
        for (int ki = 0; ki < g.k; ki++) {
            int ty = iy + g.pad - ki;
            if (ty < 0 || ty % g.s || ty / g.s >= g.oh)
                continue;
            for (int kj = 0; kj < g.k; kj++) {
                int tx = ix + g.pad - kj;
                if (tx < 0 || tx % g.s || tx / g.s >= g.ow)
                    continue;
                size_t row = ((size_t)ci * g.k + ki) * g.k + kj;
                sum += col[row * ncols + (size_t)b * plane +
                           (size_t)(ty / g.s) * g.ow + tx / g.s];
            }
        }
        dx[i] = sum;
    }
}

static __global__ void to_nchw(const float *Y, const float *bias, float *y,
                               int n, int c, size_t plane)
{
    size_t total = (size_t)n * c * plane;
    DT_GRID_STRIDE(i, total)
    {
        size_t p = i % plane;
        int o = (int)(i / plane % c), b = (int)(i / plane / c);
        y[i] = Y[((size_t)o * n + b) * plane + p] + (bias ? bias[o] : 0.0f);
    }
}

static __global__ void to_cnhw(const float *dy, float *Y, int n, int c,
                               size_t plane)
{
    size_t total = (size_t)n * c * plane;
    DT_GRID_STRIDE(i, total)
    {
        size_t p = i % plane;
        int o = (int)(i / plane % c), b = (int)(i / plane / c);
        Y[((size_t)o * n + b) * plane + p] = dy[i];
    }
}

/* db[r] = sum of row r (len floats): one block per row. */
static __global__ void row_sums(const float *a, float *out, size_t len)
{
    __shared__ float part[DT_CUDA_THREADS];
    const float *row = a + blockIdx.x * len;
    float s = 0.0f;
    for (size_t j = threadIdx.x; j < len; j += blockDim.x)
        s += row[j];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = part[0];
}

extern "C" {

dt_status_t dt_cuda_im2col(dt_device_t *dev, const dt_conv_geom_t *g,
                           const float *x, float *col)
{
    size_t total = (size_t)g->c * g->k * g->k * g->n * g->oh * g->ow;
    im2col<<<dt_cuda_blocks(total), DT_CUDA_THREADS, 0,
             dt_cuda_stream(dev)>>>(*g, x, col);
    return dt_cuda_launched(dev, "im2col");
}

dt_status_t dt_cuda_col2im(dt_device_t *dev, const dt_conv_geom_t *g,
                           const float *col, float *dx)
{
    size_t total = (size_t)g->n * g->c * g->h * g->w;
    col2im<<<dt_cuda_blocks(total), DT_CUDA_THREADS, 0,
             dt_cuda_stream(dev)>>>(*g, col, dx);
    return dt_cuda_launched(dev, "col2im");
}

dt_status_t dt_cuda_cnhw_to_nchw(dt_device_t *dev, const float *Y,
                                 const float *bias, float *y, int n, int c,
                                 size_t plane)
{
    size_t total = (size_t)n * c * plane;
    to_nchw<<<dt_cuda_blocks(total), DT_CUDA_THREADS, 0,
              dt_cuda_stream(dev)>>>(Y, bias, y, n, c, plane);
    return dt_cuda_launched(dev, "cnhw_to_nchw");
}

dt_status_t dt_cuda_nchw_to_cnhw(dt_device_t *dev, const float *dy, float *Y,
                                 float *db, int n, int c, size_t plane)
{
    size_t total = (size_t)n * c * plane;
    to_cnhw<<<dt_cuda_blocks(total), DT_CUDA_THREADS, 0,
              dt_cuda_stream(dev)>>>(dy, Y, n, c, plane);
    DT_CHECK(dt_cuda_launched(dev, "nchw_to_cnhw"));
    row_sums<<<c, DT_CUDA_THREADS, 0, dt_cuda_stream(dev)>>>(Y, db,
                                                             (size_t)n * plane);
    return dt_cuda_launched(dev, "conv bias gradient");
}

} /* extern "C" */
