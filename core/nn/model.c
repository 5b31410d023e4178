/* model.c — forward and backward through the layer list, activation
 * buffers, and the small accessors of dt/nn.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include "model.h"
#include "nn/device_step.h"

void dt_model_free_buffers(dt_model_t *m)
{
    dt_model_graph_reset(m); /* it points into what goes here */
    if (m->acts) { /* the input and the logits: buffers of their own */
        dt_device_free(m->dev, m->acts[0]);
        dt_device_free(m->dev, m->acts[m->nlayers]);
    }
    dt_device_free(m->dev, m->block);
    m->block = NULL;
    free(m->spans);
    m->spans = NULL;
    m->nspans = 0;
    m->block_acts = m->block_grads = m->block_copies = 0;
    free(m->acts);
    free(m->dacts);
    free(m->dtmp_at);
    free(m->wx_at);
    free(m->wy_at);
    m->dtmp_at = m->wx_at = m->wy_at = NULL;
    dt_device_free(m->dev, m->scratch);
    dt_device_free(m->dev, m->probs);
    dt_device_free(m->dev, m->rows);
    dt_device_host_free(m->dev, m->host_rows);
    m->host_rows = NULL;
    dt_device_free(m->dev, m->labels);
    m->wx = m->wy = NULL;
    free(m->dwritten);
    m->dwritten = NULL;
    m->acts = m->dacts = NULL;
    m->scratch = m->probs = m->rows = NULL;
    m->labels = NULL;
    m->cap = 0;
}

/* Thread CPU seconds, for dt_model_set_profiling (0 when off). */
static double prof_now(const dt_model_t *m)
{
    if (!m->prof)
        return 0.0;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void prof_add(dt_model_t *m, int slot, double t0)
{
    if (m->prof)
        m->prof[slot] += prof_now(m) - t0;
}

static dt_status_t dev_floats(dt_model_t *m, size_t n, float **out)
{
    return dt_device_alloc(m->dev, n * sizeof(float), (void **)out);
}

/* A layer's scratch floats, rounded up to 16 (64 bytes): every layer's
 * scratch starts aligned for vectors and for doubles. */
size_t dt_model_scratch_floats(const dt_layer_t *l, int batch)
{
    return (l->ops->scratch_floats(l, batch) + 15) & ~(size_t)15;
}

/* Buffers for `batch` samples; grown (never shrunk) on demand. */
static dt_status_t ensure_capacity(dt_model_t *m, int batch)
{
    if (batch <= m->cap)
        return DT_OK;
    dt_model_free_buffers(m);
    m->acts = calloc((size_t)m->nlayers + 1, sizeof *m->acts);
    m->dacts = calloc((size_t)m->nlayers + 1, sizeof *m->dacts);
    if (!m->acts || !m->dacts)
        return DT_ERR_NOMEM;
    size_t in = (size_t)m->in_c * m->in_h * m->in_w, scratch = 0;
    DT_CHECK(dev_floats(m, (size_t)batch * in, &m->acts[0]));
    DT_CHECK(dev_floats(m, (size_t)batch *
                               dt_layer_out_size(&m->layers[m->nlayers - 1]),
                        &m->acts[m->nlayers]));
    for (int i = 0; i < m->nlayers; i++)
        scratch += dt_model_scratch_floats(&m->layers[i], batch);
    DT_CHECK(dt_model_plan_block(m, batch));
    if (scratch) /* no layer needing any: no block (cudaMalloc(0)) */
        DT_CHECK(dev_floats(m, scratch, &m->scratch));
    size_t off = 0;
    for (int i = 0; i < m->nlayers; i++) {
        m->layers[i].scratch = m->scratch ? m->scratch + off : NULL;
        off += dt_model_scratch_floats(&m->layers[i], batch);
    }
    if (m->branched) {
        m->dwritten = calloc((size_t)m->nlayers + 1, 1);
        if (!m->dwritten)
            return DT_ERR_NOMEM;
    }
    DT_CHECK(dev_floats(m, (size_t)batch * m->nclasses, &m->probs));
    DT_CHECK(dev_floats(m, (size_t)batch * 2, &m->rows));
    /* The loss and the correct count come back through pinned memory,
     * allocated here once, not per step. */
    if (m->dev->mem != DT_MEM_HOST)
        DT_CHECK(dt_device_host_alloc(m->dev, (size_t)batch * 2 *
                                                  sizeof(float),
                                      (void **)&m->host_rows));
    DT_CHECK(dt_device_alloc(m->dev, (size_t)batch * sizeof(int),
                             (void **)&m->labels));
    m->cap = batch;
    return DT_OK;
}

dt_status_t dt_model_set_conv_algo(dt_model_t *m, dt_conv_algo_t algo)
{
    if (algo != DT_CONV_AUTO && algo != DT_CONV_IM2COL &&
        algo != DT_CONV_WINOGRAD && algo != DT_CONV_WINOGRAD4) {
        dt_error("dt_model_set_conv_algo: unknown algorithm %d", (int)algo);
        return DT_ERR_INVALID;
    }
    m->conv_algo = algo;
    if (!m->dev)
        return DT_OK; /* dt_model_init picks */
    dt_model_free_buffers(m); /* the scratch sizes change */
    m->trained = 0;  /* and the last forward's activations are gone */
    dt_model_pick_conv(m);
    return dt_model_pick_layout(m);
}

dt_status_t dt_model_set_layout(dt_model_t *m, dt_layout_t layout)
{
    if (layout != DT_LAYOUT_AUTO && layout != DT_LAYOUT_NCHW &&
        layout != DT_LAYOUT_NHWC) {
        dt_error("dt_model_set_layout: unknown layout %d", (int)layout);
        return DT_ERR_INVALID;
    }
    dt_layout_t was = m->layout;
    m->layout = layout;
    if (!m->dev)
        return DT_OK; /* dt_model_init picks */
    int nhwc = m->nhwc;
    dt_status_t st = dt_model_pick_layout(m);
    if (st != DT_OK) {
        m->layout = was;
        return st;
    }
    if (m->nhwc != nhwc) {
        dt_model_free_buffers(m); /* the convs' scratch sizes change */
        m->trained = 0;  /* and the last forward's activations are gone */
    }
    return DT_OK;
}

dt_status_t dt_conv_algo_parse(const char *name, dt_conv_algo_t *algo)
{
    static const char *const names[] = {"auto", "im2col", "winograd",
                                        "winograd4"};
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *algo = (dt_conv_algo_t)i;
            return DT_OK;
        }
    return DT_ERR_INVALID;
}

