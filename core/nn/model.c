/* model.c — forward and backward through the layer list, activation
 * buffers, and the small accessors of dt/nn.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "model.h"

static void free_buffers(dt_model_t *m)
{
    for (int i = 0; m->acts && i <= m->nlayers; i++) {
        dt_device_free(m->dev, m->acts[i]);
        dt_device_free(m->dev, m->dacts[i]);
    }
    free(m->acts);
    free(m->dacts);
    dt_device_free(m->dev, m->scratch);
    dt_device_free(m->dev, m->probs);
    dt_device_free(m->dev, m->rows);
    dt_device_free(m->dev, m->labels);
    m->acts = m->dacts = NULL;
    m->scratch = m->probs = m->rows = NULL;
    m->labels = NULL;
    m->cap = 0;
}

static dt_status_t dev_floats(dt_model_t *m, size_t n, float **out)
{
    return dt_device_alloc(m->dev, n * sizeof(float), (void **)out);
}

/* Buffers for `batch` samples; grown (never shrunk) on demand. */
static dt_status_t ensure_capacity(dt_model_t *m, int batch)
{
    if (batch <= m->cap)
        return DT_OK;
    free_buffers(m);
    m->acts = calloc((size_t)m->nlayers + 1, sizeof *m->acts);
    m->dacts = calloc((size_t)m->nlayers + 1, sizeof *m->dacts);
    if (!m->acts || !m->dacts)
        return DT_ERR_NOMEM;
    size_t in = (size_t)m->in_c * m->in_h * m->in_w, scratch = 0;
    DT_CHECK(dev_floats(m, (size_t)batch * in, &m->acts[0]));
    for (int i = 0; i < m->nlayers; i++) {
        size_t n = (size_t)batch * dt_layer_out_size(&m->layers[i]);
        DT_CHECK(dev_floats(m, n, &m->acts[i + 1]));
        DT_CHECK(dev_floats(m, n, &m->dacts[i + 1]));
        scratch += m->layers[i].ops->scratch_floats(&m->layers[i], batch);
    }
    DT_CHECK(dev_floats(m, scratch, &m->scratch));
    size_t off = 0;
    for (int i = 0; i < m->nlayers; i++) {
        m->layers[i].scratch = m->scratch + off;
        off += m->layers[i].ops->scratch_floats(&m->layers[i], batch);
    }
    DT_CHECK(dev_floats(m, (size_t)batch * m->nclasses, &m->probs));
    DT_CHECK(dev_floats(m, (size_t)batch * 2, &m->rows));
    DT_CHECK(dt_device_alloc(m->dev, (size_t)batch * sizeof(int),
                             (void **)&m->labels));
    m->cap = batch;
    return DT_OK;
}

dt_status_t dt_model_set_conv_algo(dt_model_t *m, dt_conv_algo_t algo)
{
    if (algo != DT_CONV_AUTO && algo != DT_CONV_IM2COL &&
        algo != DT_CONV_WINOGRAD) {
        dt_error("dt_model_set_conv_algo: unknown algorithm %d", (int)algo);
        return DT_ERR_INVALID;
    }
    m->conv_algo = algo;
    if (!m->dev)
        return DT_OK; /* dt_model_init picks */
    free_buffers(m); /* the scratch sizes change */
    m->trained = 0;  /* and the last forward's activations are gone */
    dt_model_pick_conv(m);
    return DT_OK;
}

dt_status_t dt_conv_algo_parse(const char *name, dt_conv_algo_t *algo)
{
    static const char *const names[] = {"auto", "im2col", "winograd"};
    for (int i = 0; i < 3; i++)
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

dt_status_t dt_model_forward(dt_model_t *m, const float *x, const int *labels,
                             int batch, int train, float *loss, int *correct)
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
    if (labels)
        DT_CHECK(check_labels(m, labels, batch));
    DT_CHECK(ensure_capacity(m, batch));
    dt_mem_t mem = m->dev->mem;
    size_t in = (size_t)m->in_c * m->in_h * m->in_w;
    DT_CHECK(dt_device_copy(m->dev, m->acts[0], mem, x, DT_MEM_HOST,
                            (size_t)batch * in * sizeof *x));
    if (labels)
        DT_CHECK(dt_device_copy(m->dev, m->labels, mem, labels, DT_MEM_HOST,
                                (size_t)batch * sizeof *labels));
    for (int i = 0; i < m->nlayers; i++) {
        dt_layer_t *l = &m->layers[i];
        /* A layer that applies the next ones writes their output. */
        int out = i + 1 + l->fused;
        DT_CHECK(l->ops->forward(l, m->acts[i], m->acts[out], batch, train));
        i = out - 1;
    }
    m->batch = batch;
    m->output.data = m->acts[m->nlayers];
    m->output.ndim = 2;
    m->output.shape[0] = batch;
    m->output.shape[1] = m->nclasses;
    m->output.shape[2] = m->output.shape[3] = 1;
    m->output.numel = (size_t)batch * m->nclasses;
    m->output.mem = mem;
    if (train)
        m->rng_counter++;
    DT_CHECK(dt_softmax_xent_forward(m->dev, m->acts[m->nlayers],
                                     labels ? m->labels : NULL, m->probs,
                                     m->rows, batch, m->nclasses, loss,
                                     correct));
    m->trained = train && labels;
    return DT_OK;
}

dt_status_t dt_model_backward(dt_model_t *m, dt_grad_ready_fn cb, void *arg)
{
    if (!m->trained) {
        dt_error("dt_model_backward needs a forward with train=1 and labels "
                 "just before it");
        return DT_ERR_INVALID;
    }
    int batch = m->batch, L = m->nlayers;
    DT_CHECK(dt_softmax_xent_backward(m->dev, m->probs, m->labels,
                                      m->dacts[L], batch, m->nclasses));
    /* Below the first layer with parameters nothing needs a gradient: that
     * layer computes no dx (for an MLP the largest of its matrix
     * products) and the layers before it are not run backward. */
    int first = 0;
    while (first < L - 1 &&
           m->layers[first].nweights + m->layers[first].nbias == 0)
        first++;
    for (int i = L - 1; i >= first; i--) {
        dt_layer_t *l = &m->layers[i];
        if (l->absorbed)
            continue; /* applied by the layer before */
        int out = i + 1 + l->fused;
        DT_CHECK(l->ops->backward(l, m->acts[i], m->acts[out], m->dacts[out],
                                  i > first ? m->dacts[i] : NULL, batch));
        size_t len = l->nweights + l->nbias;
        if (cb && len) {
            DT_CHECK(dt_device_sync(m->dev));
            DT_CHECK(cb(arg, l->param_offset, len));
        }
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

void dt_model_log_summary(const dt_model_t *m)
{
    dt_info("model: input %dx%dx%d, %d classes, %zu parameters", m->in_c,
            m->in_h, m->in_w, m->nclasses, m->nparams);
    for (int i = 0; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        dt_info("  %2d %-8s -> %dx%dx%d%s  %zu params", i, l->ops->name,
                l->out_c, l->out_h, l->out_w, l->out_flat ? " (flat)" : "",
                l->nweights + l->nbias);
    }
}

void dt_model_free(dt_model_t *m)
{
    if (!m)
        return;
    if (m->dev) {
        free_buffers(m);
        dt_device_free(m->dev, m->params);
        dt_device_free(m->dev, m->grads);
        if (m->own_dev)
            dt_device_close(m->dev);
    }
    free(m->layers);
    free(m);
}
