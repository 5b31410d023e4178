/* layer.h — the layer interface inside libdt (not installed).
 *
 * A layer is a forward/backward pair over raw float buffers on the model's
 * device. Shapes are per sample (c, h, w); a flat vector of n features is
 * (n, 1, 1) with flat = 1. Buffers are batch-major: sample i starts at
 * i * c*h*w. */
#ifndef DT_NN_LAYER_H
#define DT_NN_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include <dt/log.h>
#include <dt/nn.h>

#define DT_LAYER_MAXARGS 5

typedef struct dt_layer dt_layer_t;

typedef struct dt_layer_ops {
    const char *name;
    /* Output shape and parameter count from the input shape and args. On a
     * bad shape write the reason into why and return DT_ERR_INVALID. */
    dt_status_t (*setup)(dt_layer_t *l, char *why, size_t why_len);
    /* Scratch floats needed for a batch (im2col columns, masks...). */
    size_t (*scratch_floats)(const dt_layer_t *l, int batch);
    /* y = f(x). train: keep what backward needs, apply dropout. */
    dt_status_t (*forward)(dt_layer_t *l, const float *x, float *y, int batch,
                           int train);
    /* Given dy, write dx (NULL: not wanted, first layer) and the layer's
     * parameter gradients (overwritten). x and y are the forward's. */
    dt_status_t (*backward)(dt_layer_t *l, const float *x, const float *y,
                            const float *dy, float *dx, int batch);
    /* NULL: runs on CUDA. Otherwise why this layer cannot (yet): the
     * model refuses a CUDA device for it, naming the layer. */
    const char *(*cuda_missing)(const dt_layer_t *l);
} dt_layer_ops_t;

struct dt_layer {
    const dt_layer_ops_t *ops;
    double args[DT_LAYER_MAXARGS]; /* as parsed, defaults filled in    */
    int in_c, in_h, in_w, in_flat;
    int out_c, out_h, out_w, out_flat;
    size_t nweights, nbias;        /* parameter floats                  */
    /* Non-trainable state (batchnorm running mean and variance): nbuffers
     * floats at buf, buffer_offset into the model's flat buffer. */
    size_t nbuffers, buffer_offset;
    float *buf;
    /* The graph: the layer reads acts[src] (src == index unless a
     * residual block's branch starts from an earlier activation) and
     * writes acts[index + 1]. skip >= 0 (the residual add only): the
     * second input, acts[skip], at x2 during forward. */
    int src, skip;
    const float *x2;
    /* set by the model for the forward and backward that follow
     * (model_act16.c): 1, forward's x is bf16 storage; 2, y is (forward;
     * a relu's backward too); 4, backward's x is (a conv's); 8, the
     * add's x2 is */
    int io16;
    int no_bias;                   /* conv bias=no: b, db point at the
                                      model's zeros and junk, nbias = 0 */
    size_t fan_in, fan_out;        /* for initialization                */
    size_t param_offset;           /* into the model's flat buffers     */
    float *w, *b, *dw, *db;        /* into params / grads (device)      */
    float *scratch;                /* scratch_floats(cap) floats        */
    dt_device_t *dev;
    int index;                     /* position in the model             */
    /* On the cpu a conv followed by relu (and maxpool 2x2, stride 2)
     * applies them itself to each sample while it is in cache, and a
     * batchnorm followed by relu applies the relu in its passes; model.c
     * then skips those layers. fused: how many layers after this one it
     * applies (0, 1 relu, 2 relu + maxpool); absorbed: applied by an
     * earlier layer. Set by dt_model_init. */
    int fused, absorbed;
    /* cuda: a relu writing over its input, which it alone reads and whose
     * producer (conv, linear, batchnorm, add) never reads its own output
     * in backward: acts[i + 1] is acts[i] (model.c). Set by
     * dt_model_init. */
    int inplace;
    /* cpu, 3x3 stride 1 conv: run by Winograd (conv2d_winograd.c)
     * instead of im2col: 0 no, 2 F(2x2,3x3), 4 F(4x4,3x3). Set by
     * dt_model_init from the model's conv algorithm and the layer's
     * shape. */
    int winograd;
    /* cpu: this layer's input and output (and their gradients) hold
     * each sample channels innermost, [h][w][c] (NHWC), instead of
     * [c][h][w]. The same for every layer of a model; set by
     * dt_model_init (model_layout.c). */
    int nhwc;
    const uint64_t *rng_seed, *rng_counter; /* the model's (dropout)     */
    /* batchnorm with synchronized statistics (dt_model_set_sync_bn): sums
     * these doubles over every data-parallel rank; NULL: this rank's
     * batch alone. */
    dt_model_allreduce_fn allreduce;
    void *allreduce_arg;
    int col, len;                  /* token in the layer string         */
    /* For the summary and messages: the layer as written ("conv(16,3,
     * pad=1)", or generated for a block's layers), and where a stage
     * put it: stage (1-based, 0: none), block in it (1-based), and
     * shortcut = 1 on a projection branch. */
    char desc[64];
    int stage, block, shortcut;
};