static dt_status_t check_labels(const dt_model_t *m, const int *labels,
                                int batch)
{
    for (int i = 0; i < batch; i++)
        if (labels[i] < 0 || labels[i] >= m->nclasses) {
            dt_error("label %d of sample %d of the batch is outside [0, %d): "
                     "the data set's labels do not fit the model's %d "
                     "classes", labels[i], i, m->nclasses, m->nclasses);
            return DT_ERR_INVALID;
        }
    return DT_OK;
}

dt_status_t dt_model_forward_begin(dt_model_t *m, const float *x,
                                   const int *labels, int batch)
{
    m->trained = 0;
    if (!m->params) {
        dt_error("dt_model_forward before dt_model_init");
        return DT_ERR_INVALID;
    }
    if (batch < 1) {
        dt_error("dt_model_forward: batch of %d samples", batch);
        return DT_ERR_INVALID;
    }
    if (!x) {
        dt_error("dt_model_forward: the input x is NULL for a batch of %d "
                 "samples: pass batch x %dx%dx%d floats of host memory",
                 batch, m->in_c, m->in_h, m->in_w);
        return DT_ERR_INVALID;
    }
    if (labels)
        DT_CHECK(check_labels(m, labels, batch));
    DT_CHECK(ensure_capacity(m, batch));
    size_t in = (size_t)m->in_c * m->in_h * m->in_w;
    /* Queued on the stream, no wait: from pinned memory (the trainer's
     * batches are, dt_pipeline_opts_t.pin) a DMA. The caller may reuse x
     * and labels once the stream has done this (dt_model_forward's loss
     * read-back, or its sync without labels, waits for it). */
    if (m->nhwc && m->in_c > 1) /* cpu: the input comes as NCHW */
        dt_nchw_to_nhwc(x, m->acts[0], batch, m->in_c, m->in_h * m->in_w);
    else
        DT_CHECK(dt_device_copy_async(m->dev, m->acts[0], x,
                                      (size_t)batch * in * sizeof *x, NULL));
    if (labels)
        DT_CHECK(dt_device_copy_async(m->dev, m->labels, labels,
                                      (size_t)batch * sizeof *labels, NULL));
    return DT_OK;
}

