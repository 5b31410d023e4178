/* softmax_xent.c — softmax cross-entropy, the end of every model.
 * loss = mean_i (log sum_j exp z_ij - z_i,label_i); dz = (p - onehot)/n.
 * With label smoothing eps the target is q = (1 - eps) onehot + eps/k:
 * loss = mean_i (lse_i - (1 - eps) z_i,label_i - eps/k sum_j z_ij) and
 * dz = (p - q)/n (the CUDA kernels' arithmetic: core/cuda/elem_math.h).
 * Per-row results (loss, 1 if argmax == label) go through `rows` (2*batch
 * floats on the device) and are summed on the host in double. */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include <dt/log.h>
#include "layer.h"

static void softmax_rows_cpu(const float *z, const int *labels, float *p,
                             float *rows, int batch, int k, float eps)
{
    for (int i = 0; i < batch; i++) {
        const float *zi = z + (size_t)i * k;
        float *pi = p + (size_t)i * k;
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
            float target = zi[labels[i]];
            if (eps > 0.0f) {
                float zsum = 0.0f;
                for (int j = 0; j < k; j++)
                    zsum += zi[j];
                target = (1.0f - eps) * target + eps / (float)k * zsum;
            }
            rows[2 * i] = logf(sum) + max - target;
            rows[2 * i + 1] = arg == labels[i] ? 1.0f : 0.0f;
        }
    }
}

dt_status_t dt_softmax_xent_rows(dt_device_t *dev, const float *logits,
                                 const int *labels, float *probs, float *rows,
                                 int batch, int k, float smoothing)
{
    DT_CUDA_DISPATCH(dev, softmax_xent(dev, logits, labels, probs, rows,
                                       batch, k, smoothing));
    softmax_rows_cpu(logits, labels, probs, rows, batch, k, smoothing);
    return DT_OK;
}

void dt_softmax_xent_sum(const float *rows, int batch, float *loss,
                         int *correct)
{
    double sum = 0.0;
    int right = 0;
    for (int i = 0; i < batch; i++) {
        sum += rows[2 * i];
        right += rows[2 * i + 1] != 0.0f;
    }
    if (loss)
        *loss = batch > 0 ? (float)(sum / batch) : 0.0f;
    if (correct)
        *correct = right;
}

dt_status_t dt_softmax_xent_forward(dt_device_t *dev, const float *logits,
                                    const int *labels, float *probs,
                                    float *rows, float *host_rows, int batch,
                                    int k, float smoothing, float *loss,
                                    int *correct)
{
    DT_CHECK(dt_softmax_xent_rows(dev, logits, labels, probs, rows, batch, k,
                                  smoothing));
    if (!labels)
        return DT_OK;
    float *host = rows;
    if (dev->kind == DT_DEVICE_CUDA) {
        host = host_rows ? host_rows
                         : malloc((size_t)batch * 2 * sizeof *host);
        if (!host)
            return DT_ERR_NOMEM;
        dt_status_t st = dt_device_copy(dev, host, DT_MEM_HOST, rows,
                                        DT_MEM_CUDA,
                                        (size_t)batch * 2 * sizeof *host);
        if (st != DT_OK) {
            if (host != host_rows)
                free(host);
            return st;
        }
    }
    dt_softmax_xent_sum(host, batch, loss, correct);
    if (host != rows && host != host_rows)
        free(host);
    return DT_OK;
}

dt_status_t dt_softmax_xent_backward(dt_device_t *dev, const float *probs,
                                     const int *labels, float *dlogits,
                                     int batch, int k, float smoothing)
{
    DT_CUDA_DISPATCH(dev, softmax_xent_backward(dev, probs, labels, dlogits,
                                                batch, k, smoothing));
    float inv = 1.0f / (float)batch, off = smoothing / (float)k,
          on = 1.0f - smoothing + off;
    for (int i = 0; i < batch; i++)
        for (int j = 0; j < k; j++) {
            size_t at = (size_t)i * k + j;
            dlogits[at] = (probs[at] - (j == labels[i] ? on : off)) * inv;
        }
    return DT_OK;
}
