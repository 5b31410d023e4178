/* model.h — the model's insides, shared by model_parse.c, model_init.c and
 * model.c (not installed). */
#ifndef DT_NN_MODEL_H
#define DT_NN_MODEL_H

#include <dt/nn.h>
#include "layer.h"

struct dt_model {
    int nlayers;
    dt_layer_t *layers;
    int in_c, in_h, in_w, nclasses;
    size_t nparams;
    dt_device_t *dev;
    int own_dev;          /* dev was opened by dt_model_init (cpu)       */
    float *params, *grads;
    /* Activations acts[0] (input) .. acts[nlayers] (logits) and their
     * gradients, sized for cap samples; one scratch block for all layers.
     * acts[1 .. nlayers-1], the gradients, the branch sums and the float32
     * copies lie in one block, placed by lifetime (model_arena.c);
     * dacts[k] NULL: never needed. block_*: its bytes by what they are
     * for (dt_model_memory). */
    int cap;
    float **acts, **dacts;
    void *block;
    size_t block_acts, block_grads, block_copies;
    /* DT_DEBUG_POISON_BLOCK=1 (the tests): each buffer's bytes and
     * lifetime in the block, kept so that before every step whatever is
     * not a live buffer written at an earlier step is filled with junk
     * (model_arena.c): a read outside a lifetime gets wrong numbers. */
    struct dt_block_span {
        size_t off, bytes;
        int from, to;
    } *spans;
    int nspans, poison;
    float *scratch;
    float *probs, *rows;
    float *host_rows;     /* cuda: rows read back here (pinned, 2*cap)   */
    int *labels;          /* on the device                               */
    int batch;            /* of the last forward                         */
    int trained;          /* last forward was train=1 with labels        */
    dt_tensor_t output;
    uint64_t rng_seed, rng_counter;
    dt_conv_algo_t conv_algo;
    dt_layout_t layout;   /* as asked (dt_model_set_layout)             */
    int nhwc;             /* as run: cpu activations channels innermost  */
    float label_smoothing;
    float loss_scale;     /* dt_model_set_loss_scale (1: off)            */
    /* Non-trainable state (batchnorm running statistics), nbuffers floats
     * on the device; layers' buf point into it. */
    size_t nbuffers;
    float *buffers;
    /* sync_bn: the collective the batchnorm layers sum their statistics
     * with (dt_model_set_sync_bn); NULL: per-rank statistics. */
    dt_model_allreduce_fn allreduce;
    void *allreduce_arg;
    /* Residual blocks: an activation read by two layers gets the second
     * gradient through a branch sum, dtmp_at[step] (model_arena.c: the
     * steps are forward i, loss L, backward 2L - i), and dwritten[j] says
     * whether dacts[j] holds a gradient yet in this backward. bias=no
     * convs: zeros and junk (largest out channels). */
    int branched;
    float **dtmp_at;
    unsigned char *dwritten;
    float *zeros, *junk;
    /* dt_model_set_activations (model_act16.c): acts[1 .. nlayers-1]
     * hold bf16 (2 bytes per element behind the float pointer); layers
     * run on float32 copies: wx (input) and wy (output; the add's second
     * input is widened there too), set per step from wx_at, wy_at. */
    int act16;
    float *wx, *wy;
    float **wx_at, **wy_at;
    /* dt_model_set_profiling: thread CPU seconds per layer, forward at
     * [2i], backward at [2i+1]; the loss at [2 nlayers]. NULL: off. */
    double *prof;
    /* dt_model_set_cuda_graphs (model_graph.c): the captured step and
     * how it was chosen. */
    struct dt_model_graphs {
        dt_cuda_graphs_t mode;
        int decided;          /* auto: 1 graphs won, -1 eager won, 0 not
                                 yet; on: 1; eager for good: -1       */
        int warm;             /* eager steps of this batch since reset */
        void *exec;           /* the captured step (NULL: none)        */
        int batch;            /* its batch                             */
        float scale;          /* its loss scale, label smoothing and   */
        float smoothing;      /* the backend's precision: baked into   */
        int precision;        /* its kernels' arguments                */
        unsigned long long gen; /* the backend's buffers_generation    */
        int other, other_batch; /* eager steps in a row of another size */
        int said_unfit;       /* on: the warning that it is not captured
                                 was given                             */
        int external, pending; /* auto: the caller times whole steps
                                 (dt_model_graph_step_time); this step
                                 awaits its time                       */
        size_t (*ready)[2];   /* cb's ranges, in order, from capture   */
        int nready, cap_ready;
        int capturing;        /* inside the capture: ranges noted      */
        struct dt_model_step_body {
            dt_model_t *m;
            int batch;
            dt_grad_ready_fn cb;
            void *arg;
        } body;               /* the captured body's argument: kept, a
                                 backend may run it again (the tests'
                                 stand-in replays it at each launch)  */
        double eager_s, graph_s; /* auto: fastest timed step of each  */
        int timed;            /* auto: eager steps timed before the
                                 capture, graph steps after it         */
        unsigned long long captures, launches;
    } graphs;
};