dt_status_t dt_model_forward_layers(dt_model_t *m, int batch, int train,
                                    int with_labels)
{
    for (int i = 0; i < m->nlayers; i++) {
        dt_layer_t *l = &m->layers[i];
        /* A layer that applies the next ones writes their output. */
        int out = i + 1 + l->fused;
        size_t nin = (size_t)batch * dt_layer_in_size(l),
               nout = (size_t)batch * dt_layer_out_size(&m->layers[out - 1]);
        const float *x = m->acts[l->src];
        DT_CHECK(dt_model_block_poison(m, i)); /* (tests) */
        m->wx = m->wx_at[i]; /* this step's float32 copies (bf16) */
        m->wy = m->wy_at[i];
        dt_model_io16(m, l, out); /* layers that take stored bf16 as is */
        float *y = l->io16 & 2 || !dt_model_act16(m, out) ? m->acts[out]
                                                          : m->wy;
        double t0 = prof_now(m);
        if (!(l->io16 & 1))
            DT_CHECK(dt_model_act_read(m, l->src, m->wx, nin, &x));
        if (l->io16 & 8) /* the add on stored bf16 */
            l->x2 = m->acts[l->skip];
        else if (l->skip >= 0) /* the add: widened into its own output
                                  (a float buffer of its size; out may
                                  be b) */
            DT_CHECK(dt_model_act_read(m, l->skip, y, nin, &l->x2));
        DT_CHECK(l->ops->forward(l, x, y, batch, train));
        if (!(l->io16 & 2))
            DT_CHECK(dt_model_act_store(m, out, y, nout));
        prof_add(m, 2 * i, t0);
        i = out - 1;
    }
    m->batch = batch;
    m->output.data = m->acts[m->nlayers];
    m->output.ndim = 2;
    m->output.shape[0] = batch;
    m->output.shape[1] = m->nclasses;
    m->output.shape[2] = m->output.shape[3] = 1;
    m->output.numel = (size_t)batch * m->nclasses;
    m->output.mem = m->dev->mem;
    double t0 = prof_now(m);
    DT_CHECK(dt_softmax_xent_rows(m->dev, m->acts[m->nlayers],
                                  with_labels ? m->labels : NULL, m->probs,
                                  m->rows, batch, m->nclasses,
                                  m->label_smoothing));
    prof_add(m, 2 * m->nlayers, t0);
    return DT_OK;
}

dt_status_t dt_model_forward(dt_model_t *m, const float *x, const int *labels,
                             int batch, int train, float *loss, int *correct)
{
    DT_CHECK(dt_model_forward_begin(m, x, labels, batch));
    DT_CHECK(dt_model_forward_layers(m, batch, train, labels != NULL));
    if (train)
        m->rng_counter++;
    if (labels)
        DT_CHECK(dt_model_read_loss(m, batch, loss, correct));
    else /* no read-back waited for the input copies */
        DT_CHECK(dt_device_sync(m->dev));
    m->trained = train && labels;
    return DT_OK;
}

dt_status_t dt_model_read_loss(dt_model_t *m, int batch, float *loss,
                               int *correct)
{
    const float *rows = m->rows;
    if (m->dev->kind == DT_DEVICE_CUDA) { /* waits for the stream */
        DT_CHECK(dt_device_copy(m->dev, m->host_rows, DT_MEM_HOST, m->rows,
                                DT_MEM_CUDA,
                                (size_t)batch * 2 * sizeof(float)));
        rows = m->host_rows;
    }
    dt_softmax_xent_sum(rows, batch, loss, correct);
    return DT_OK;
}

