/* elementwise.cu — relu, dropout, products and bias kernels.
 *
 * Why these are not library calls (issue 18: libraries first):
 * - relu: cudnnActivationForward/Backward would do it, but the backward
 *   here reads only y and dy (cuDNN's also wants x) and relu must run
 *   without cuDNN too (a backend built without it keeps linear and the
 *   MLP on the GPU); one line each.
 * - dropout: the mask must be the CPU's bit for bit (a hash of seed,
 *   counter and element, nn/rng.h) so runs and resumes match across
 *   devices; cudnnDropout draws from its own generator state.
 * - mul, add_bias, bias_grad: the linear layer's bias and dropout's mask
 *   product without cuDNN; cuBLAS has no broadcast add, and a GEMV with a
 *   ones vector for the bias sums would need a ones buffer per shape for
 *   sums this short (a batch). */
#include "cuda/elem_math.h"
#include "cuda/launch.h"
#include "nn/rng.h"

static __global__ void relu_fwd(const float *x, float *y, size_t n)
{
    DT_GRID_STRIDE(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static __global__ void relu_bwd(const float *y, const float *dy, float *dx,
                                size_t n)
{
    DT_GRID_STRIDE(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

static __global__ void mul(const float *a, const float *b, float *out,
                           size_t n)
{
    DT_GRID_STRIDE(i, n) out[i] = a[i] * b[i];
}

static __global__ void dropout_fwd(const float *x, float *y, float *mask,
                                   size_t n, float p, float scale,
                                   uint64_t key)
{
    DT_GRID_STRIDE(i, n)
    {
        mask[i] = dt_dropout_uniform(key, i) < p ? 0.0f : scale;
        y[i] = x[i] * mask[i];
    }
}

static __global__ void add_bias(float *y, const float *b, int rows, int cols,
                                int per_column)
{
    size_t n = (size_t)rows * cols;
    DT_GRID_STRIDE(i, n) y[i] += per_column ? b[i % cols] : b[i / cols];
}

/* One thread per output sum (cols or rows of them): the sums are short
 * (a batch, or a few hundred) in our layers. */
static __global__ void bias_grad(const float *dy, float *db, int rows,
                                 int cols, int per_column)
{
    size_t n = per_column ? cols : rows;
    DT_GRID_STRIDE(j, n)
    {
        float s = 0.0f;
        if (per_column)
            for (int i = 0; i < rows; i++)
                s += dy[(size_t)i * cols + j];
        else
            for (int i = 0; i < cols; i++)
                s += dy[j * cols + i];
        db[j] = s;
    }
}

/* x *= f, the float product the CPU's scale loop does (grad_sync.c). */
static __global__ void scale_kernel(float *x, float f, size_t n)
{
    DT_GRID_STRIDE(i, n) x[i] *= f;
}

static __global__ void to_bf16(const float *x, unsigned short *y, size_t n)
{
    DT_GRID_STRIDE(i, n) y[i] = dt_elem_to_bf16(x[i]);
}

static __global__ void from_bf16(const unsigned short *x, float *y, size_t n)
{
    DT_GRID_STRIDE(i, n) y[i] = dt_elem_from_bf16(x[i]);
}

/* relu on stored bf16 activations ([train] activations = bf16): in place
 * or not, the mask from the bf16 output; the arithmetic in elem_math.h
 * (tested exhaustively on the CPU). */
static __global__ void relu16_fwd(const unsigned short *x, unsigned short *y,
                                  size_t n)
{
    DT_GRID_STRIDE(i, n) y[i] = dt_elem_relu_bf16(x[i]);
}

static __global__ void relu16_bwd(const unsigned short *y, const float *dy,
                                  float *dx, size_t n)
{
    DT_GRID_STRIDE(i, n) dx[i] = dt_elem_relu_grad_bf16(y[i], dy[i]);
}

static __global__ void add16(const unsigned short *a,
                             const unsigned short *b, unsigned short *out,
                             size_t n)
{
    DT_GRID_STRIDE(i, n) out[i] = dt_elem_add_bf16(a[i], b[i]);
}

extern "C" {

dt_status_t dt_cuda_add16(dt_device_t *dev, const void *a, const void *b,
                          void *out, size_t n)
{
    if (n == 0)
        return DT_OK;
    add16<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, dt_cuda_stream(dev)>>>(
        (const unsigned short *)a, (const unsigned short *)b,
        (unsigned short *)out, n);
    return dt_cuda_launched(dev, "add16");
}

dt_status_t dt_cuda_relu16_forward(dt_device_t *dev, const void *x, void *y,
                                   size_t n)
{
    if (n == 0)
        return DT_OK;
    relu16_fwd<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0,
                 dt_cuda_stream(dev)>>>((const unsigned short *)x,
                                        (unsigned short *)y, n);
    return dt_cuda_launched(dev, "relu16_forward");
}

dt_status_t dt_cuda_relu16_backward(dt_device_t *dev, const void *y,
                                    const float *dy, float *dx, size_t n)
{
    if (n == 0)
        return DT_OK;
    relu16_bwd<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0,
                 dt_cuda_stream(dev)>>>((const unsigned short *)y, dy, dx, n);
    return dt_cuda_launched(dev, "relu16_backward");
}

/* bf16 copies for cuDNN (cudnn_conv.c, precision = bf16): a pass each
 * way, as PyTorch's autocast casts; the rounding in elem_math.h. */
dt_status_t dt_cuda_to_bf16(dt_device_t *dev, const float *x, void *y,
                            size_t n)
{
    if (n == 0)
        return DT_OK;
    to_bf16<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, dt_cuda_stream(dev)>>>(
        x, (unsigned short *)y, n);
    return dt_cuda_launched(dev, "to_bf16");
}

dt_status_t dt_cuda_from_bf16(dt_device_t *dev, const void *x, float *y,
                              size_t n)
{
    if (n == 0)
        return DT_OK;
    from_bf16<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0,
                dt_cuda_stream(dev)>>>((const unsigned short *)x, y, n);
    return dt_cuda_launched(dev, "from_bf16");
}

dt_status_t dt_cuda_relu_forward(dt_device_t *dev, const float *x, float *y,
                                 size_t n)
{
    relu_fwd<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, dt_cuda_stream(dev)>>>(
        x, y, n);
    return dt_cuda_launched(dev, "relu_forward");
}

dt_status_t dt_cuda_relu_backward(dt_device_t *dev, const float *y,
                                  const float *dy, float *dx, size_t n)
{
    relu_bwd<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, dt_cuda_stream(dev)>>>(
        y, dy, dx, n);
    return dt_cuda_launched(dev, "relu_backward");
}

dt_status_t dt_cuda_mul(dt_device_t *dev, const float *a, const float *b,
                        float *out, size_t n)
{
    mul<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, dt_cuda_stream(dev)>>>(a, b,
                                                                       out, n);
    return dt_cuda_launched(dev, "mul");
}

dt_status_t dt_cuda_dropout_forward(dt_device_t *dev, const float *x,
                                    float *y, float *mask, size_t n, float p,
                                    float scale, uint64_t key)
{
    dropout_fwd<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0,
                  dt_cuda_stream(dev)>>>(x, y, mask, n, p, scale, key);
    return dt_cuda_launched(dev, "dropout_forward");
}

dt_status_t dt_cuda_add_bias(dt_device_t *dev, float *y, const float *b,
                             int rows, int cols, int per_column)
{
    size_t n = (size_t)rows * cols;
    add_bias<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, dt_cuda_stream(dev)>>>(
        y, b, rows, cols, per_column);
    return dt_cuda_launched(dev, "add_bias");
}

dt_status_t dt_cuda_bias_grad(dt_device_t *dev, const float *dy, float *db,
                              int rows, int cols, int per_column)
{
    size_t n = per_column ? cols : rows;
    bias_grad<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0,
                dt_cuda_stream(dev)>>>(dy, db, rows, cols, per_column);
    return dt_cuda_launched(dev, "bias_grad");
}

/* Device-resident step: grad_sync's unequal-share scaling in place. */
dt_status_t dt_cuda_scale(dt_device_t *dev, float *x, float f, size_t n,
                          void *stream)
{
    if (n == 0)
        return DT_OK;
    cudaStream_t s = stream ? (cudaStream_t)stream : dt_cuda_stream(dev);
    cudaError_t ce = cudaSetDevice(dev->ordinal);
    if (ce != cudaSuccess) {
        dt_error("cannot make %s current: %s", dev->name,
                 cudaGetErrorString(ce));
        return DT_ERR_IO;
    }
    scale_kernel<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0, s>>>(x, f, n);
    return dt_cuda_launched(dev, "scale");
}

} /* extern "C" */
