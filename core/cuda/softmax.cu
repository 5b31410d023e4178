/* softmax.cu — softmax cross-entropy: one thread per row (classes are
 * few), then the gradient elementwise; with label smoothing eps the target
 * is (1 - eps) onehot + eps/k. The arithmetic per element is in
 * elem_math.h (tested on the CPU by tests/test_elem_math.c).
 *
 * Hand-written, not cuDNN: cudnnSoftmaxForward gives the probabilities but
 * neither the per-row loss and argmax (which would take further kernels)
 * nor a cross-entropy gradient with a smoothed target; one small kernel
 * each does it all, and the rows are few (the batch) and short (the
 * classes). */
#include "cuda/elem_math.h"
#include "cuda/launch.h"

static __global__ void softmax_rows(const float *z, const int *labels,
                                    float *p, float *rows, int batch, int k,
                                    float eps)
{
    DT_GRID_STRIDE(i, (size_t)batch)
    {
        const float *zi = z + i * k;
        float *pi = p + i * k;
        int arg = 0;
        for (int j = 1; j < k; j++)
            if (zi[j] > zi[arg])
                arg = j;
        float max = zi[arg], sum = 0.0f;
        for (int j = 0; j < k; j++) {
            pi[j] = expf(zi[j] - max);
            sum += pi[j];
        }
        for (int j = 0; j < k; j++)
            pi[j] /= sum;
        if (labels) {
            float zsum = 0.0f;
            if (eps > 0.0f)
                for (int j = 0; j < k; j++)
                    zsum += zi[j];
            rows[2 * i] = dt_elem_xent_loss(logf(sum) + max, zi[labels[i]],
                                            zsum, k, eps);
            rows[2 * i + 1] = arg == labels[i] ? 1.0f : 0.0f;
        }
    }
}

static __global__ void softmax_bwd(const float *p, const int *labels,
                                   float *dz, int batch, int k, float eps)
{
    DT_GRID_STRIDE(i, (size_t)batch * k)
    {
        int j = (int)(i % k);
        dz[i] = dt_elem_xent_grad(p[i], j, labels[i / k], k, eps, batch);
    }
}

extern "C" {

dt_status_t dt_cuda_softmax_xent(dt_device_t *dev, const float *logits,
                                 const int *labels, float *probs, float *rows,
                                 int batch, int k, float smoothing)
{
    softmax_rows<<<dt_cuda_blocks((size_t)batch), DT_CUDA_THREADS, 0,
                   dt_cuda_stream(dev)>>>(logits, labels, probs, rows, batch,
                                          k, smoothing);
    return dt_cuda_launched(dev, "softmax_xent");
}

dt_status_t dt_cuda_softmax_xent_backward(dt_device_t *dev, const float *probs,
                                          const int *labels, float *dlogits,
                                          int batch, int k, float smoothing)
{
    size_t n = (size_t)batch * k;
    softmax_bwd<<<dt_cuda_blocks(n), DT_CUDA_THREADS, 0,
                  dt_cuda_stream(dev)>>>(probs, labels, dlogits, batch, k,
                                         smoothing);
    return dt_cuda_launched(dev, "softmax_xent_backward");
}

} /* extern "C" */
