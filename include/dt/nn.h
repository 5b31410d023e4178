/* dt/nn.h — devices, tensors and models: the compute half of the trainer.
 *
 * A model is a list of layers parsed from text (the job file's
 * `[model] layers`), ending implicitly in softmax cross-entropy:
 *
 *   conv(32,3,pad=1) relu maxpool(2) conv(64,3,pad=1) relu maxpool(2)
 *   flatten linear(128) relu linear(10)
 *
 * or a ResNet, whose stage(basic, C, n, stride=s) expands into n residual
 * blocks (docs/TRAINING.md):
 *
 *   conv(16,3,pad=1,bias=no) batchnorm relu stage(basic,16,3)
 *   stage(basic,32,3,stride=2) stage(basic,64,3,stride=2) gap flatten
 *   linear(10)
 *
 * Typical use by a training loop (errors checked, cleanup omitted):
 *
 *   dt_device_t *dev;  dt_device_open("auto", local_rank, threads, &dev);
 *   dt_model_t *m;     dt_model_parse(layers, "job.ini:7", 1, 28, 28, 10,
 *                                     &m, NULL);
 *   dt_model_init(m, dev, seed);
 *   float *p, *g; size_t n;  dt_model_params(m, &p, &g, &n);
 *   for each batch:
 *       dt_model_forward(m, x, y, batch, 1, &loss, &correct);
 *       dt_model_backward(m, on_grads_ready, ctx);   // allreduce buckets
 *       optimizer->step(state, p, g, lr, step, dev->stream);
 *
 * Parameters and gradients live in ONE flat buffer each, on the model's
 * device. Layout: layers in forward order; within a layer the weight, then
 * the bias. Backward reports finished gradient ranges from the end of the
 * buffer towards its start (reverse layer order), so a trainer can launch
 * a bucket's allreduce while earlier layers still compute.
 *
 * Threads: a model and a device are used by one thread at a time. The
 * gradient callback runs on the calling thread.
 *
 * Pointers: a model, a device and an output pointer (`&m`, `&dev`, `&p`)
 * must not be NULL unless a function says so (as with C's standard
 * library, passing one is undefined, not an error); the data a batch
 * passes in (x) is checked, and its NULL is an error that says so.
 */
#ifndef DT_NN_H
#define DT_NN_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>
#include <dt/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Devices
 * ====================================================================== */

typedef enum dt_device_kind {
    DT_DEVICE_CPU = 0,
    DT_DEVICE_CUDA = 1
} dt_device_kind_t;

typedef struct dt_device {
    dt_device_kind_t kind;
    dt_mem_t mem;    /* DT_MEM_HOST for cpu, DT_MEM_CUDA for cuda        */
    int ordinal;     /* CUDA device number (local_rank % ngpus); -1: cpu */
    int threads;     /* BLAS threads (cpu)                               */
    void *stream;    /* cudaStream_t all compute is queued on; NULL: cpu */
    void *blas;      /* cublasHandle_t bound to stream; NULL: cpu        */
    char name[128];  /* "cpu (OpenBLAS, 1 thread)", "cuda:0 (NVIDIA ...)" */
    void *dnn;       /* the CUDA backend's cuDNN state (handle bound to
                        stream, algorithm cache, workspace), made on first
                        use; NULL: none yet, or cpu                    */
} dt_device_t;

/* Number of usable CUDA GPUs: 0 when dt was built without CUDA or the
 * machine has none (never an error). Asks the NVIDIA driver first; loads
 * dt's CUDA backend module (and with it cuBLAS) only when the driver sees
 * a GPU. */
int dt_cuda_device_count(void);

/* Open a device. want: "auto" (cuda when a GPU is usable, else cpu with an
 * info line saying why), "cpu" or "cuda" (an error naming the reason when
 * no GPU can be used: no driver or GPU, or dt's CUDA backend module or a
 * CUDA library missing). libdt links no CUDA library: the backend module
 * is loaded here, on the first CUDA device. With several GPUs the worker
 * takes local_rank % ngpus and it becomes the calling thread's current
 * GPU. threads (>= 1) sets the BLAS thread count for the whole process
 * (OpenBLAS is process-global). libdt links no BLAS either: the first cpu
 * device loads OpenBLAS (an error saying what to install when it cannot),
 * and its constructor starts threads threads, not one per CPU; under an
 * address-space limit (ulimit -v) only as many as have room for their
 * buffers (a warning; dev->threads says how many), and DT_ERR_CONFIG when
 * not even one has (OpenBLAS would hang); to tell it,
 * OPENBLAS_NUM_THREADS is set for that moment and then restored, so open
 * the first cpu device before starting threads that read or write the
 * environment. */