/* The block of activations, gradients, branch sums and float32 copies
 * for batch samples, and the pointers into it (model_arena.c). */
dt_status_t dt_model_plan_block(dt_model_t *m, int batch);
/* Its bytes for batch samples, activations stored in bf16 or not (0: out
 * of memory planning it). */
size_t dt_model_block_bytes(const dt_model_t *m, int batch, int act16);
/* The same by part, as dt_model_memory splits it: activations, what
 * the gradients and branch sums add, what the float32 copies add (-1:
 * out of memory planning it). */
int dt_model_block_parts(const dt_model_t *m, int batch, int act16,
                         size_t parts[3]);
/* DT_DEBUG_POISON_BLOCK: fill the block's free bytes at this step (the
 * steps: forward i, loss L, backward 2L - i); DT_OK when off. */
dt_status_t dt_model_block_poison(dt_model_t *m, int step);
/* Pairs of the block's buffers that are live at one step and overlap
 * (0 for a sound placement; -1 out of memory), for the tests. */
int dt_model_block_overlaps(const dt_model_t *m, int batch, int act16);
/* The lowest layer backward runs (model_arena.c). */
int dt_model_first_backward(const dt_model_t *m);

/* dt_model_forward's parts (model.c): the checks, buffers and the input's
 * queued copies; then the layers and the loss rows (queued on a GPU). */
dt_status_t dt_model_forward_begin(dt_model_t *m, const float *x,
                                   const int *labels, int batch);
dt_status_t dt_model_forward_layers(dt_model_t *m, int batch, int train,
                                    int with_labels);
/* The loss rows back to the host (on a GPU: waits for the stream), summed
 * into the mean loss and the correct count (either may be NULL). */
dt_status_t dt_model_read_loss(dt_model_t *m, int batch, float *loss,
                               int *correct);
/* Drop the captured step (model_graph.c): its buffers are going. */
void dt_model_graph_reset(dt_model_t *m);
/* cuda_graphs = auto, timed by the caller: each dt_model_train_step is
 * followed by dt_model_graph_step_time with the whole step's seconds
 * (the trainer's: the gradient sync included, so that graphs are kept
 * only where they win with the overlap they give up at N > 1). */
void dt_model_graph_external_timing(dt_model_t *m);
void dt_model_graph_step_time(dt_model_t *m, double seconds);

/* A layer's scratch floats for batch samples, rounded up to 16 (model.c). */
size_t dt_model_scratch_floats(const dt_layer_t *l, int batch);

/* Free the activation, gradient and scratch buffers (model.c); the next
 * forward allocates them again. */
void dt_model_free_buffers(dt_model_t *m);

/* 16-bit activation storage (model_act16.c). */
/* Whether acts[k] is stored in bf16. */
int dt_model_act16(const dt_model_t *m, int k);
/* acts[k] as float32: itself, or widened into tmp (n floats). */
dt_status_t dt_model_act_read(dt_model_t *m, int k, float *tmp, size_t n,
                              const float **out);
/* Store the float32 output y (n floats) as acts[k] when it is bf16. */
dt_status_t dt_model_act_store(dt_model_t *m, int k, const float *y,
                               size_t n);
/* Set l->io16 for the forward (and backward) that follows: which of
 * its x and y a conv reads and writes as stored bf16. */
void dt_model_io16(dt_model_t *m, dt_layer_t *l, int out);
/* Whether l's backward reads its forward's x and y. */
void dt_model_backward_reads(const dt_layer_t *l, int *x, int *y);
/* DT_ERR_UNSUPPORTED, said, when bf16 storage was asked for and dev is
 * not a GPU (dt_model_init). */
dt_status_t dt_model_check_activations(const dt_model_t *m,
                                       const dt_device_t *dev);

/* Which layers a device of this kind runs fused (cpu) or relus in
 * place (cuda): decided from the layers alone (model_init.c), so that a
 * copy of a parsed model can be sized as dt_model_init will run it. */
void dt_model_plan_fusion(dt_model_t *m, int cpu);

/* Mark the cpu convs that run by Winograd under m->conv_algo (model_init.c). */
void dt_model_pick_conv(dt_model_t *m);

/* Set every layer's nhwc from m->layout, the device and the layers
 * (model_layout.c); DT_ERR_UNSUPPORTED, from dt_model_check_nhwc, when
 * NHWC was asked for on the cpu and a layer has no NHWC form. */
dt_status_t dt_model_pick_layout(dt_model_t *m);
/* DT_OK when every layer of m (parsed; initialized or not) has an NHWC
 * form; else DT_ERR_UNSUPPORTED, logging which layers as written (index
 * from 0, as the model summary counts), why, and what to do. where: the
 * origin of [model] layout (dt_config_origin), or NULL from the C API. */
dt_status_t dt_model_check_nhwc(const dt_model_t *m, const char *where);
/* Per sample (c x plane) <-> (plane x c), on the host. */
void dt_nchw_to_nhwc(const float *x, float *y, int batch, int c, int plane);
void dt_nhwc_to_nchw(const float *x, float *y, int batch, int c, int plane);

#endif /* DT_NN_MODEL_H */