/* Does the layer run on a GPU? (Tests drive some layers with no device:
 * the cpu.) */
static inline int dt_layer_on_cuda(const dt_layer_t *l)
{
    return l->dev && l->dev->kind == DT_DEVICE_CUDA;
}

static inline size_t dt_layer_in_size(const dt_layer_t *l)
{
    return (size_t)l->in_c * (size_t)l->in_h * (size_t)l->in_w;
}
static inline size_t dt_layer_out_size(const dt_layer_t *l)
{
    return (size_t)l->out_c * (size_t)l->out_h * (size_t)l->out_w;
}

extern const dt_layer_ops_t dt_layer_linear;
extern const dt_layer_ops_t dt_layer_relu;
extern const dt_layer_ops_t dt_layer_conv2d;
extern const dt_layer_ops_t dt_layer_maxpool2d;
extern const dt_layer_ops_t dt_layer_flatten;
extern const dt_layer_ops_t dt_layer_dropout;
extern const dt_layer_ops_t dt_layer_batchnorm;
extern const dt_layer_ops_t dt_layer_gap;
extern const dt_layer_ops_t dt_layer_avgpool;
extern const dt_layer_ops_t dt_layer_add;

/* The cuda_missing of the cpu-only layers: "no CUDA implementation". */
const char *dt_layer_cpu_only(const dt_layer_t *l);
/* The cuda_missing of the layers that run through cuDNN (batchnorm,
 * avgpool, gap): NULL when the loaded CUDA backend has it. */
const char *dt_layer_needs_cudnn(const dt_layer_t *l);

/* Softmax cross-entropy over (batch, k) logits: probs (batch*k floats),
 * rows (2*batch floats of scratch), mean loss and correct count (labels
 * NULL: probabilities only); backward gives dlogits = (p - q)/batch with
 * q the target: onehot, or with label smoothing eps
 * (1 - eps) onehot + eps/k. All buffers, labels included, are on the
 * device, but host_rows: on cuda, 2*batch floats of pinned host memory the
 * rows are read back into (NULL: a malloc'd buffer per call). */
dt_status_t dt_softmax_xent_forward(dt_device_t *dev, const float *logits,
                                    const int *labels, float *probs,
                                    float *rows, float *host_rows, int batch,
                                    int k, float smoothing, float *loss,
                                    int *correct);
/* Its two halves: the rows (queued on a GPU), then their sum on the host
 * (rows in host memory: read back once the queued work is done). */
dt_status_t dt_softmax_xent_rows(dt_device_t *dev, const float *logits,
                                 const int *labels, float *probs, float *rows,
                                 int batch, int k, float smoothing);
void dt_softmax_xent_sum(const float *rows, int batch, float *loss,
                         int *correct);
dt_status_t dt_softmax_xent_backward(dt_device_t *dev, const float *probs,
                                     const int *labels, float *dlogits,
                                     int batch, int k, float smoothing);

/* Row-major C = alpha * op(A) op(B) + beta * C, op(A): m x k, op(B): k x n,
 * on the device (OpenBLAS or loops on cpu, cuBLAS on cuda). */
dt_status_t dt_gemm(dt_device_t *dev, int trans_a, int trans_b, int m, int n,
                    int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc);

/* On a GPU, return what the CUDA backend's `call` returns, e.g.
 * DT_CUDA_DISPATCH(dev, relu_forward(dev, x, y, n)) calls the backend's
 * relu_forward. A CUDA device exists only once the backend is loaded. */
#include "cuda/backend.h"
#define DT_CUDA_DISPATCH(dev, call)                                           \
    do {                                                                      \
        if ((dev)->kind == DT_DEVICE_CUDA)                                    \
            return dt_cuda_backend_loaded()->call;                            \
    } while (0)

#endif /* DT_NN_LAYER_H */