/* dst += src, n floats on the model's device */
static void add_into_cpu(float *restrict dst, const float *restrict src,
                         size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

static dt_status_t add_into(dt_device_t *dev, float *dst, const float *src,
                            size_t n)
{
    DT_CUDA_DISPATCH(dev, add(dev, dst, src, dst, n));
    add_into_cpu(dst, src, n);
    return DT_OK;
}

dt_status_t dt_model_backward(dt_model_t *m, dt_grad_ready_fn cb, void *arg)
{
    if (!m->trained) {
        dt_error("dt_model_backward needs a forward with train=1 and labels "
                 "just before it");
        return DT_ERR_INVALID;
    }
    /* One backward per forward: it writes gradients over activations that
     * have had their last use (model_arena.c), so a second one would run
     * on those and return garbage. */
    m->trained = 0;
    int batch = m->batch, L = m->nlayers;
    double t0 = prof_now(m);
    DT_CHECK(dt_model_block_poison(m, L)); /* (tests) */
    DT_CHECK(dt_softmax_xent_backward(m->dev, m->probs, m->labels,
                                      m->dacts[L], batch, m->nclasses,
                                      m->label_smoothing));
    if (m->loss_scale != 1.0f)
        DT_CHECK(dt_device_scale(m->dev, m->dacts[L], m->loss_scale,
                                 (size_t)batch * (size_t)m->nclasses, NULL));
    prof_add(m, 2 * L + 1, t0);
    /* Below the first layer with parameters nothing needs a gradient: that
     * layer computes no dx (for an MLP the largest of its matrix
     * products) and the layers before it are not run backward. */
    int first = dt_model_first_backward(m);
    if (m->dwritten)
        memset(m->dwritten, 0, (size_t)L + 1);
    for (int i = L - 1; i >= first; i--) {
        dt_layer_t *l = &m->layers[i];
        if (l->absorbed)
            continue; /* applied by the layer before */
        int out = i + 1 + l->fused;
        /* Activations after `first` depend on parameters and need their
         * gradient; one read by two layers (a residual block's input)
         * gets the second one added through dtmp. */
        float *dx = l->src > first ? m->dacts[l->src] : NULL;
        int accumulate = dx && m->dwritten && m->dwritten[l->src];
        /* this step's branch sum and float32 copies (model_arena.c) */
        DT_CHECK(dt_model_block_poison(m, 2 * L - i)); /* (tests) */
        float *dtmp = m->dtmp_at[2 * L - i];
        m->wx = m->wx_at[2 * L - i];
        m->wy = m->wy_at[2 * L - i];
        if ((accumulate || (l->skip >= 0 && l->fused && !dx)) && !dtmp) {
            dt_error("dt_model_backward: layer %d '%s' has no branch sum "
                     "planned (model_arena.c)", i, l->desc);
            return DT_ERR_INVALID;
        }
        if (accumulate)
            dx = dtmp;
        /* an add with its relu fused masks dy: the shortcut gets dx, so
         * it needs one even where the main path does not */
        float *masked = l->skip >= 0 && l->fused ? (dx ? dx : dtmp) : NULL;
        if (masked)
            dx = masked;
        t0 = prof_now(m);
        size_t n = (size_t)batch * dt_layer_in_size(l);
        const float *x = m->acts[l->src], *y = m->acts[out];
        if (m->act16) { /* widen what backward reads */
            int rx, ry;
            dt_model_backward_reads(l, &rx, &ry);
            size_t nout = (size_t)batch * dt_layer_out_size(l);
            if (rx && !(l->io16 & 4)) /* else the conv reads bf16 */
                DT_CHECK(dt_model_act_read(m, l->src, m->wx, n, &x));
            if (ry && !(l->io16 & 2)) /* else the relu reads bf16 */
                DT_CHECK(dt_model_act_read(m, out, m->wy, nout, &y));
        }
        DT_CHECK(l->ops->backward(l, x, y, m->dacts[out], dx, batch));
        if (accumulate)
            DT_CHECK(add_into(m->dev, m->dacts[l->src], dtmp, n));
        if (dx && m->dwritten && l->src > first)
            m->dwritten[l->src] = 1;
        if (l->skip > first) { /* the add's shortcut gets dy as well */
            const float *g = masked ? masked : m->dacts[out];
            if (m->dwritten[l->skip])
                DT_CHECK(add_into(m->dev, m->dacts[l->skip], g, n));
            else if (m->dev->kind == DT_DEVICE_CUDA) /* queued, no wait */
                DT_CHECK(dt_device_copy_async(m->dev, m->dacts[l->skip], g,
                                              n * sizeof(float), NULL));
            else
                memcpy(m->dacts[l->skip], g, n * sizeof(float));
            m->dwritten[l->skip] = 1;
        }
        prof_add(m, 2 * i + 1, t0);
        size_t len = l->nweights + l->nbias;
        /* No device synchronization: on cuda the range's kernels are
         * queued on dev->stream, and the callback records an event there
         * (grad_sync.c) that whoever reads the range waits for. */
        if (cb && len)
            DT_CHECK(cb(arg, l->param_offset, len));
    }
    return DT_OK;
}

dt_status_t dt_model_params(dt_model_t *m, float **params, float **grads,
                            size_t *n)
{
    if (!m->params) {
        dt_error("dt_model_params before dt_model_init");
        return DT_ERR_INVALID;
    }
    if (params)
        *params = m->params;
    if (grads)
        *grads = m->grads;
    if (n)
        *n = m->nparams;
    return DT_OK;
}

size_t dt_model_nparams(const dt_model_t *m) { return m->nparams; }

static double layer_flops(const dt_layer_t *l)
{
    if (l->ops == &dt_layer_conv2d) {
        double k = l->args[1];
        return 2.0 * k * k * (double)l->in_c * (double)dt_layer_out_size(l);
    }
    if (l->ops == &dt_layer_linear)
        return 2.0 * (double)dt_layer_in_size(l) * (double)dt_layer_out_size(l);
    return 0.0;
}

double dt_model_flops(const dt_model_t *m)
{
    double f = 0.0;
    for (int i = 0; i < m->nlayers; i++)
        f += layer_flops(&m->layers[i]);
    return f;
}

int dt_model_nlayers(const dt_model_t *m)
{
    return m->nlayers;
}

int dt_model_batchnorm_plane(const dt_model_t *m, int *layer)
{
    int best = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        if (l->ops != &dt_layer_batchnorm)
            continue;
        int plane = l->out_flat ? 1 : l->out_h * l->out_w;
        if (!best || plane < best) {
            best = plane;
            if (layer)
                *layer = i;
        }
    }
    return best;
}