dt_status_t dt_device_open(const char *want, int local_rank, int threads,
                           dt_device_t **out);
void dt_device_close(dt_device_t *dev);
/* Wait until all work queued on the device finished (no-op on cpu). */
dt_status_t dt_device_sync(dt_device_t *dev);

/* Device memory (plain malloc on cpu, zero-filled on both). */
dt_status_t dt_device_alloc(dt_device_t *dev, size_t bytes, void **out);
void dt_device_free(dt_device_t *dev, void *ptr);
/* Host memory the device copies from/to fastest (pinned on cuda): staging
 * buffers for gradients when a transport cannot read device memory. */
dt_status_t dt_device_host_alloc(dt_device_t *dev, size_t bytes, void **out);
void dt_device_host_free(dt_device_t *dev, void *ptr);
/* Copy bytes between host and device memory, in stream order; returns once
 * the copy finished. Either side may be DT_MEM_HOST or DT_MEM_CUDA. */
dt_status_t dt_device_copy(dt_device_t *dev, void *dst, dt_mem_t dst_mem,
                           const void *src, dt_mem_t src_mem, size_t bytes);

/* ======================================================================
 * Tensors: float32, up to 4 dimensions (N, C, H, W), row-major.
 * ====================================================================== */

#define DT_TENSOR_MAXDIM 4

typedef struct dt_tensor {
    float *data;                  /* on `mem`                              */
    int ndim;
    int shape[DT_TENSOR_MAXDIM];
    size_t numel;
    dt_mem_t mem;
} dt_tensor_t;

/* ======================================================================
 * Models
 * ====================================================================== */

typedef struct dt_model dt_model_t;

/* Where a layer string went wrong: column (0-based byte offset) and length
 * (bytes) of the offending token, and the message that was logged. The
 * logged caret line counts characters (UTF-8) instead, as shown. */
typedef struct dt_model_error {
    int column;
    int length;
    char message[256];
} dt_model_error_t;

/* Parse a layer string for inputs of shape (in_c, in_h, in_w) and
 * nclasses outputs; checks every layer's arguments and shapes, so a model
 * that parses also runs. Errors are logged as
 *     <origin>: unknown layer 'conv3' (known: linear, conv, ...)
 *       conv(32,3) relu conv3(64)
 *                       ^~~~~
 * origin names where the string came from ("job.ini:12", may be NULL);
 * err (may be NULL) receives the position. Allocates no device memory.
 * At most DT_MODEL_MAX_LAYERS layers, stages expanded (placing the
 * activations in memory takes time quadratic in their number). */
#define DT_MODEL_MAX_LAYERS 10000
dt_status_t dt_model_parse(const char *layers, const char *origin, int in_c,
                           int in_h, int in_w, int nclasses,
                           dt_model_t **out, dt_model_error_t *err);

/* Allocate parameters and gradients on dev (NULL: cpu) and initialize them
 * from seed: He (Kaiming normal, fan_in) for conv and linear layers
 * followed by relu or by batchnorm, Xavier (Glorot uniform) otherwise,
 * biases zero; batchnorm scale 1 and shift 0, running mean 0 and variance
 * 1. The same seed gives the same parameters on every device and every
 * run. Also seeds dropout with seed (see dt_model_set_rng). Call once.
 * A CUDA device is refused with a message naming the first layer that
 * has no CUDA implementation (batchnorm, gap, avgpool, residual blocks). */
dt_status_t dt_model_init(dt_model_t *m, dt_device_t *dev, uint64_t seed);