dt_status_t dt_model_layer_cost(const dt_model_t *m, int i, size_t elem,
                                double *flops, double *bytes,
                                size_t *params)
{
    if (i < 0 || i >= m->nlayers) {
        dt_error("dt_model_layer_cost: layer %d of a model of %d layers "
                 "(0..%d)", i, m->nlayers, m->nlayers - 1);
        return DT_ERR_INVALID;
    }
    const dt_layer_t *l = &m->layers[i];
    *params = l->nweights + l->nbias;
    *flops = layer_flops(l);
    *bytes = (double)elem * (double)(dt_layer_in_size(l) +
                                     dt_layer_out_size(l));
    return DT_OK;
}

/* Layer l's parameter tensors in buffer order, weights then bias, each
 * when present: their lengths and kinds; returns how many (0 to 2).
 * Batchnorm's two are its scale and shift: normalization, not a weight
 * and a bias (the layer-wise optimizers leave them out of decay). */
static int layer_tensors(const dt_layer_t *l, size_t len[2],
                         unsigned char kind[2])
{
    int norm = l->ops == &dt_layer_batchnorm, n = 0;
    if (l->nweights > 0) {
        len[n] = l->nweights;
        kind[n++] = norm ? DT_TENSOR_NORM : DT_TENSOR_WEIGHT;
    }
    if (l->nbias > 0) {
        len[n] = l->nbias;
        kind[n++] = norm ? DT_TENSOR_NORM : DT_TENSOR_BIAS;
    }
    return n;
}