/* How the cpu computes convolutions (CUDA always uses im2col + cuBLAS):
 *   DT_CONV_AUTO      Winograd F(4x4, 3x3) (F(2x2) under a fused 2x2
 *                     max pool) for 3x3, stride 1 layers with
 *                     at least DT_CONV_WINOGRAD_MIN_IN input channels,
 *                     im2col + GEMM for the rest (the default; measured in
 *                     docs/PERFORMANCE.md#conv_algo)
 *   DT_CONV_IM2COL    im2col + GEMM for every layer
 *   DT_CONV_WINOGRAD  Winograd F(2x2, 3x3) for every 3x3, stride 1 layer
 *   DT_CONV_WINOGRAD4 Winograd F(4x4, 3x3) for every 3x3, stride 1 layer
 *                     (F(2x2) where a 2x2 max pool is fused: its windows
 *                     are F(2x2)'s tiles)
 * Both give the same results up to float rounding. May be called before
 * or after dt_model_init; takes effect at the next forward (a backward
 * must follow a forward made after the call). */
typedef enum dt_conv_algo {
    DT_CONV_AUTO = 0,
    DT_CONV_IM2COL,
    DT_CONV_WINOGRAD,
    DT_CONV_WINOGRAD4
} dt_conv_algo_t;
#define DT_CONV_WINOGRAD_MIN_IN 8
dt_status_t dt_model_set_conv_algo(dt_model_t *m, dt_conv_algo_t algo);
/* Parse "auto", "im2col", "winograd" or "winograd4"; DT_ERR_INVALID
 * otherwise. */
dt_status_t dt_conv_algo_parse(const char *name, dt_conv_algo_t *algo);

/* How the cpu lays out a sample's activations between layers:
 *   DT_LAYOUT_AUTO  (the default) channels innermost (NHWC) when every
 *                   layer of the model runs so (conv, batchnorm, relu,
 *                   add, gap, flatten, linear; dropout on flat vectors),
 *                   NCHW otherwise (max or average pooling, dropout on
 *                   an image)
 *   DT_LAYOUT_NCHW  each channel's plane contiguous, as the input comes
 *   DT_LAYOUT_NHWC  channels innermost: Winograd's transforms and
 *                   im2col read contiguous channels and no layer
 *                   transposes (measured: docs/PERFORMANCE.md#layout);
 *                   refused where a layer cannot, naming the layers
 *                   as written (a maxpool, not the conv it is fused
 *                   into)
 * Inputs, logits, parameters, gradients and checkpoints are the same in
 * both (the model transposes a multi-channel input itself; flatten
 * gives NCHW order); results agree up to float rounding. CUDA is always
 * NCHW. Called like dt_model_set_conv_algo (before or after
 * dt_model_init). */
typedef enum dt_layout {
    DT_LAYOUT_AUTO = 0,
    DT_LAYOUT_NCHW,
    DT_LAYOUT_NHWC
} dt_layout_t;
dt_status_t dt_model_set_layout(dt_model_t *m, dt_layout_t layout);
/* Parse "auto", "nchw" or "nhwc"; DT_ERR_INVALID otherwise. */
dt_status_t dt_layout_parse(const char *name, dt_layout_t *layout);
/* The layout the model runs in now (after dt_model_init): NCHW or NHWC. */
dt_layout_t dt_model_layout(const dt_model_t *m);

/* How the activations that backward keeps are stored:
 *   DT_ACTIVATIONS_FLOAT32  float32 (the default)
 *   DT_ACTIVATIONS_BF16     bf16, on a CUDA device only: half their
 *                           memory (PyTorch's autocast keeps its outputs
 *                           in bf16 too). The layers compute in float32
 *                           from widened copies; each output is rounded
 *                           to bf16 (nearest even) as it is stored, and
 *                           backward sees the rounded values forward
 *                           used. The input and the logits stay float32.
 * Refused (DT_ERR_UNSUPPORTED, said) on the CPU. Called before or after
 * dt_model_init. */
typedef enum dt_activations {
    DT_ACTIVATIONS_FLOAT32 = 0,
    DT_ACTIVATIONS_BF16
} dt_activations_t;
dt_status_t dt_model_set_activations(dt_model_t *m, dt_activations_t a);
/* The bytes bf16 storage would save at this batch (negative: what it
 * would cost: the float32 copies outweigh a small model's activations). */
long long dt_model_bf16_saving(const dt_model_t *m, int batch);
/* Parse "float32" or "bf16"; DT_ERR_INVALID otherwise. */
dt_status_t dt_activations_parse(const char *name, dt_activations_t *a);
dt_activations_t dt_model_activations(const dt_model_t *m);