dt_status_t dt_model_param_tensors(const dt_model_t *m, size_t **offsets,
                                   size_t *ntensors)
{
    size_t cap = 1 + 2 * (size_t)m->nlayers, n = 0;
    size_t *off = malloc(cap * sizeof *off);
    if (!off)
        return DT_ERR_NOMEM;
    off[0] = 0;
    for (int i = 0; i < m->nlayers; i++) {
        size_t len[2], at = m->layers[i].param_offset;
        unsigned char kind[2];
        int k = layer_tensors(&m->layers[i], len, kind);
        for (int j = 0; j < k; j++)
            off[++n] = at += len[j];
    }
    if (off[n] != m->nparams) {
        dt_error("model: parameter tensors end at %zu of %zu", off[n],
                 m->nparams);
        free(off);
        return DT_ERR_INVALID;
    }
    *offsets = off;
    *ntensors = n;
    return DT_OK;
}

dt_status_t dt_model_param_kinds(const dt_model_t *m, unsigned char **kinds,
                                 size_t *ntensors)
{
    /* At least one byte: malloc(0) may give NULL. */
    unsigned char *out = malloc(1 + 2 * (size_t)m->nlayers);
    size_t n = 0;
    if (!out)
        return DT_ERR_NOMEM;
    for (int i = 0; i < m->nlayers; i++) {
        size_t len[2];
        int k = layer_tensors(&m->layers[i], len, out + n);
        n += (size_t)k;
    }
    *kinds = out;
    *ntensors = n;
    return DT_OK;
}

dt_status_t dt_model_buffers(dt_model_t *m, float **buffers, size_t *n)
{
    if (!m->params) {
        dt_error("dt_model_buffers before dt_model_init");
        return DT_ERR_INVALID;
    }
    if (buffers)
        *buffers = m->buffers;
    if (n)
        *n = m->nbuffers;
    return DT_OK;
}

size_t dt_model_nbuffers(const dt_model_t *m) { return m->nbuffers; }

dt_status_t dt_model_set_loss_scale(dt_model_t *m, float scale)
{
    if (!(scale > 0.0f) || !isfinite(scale)) {
        dt_error("loss scale %g: must be a finite number > 0",
                 (double)scale);
        return DT_ERR_INVALID;
    }
    m->loss_scale = scale;
    return DT_OK;
}

dt_status_t dt_model_set_label_smoothing(dt_model_t *m, float eps)
{
    if (!(eps >= 0.0f && eps < 1.0f)) {
        dt_error("label smoothing %g is outside [0, 1)", (double)eps);
        return DT_ERR_INVALID;
    }
    m->label_smoothing = eps;
    return DT_OK;
}

const dt_tensor_t *dt_model_output(const dt_model_t *m)
{
    return m->output.data ? &m->output : NULL;
}

void dt_model_get_rng(const dt_model_t *m, uint64_t *seed, uint64_t *counter)
{
    if (seed)
        *seed = m->rng_seed;
    if (counter)
        *counter = m->rng_counter;
}

void dt_model_set_rng(dt_model_t *m, uint64_t seed, uint64_t counter)
{
    m->rng_seed = seed;
    m->rng_counter = counter;
}

dt_device_t *dt_model_device(const dt_model_t *m) { return m->dev; }

static void shape_text(char *buf, size_t len, int c, int h, int w, int flat)
{
    if (flat)
        snprintf(buf, len, "%d", c);
    else
        snprintf(buf, len, "%dx%dx%d", c, h, w);
}

/* One line per layer, the layers a stage made indented under a line per
 * block, then the totals, as torchsummary prints a model. */