/* The device memory a model holds, in bytes, by what it is for (after a
 * forward: the activation buffers exist from the first one on, sized
 * for the largest batch so far). The activations, their gradients and
 * the float32 copies share one block, each buffer placed where nothing
 * live at its steps lies: act_grads and act_copies are what each adds
 * to that block beyond what the activations need. */
typedef struct dt_model_memory {
    size_t params;      /* parameters, their gradients, batchnorm buffers */
    size_t activations; /* layer outputs kept for backward (and input)   */
    size_t act_grads;   /* what backward's activation gradients add      */
    size_t act_copies;  /* bf16 storage: what the float32 copies add     */
    size_t scratch;     /* layers' scratch, probabilities, labels        */
} dt_model_memory_t;
void dt_model_memory(const dt_model_t *m, dt_model_memory_t *out);
/* The same, estimated for a training step of `batch` samples from the
 * layers alone: works before dt_model_init and allocates nothing large,
 * so that a model too large for the memory can be refused before it is
 * allocated. on_gpu: planned as a GPU runs the layers (relus in place),
 * else as the CPU does (layers fused). The layers' scratch (im2col or
 * Winograd buffers, chosen at init) is left out: a lower bound of what
 * the model will hold. DT_ERR_INVALID for a batch below 1. */
dt_status_t dt_model_memory_estimate(const dt_model_t *m, int batch,
                                     int on_gpu, dt_model_memory_t *out);

/* The flat parameter and gradient buffers (device memory) and their
 * length in floats. Stay valid until dt_model_free. */
dt_status_t dt_model_params(dt_model_t *m, float **params, float **grads,
                            size_t *n);
size_t dt_model_nparams(const dt_model_t *m);

/* Floating-point operations of one sample's forward pass: 2 per
 * multiply-add of the convolutions and linear layers (what dominates;
 * elementwise layers, pooling and batchnorm are left out). A training
 * step costs about 3x that per sample (forward, and backward's two
 * products). Works before dt_model_init. */
double dt_model_flops(const dt_model_t *m);

/* The model's layers as [model] layers lists them (after parsing). */
int dt_model_nlayers(const dt_model_t *m);

/* The fewest values per channel one sample gives a batchnorm layer (its
 * height x width; 1 on a flat input or after gap), and that layer's index
 * in *layer (may be NULL); 0 without batchnorm. Training normalizes over
 * batch x that values: a batch where it is 1 has nothing to normalize. */
int dt_model_batchnorm_plane(const dt_model_t *m, int *layer);

/* Layer i's forward for one sample: *flops as dt_model_flops counts
 * them (0 for elementwise, pooling, batchnorm), *bytes of activations it
 * reads and writes at `elem` bytes each (its input and output); and its
 * parameter floats (*params, read once per batch). A roofline of the
 * layer on a device (dtctl plan --device-bandwidth). Works before
 * dt_model_init. DT_ERR_INVALID for i out of range. */
dt_status_t dt_model_layer_cost(const dt_model_t *m, int i, size_t elem,
                                double *flops, double *bytes,
                                size_t *params);

/* The parameter tensors inside the flat buffer, in layer order: each
 * layer's weights, then its bias, each one tensor (layers without
 * parameters have none). *offsets (malloc'd, free() it) holds
 * *ntensors + 1 boundaries: 0 = offsets[0] < ... < offsets[*ntensors] =
 * dt_model_nparams(m); tensor i is [offsets[i], offsets[i+1]). What the
 * layer-wise optimizers take (set_tensors, dt/plugin.h). A model without
 * parameters gives *ntensors = 0 and offsets = {0}. */
dt_status_t dt_model_param_tensors(const dt_model_t *m, size_t **offsets,
                                   size_t *ntensors);

/* What each tensor of dt_model_param_tensors is, in the same order:
 * *kinds (malloc'd, free() it) holds *ntensors dt_tensor_kind_t values
 * (dt/types.h), one byte each: DT_TENSOR_WEIGHT and DT_TENSOR_BIAS for a
 * linear or conv layer's weights and bias, DT_TENSOR_NORM for both of
 * batchnorm's (its scale and its shift). What the layer-wise optimizers
 * take with the boundaries (set_tensor_kinds, dt/plugin.h), to leave
 * biases and normalization out of the trust ratio and weight decay. A
 * model without parameters gives *ntensors = 0. */
dt_status_t dt_model_param_kinds(const dt_model_t *m, unsigned char **kinds,
                                 size_t *ntensors);

/* Non-trainable state that is part of the model but not optimized: the
 * running mean and variance of every batchnorm layer, in ONE flat buffer
 * on the model's device. Layout: layers in forward order; within a
 * batchnorm of C channels, C means then C variances. Train-mode forwards
 * update it (momentum), eval-mode forwards read it. A checkpoint must
 * save and restore it with the parameters; data-parallel ranks should
 * make it equal before evaluating or saving (dt's trainer broadcasts rank
 * 0's; dt_model_set_sync_bn keeps it equal as it goes). n is 0
 * for a model without batchnorm (then *buffers may be NULL). Valid after
 * dt_model_init until dt_model_free. */
dt_status_t dt_model_buffers(dt_model_t *m, float **buffers, size_t *n);
size_t dt_model_nbuffers(const dt_model_t *m);

/* Synchronized batch normalization across data-parallel ranks (PyTorch's
 * SyncBatchNorm, the job file's [model] sync_bn). The model itself never
 * communicates: a trainer hands it fn, which must sum the n doubles at buf
 * in place over every rank (an allreduce with DT_SUM; every rank calls it
 * with the same n in the same order, since every rank runs the same
 * layers). With fn set, each train-mode batchnorm forward sums its
 * per-channel sums, sums of squares and sample count (one call, 2C+1
 * doubles) and normalizes with the statistics of the global batch, from
 * which it also updates the running statistics (so they stay the same on
 * every rank); its backward sums the per-channel sums of dy and dy*x (one
 * call, 2C doubles; none when the layer needs no input gradient). Given
 * the same dy, outputs and input gradients equal single-process
 * batchnorm over the concatenation of all ranks' batches; the gradients of
 * gamma and beta stay this rank's share (sums over its own batch), which
 * averaging the gradients over ranks combines. Evaluation (train = 0) and
 * a model without batchnorm never call fn. fn NULL (the default): each
 * rank normalizes with its own batch's statistics, as PyTorch DDP does.
 * May be called before or after dt_model_init. */
typedef dt_status_t (*dt_model_allreduce_fn)(void *arg, double *buf,
                                             size_t n);
void dt_model_set_sync_bn(dt_model_t *m, dt_model_allreduce_fn fn,
                          void *arg);

/* Label smoothing eps in [0, 1) for the loss (default 0): the target of
 * the cross-entropy is (1 - eps) onehot + eps/K, as PyTorch's
 * CrossEntropyLoss(label_smoothing=eps). The reported loss is the
 * smoothed one. cpu only (a CUDA model refuses eps > 0). */
dt_status_t dt_model_set_label_smoothing(dt_model_t *m, float eps);

/* Loss scaling (fp16 training, dt_train's [train] loss_scale): backward
 * starts from scale times the loss gradient, so every parameter gradient
 * comes out multiplied by scale (exactly so for a power of two, barring
 * overflow). The caller divides them back and skips a step whose
 * gradients overflowed. scale > 0; default 1. */
dt_status_t dt_model_set_loss_scale(dt_model_t *m, float scale);

/* Forward a batch. x: host memory, batch*in_c*in_h*in_w floats (NULL is
 * DT_ERR_INVALID, said); labels: host memory, batch ints in
 * [0, nclasses) (NULL: no loss, inference only).
 * train: 1 applies dropout and keeps what backward needs; 0 evaluates.
 * loss: mean cross-entropy over the batch; correct: how many argmax
 * predictions equal their label (both may be NULL). Errors name the bad
 * label and its index. */
dt_status_t dt_model_forward(dt_model_t *m, const float *x, const int *labels,
                             int batch, int train, float *loss, int *correct);

/* Called during backward each time a layer's gradients are final: floats
 * [offset, offset+len) of the gradient buffer. Calls come in backward
 * order (decreasing offsets) and together cover the whole buffer exactly
 * once. On cuda the range's kernels are only QUEUED on dev->stream (no
 * synchronization per layer): a callback that reads the range from another
 * stream or thread must first order itself after them, e.g. record an
 * event on dev->stream and wait for it (the trainer's gradient sync does;
 * core/train/grad_sync.c). A non-DT_OK
 * return stops backward and is returned by dt_model_backward. */