void dt_model_summary(const dt_model_t *m, dt_model_line_fn fn, void *arg)
{
    if (!fn) /* nowhere to put the lines */
        return;
    char line[200], shape[48];
    shape_text(shape, sizeof shape, m->in_c, m->in_h, m->in_w, 0);
    snprintf(line, sizeof line, "%-4s %-44s %14s %10s", "#", "layer",
             "output", "params");
    fn(arg, line);
    snprintf(line, sizeof line, "%-4s %-44s %14s %10s", "", "input", shape,
             "");
    fn(arg, line);
    int stage = 0, block = 0;
    size_t trainable = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        if (l->stage && (l->stage != stage || l->block != block)) {
            snprintf(line, sizeof line, "%-4s   stage %d, block %d", "",
                     l->stage, l->block);
            fn(arg, line);
        }
        stage = l->stage, block = l->block;
        char name[80];
        snprintf(name, sizeof name, "%s%s%s", l->stage ? "    " : "",
                 l->shortcut ? "shortcut: " : "", l->desc);
        shape_text(shape, sizeof shape, l->out_c, l->out_h, l->out_w,
                   l->out_flat);
        size_t n = l->nweights + l->nbias;
        trainable += n;
        snprintf(line, sizeof line, "%-4d %-44s %14s %10zu", i, name, shape,
                 n);
        fn(arg, line);
    }
    snprintf(line, sizeof line, "total: %zu parameters (%.2fM), %zu "
             "non-trainable buffer floats (batchnorm running statistics)",
             trainable, (double)trainable / 1e6, m->nbuffers);
    fn(arg, line);
}

static void log_line(void *arg, const char *line) { dt_info("  %s", line); }

void dt_model_log_summary(const dt_model_t *m)
{
    dt_info("model: input %dx%dx%d, %d classes, %zu parameters", m->in_c,
            m->in_h, m->in_w, m->nclasses, m->nparams);
    dt_model_summary(m, log_line, NULL);
}

dt_status_t dt_model_set_profiling(dt_model_t *m, int on)
{
    free(m->prof);
    m->prof = NULL;
    if (on && !(m->prof = calloc(2 * (size_t)m->nlayers + 2,
                                 sizeof *m->prof)))
        return DT_ERR_NOMEM;
    return DT_OK;
}

void dt_model_profile(const dt_model_t *m, int steps, dt_model_line_fn fn,
                      void *arg)
{
    if (!m->prof || steps < 1 || !fn)
        return;
    char line[200];
    double total = 0.0;
    for (int i = 0; i < 2 * m->nlayers + 2; i++)
        total += m->prof[i];
    snprintf(line, sizeof line, "%-4s %-44s %9s %9s %6s", "#", "layer",
             "fwd_ms", "bwd_ms", "share");
    fn(arg, line);
    for (int i = 0; i <= m->nlayers; i++) {
        double f = m->prof[2 * i], b = m->prof[2 * i + 1];
        if (f == 0.0 && b == 0.0)
            continue;
        const dt_layer_t *l = i < m->nlayers ? &m->layers[i] : NULL;
        char name[80];
        if (l)
            snprintf(name, sizeof name, "%s%s%s", l->shortcut ? "sc: " : "",
                     l->desc, l->fused == 2 ? " +relu+pool"
                              : l->fused ? " +relu" : "");
        else
            snprintf(name, sizeof name, "softmax_xent");
        snprintf(line, sizeof line, "%-4d %-44s %9.3f %9.3f %5.1f%%", i,
                 name, 1e3 * f / steps, 1e3 * b / steps,
                 total > 0 ? 100.0 * (f + b) / total : 0.0);
        fn(arg, line);
    }
    snprintf(line, sizeof line, "%-4s %-44s %9s %9.3f", "", "total", "",
             1e3 * total / steps);
    fn(arg, line);
}

void dt_model_free(dt_model_t *m)
{
    if (!m)
        return;
    free(m->prof);
    if (m->dev) {
        dt_model_free_buffers(m); /* and the captured step */
        dt_device_free(m->dev, m->params);
        dt_device_free(m->dev, m->grads);
        dt_device_free(m->dev, m->buffers);
        dt_device_free(m->dev, m->zeros);
        dt_device_free(m->dev, m->junk);
        if (m->own_dev)
            dt_device_close(m->dev);
    }
    free(m->graphs.ready);
    free(m->layers);
    free(m);
}

void dt_model_set_sync_bn(dt_model_t *m, dt_model_allreduce_fn fn, void *arg)
{
    m->allreduce = fn;
    m->allreduce_arg = arg;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].ops == &dt_layer_batchnorm) {
            m->layers[i].allreduce = fn;
            m->layers[i].allreduce_arg = arg;
        }
}