typedef dt_status_t (*dt_grad_ready_fn)(void *arg, size_t offset, size_t len);

/* Backward of the last train=1 forward: gradients of the mean loss with
 * respect to every parameter. OVERWRITES the gradient buffer (no
 * accumulation, no zeroing needed). cb may be NULL. */
dt_status_t dt_model_backward(dt_model_t *m, dt_grad_ready_fn cb, void *arg);

/* One training step: forward (train = 1) of a batch with labels, then
 * backward, as dt_model_forward + dt_model_backward, but with the loss
 * read back once, after backward, instead of between the two (the host
 * queues backward while forward runs). With CUDA graphs
 * (dt_model_set_cuda_graphs) the step's GPU work is captured once after
 * two warm-up steps and then replayed by one launch per step; cb is then
 * called for every range right after that launch (same order, same
 * ranges), where an eager step calls it during backward. */
dt_status_t dt_model_train_step(dt_model_t *m, const float *x,
                                const int *labels, int batch, float *loss,
                                dt_grad_ready_fn cb, void *arg);

/* CUDA graphs for dt_model_train_step on a GPU (no effect on the CPU):
 * off; on (captured when the model allows it, else said once and eager);
 * auto (the default of dt_train: captured, timed against eager steps of
 * the same batch, kept only when faster). A model whose step changes from
 * step to step is never captured: dropout (a new mask each step), sync_bn
 * (an allreduce inside forward), per-layer profiling. A batch of another
 * size (an epoch's last) runs eagerly; a new loss scale is captured anew;
 * buffers that are reallocated (a larger batch) drop the graph. */
typedef enum {
    DT_CUDA_GRAPHS_OFF = 0,
    DT_CUDA_GRAPHS_ON = 1,
    DT_CUDA_GRAPHS_AUTO = 2
} dt_cuda_graphs_t;
dt_status_t dt_model_set_cuda_graphs(dt_model_t *m, dt_cuda_graphs_t mode);
/* "off", "on", "auto" (DT_ERR_INVALID otherwise). */
dt_status_t dt_cuda_graphs_parse(const char *name, dt_cuda_graphs_t *out);

/* Logits of the last forward: (batch, nclasses) on the model's device. */
const dt_tensor_t *dt_model_output(const dt_model_t *m);

/* Dropout randomness: (seed, counter). The counter advances with every
 * train=1 forward; save it in checkpoints for bit-exact resume. A trainer
 * may give each rank its own stream with seed + rank. */
void dt_model_get_rng(const dt_model_t *m, uint64_t *seed, uint64_t *counter);
void dt_model_set_rng(dt_model_t *m, uint64_t seed, uint64_t counter);

/* The model summary, one line (no newline) per call of fn: a header, the
 * input, each layer (as written, or as a stage expanded it, indented
 * under "stage S, block B"; projection shortcuts marked), its output shape
 * and parameter count, then the totals. Works before dt_model_init. fn
 * NULL: nothing (so for dt_model_profile). */
typedef void (*dt_model_line_fn)(void *arg, const char *line);
void dt_model_summary(const dt_model_t *m, dt_model_line_fn fn, void *arg);

/* The summary to the info log. */
void dt_model_log_summary(const dt_model_t *m);

/* Per-layer timing, for benchmarks: with profiling on, each forward and
 * backward adds every layer's thread CPU time to its totals (a layer that
 * applies the next ones, conv + relu say, counts for all of them; the
 * loss counts as its own line). dt_model_set_profiling(m, 1) (re)starts
 * the totals; dt_model_profile writes one line per layer that ran: index,
 * description, forward and backward ms per step over `steps` steps, and
 * its share of the total. */
dt_status_t dt_model_set_profiling(dt_model_t *m, int on);
void dt_model_profile(const dt_model_t *m, int steps, dt_model_line_fn fn,
                      void *arg);

/* The model's device (NULL before dt_model_init). */
dt_device_t *dt_model_device(const dt_model_t *m);

void dt_model_free(dt_model_t *m);

#ifdef __cplusplus
}
#endif
#endif /* DT_NN_H */
