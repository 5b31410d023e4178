/* model_memory.c — what the model's device memory is for
 * (dt_model_memory), counted from the sizes model.c, model_init.c and
 * model_arena.c allocate: the trainer reports it beside the GPU's own
 * count, so a memory target can be read by part. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Parameters, their gradients, batchnorm buffers and bias=no's zeros
 * and junk, as dt_model_init allocates them. */
static size_t param_bytes(const dt_model_t *m)
{
    size_t nobias = 0;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].no_bias && (size_t)m->layers[i].out_c > nobias)
            nobias = (size_t)m->layers[i].out_c;
    return (2 * m->nparams + m->nbuffers + 2 * nobias) * sizeof(float);
}

void dt_model_memory(const dt_model_t *m, dt_model_memory_t *out)
{
    memset(out, 0, sizeof *out);
    const size_t f = sizeof(float);
    out->params = param_bytes(m);
    if (!m->acts || m->cap < 1)
        return;
    size_t cap = (size_t)m->cap, in = (size_t)m->in_c * m->in_h * m->in_w;
    /* the input and the logits, then the block (model_arena.c) by what
     * each kind adds to it: the activations alone, what the gradients
     * and branch sums add where they find no memory the activations
     * left, what the float32 copies add */
    out->activations = cap * (in + dt_layer_out_size(&m->layers[m->nlayers -
                                                                1])) * f +
                       m->block_acts;
    out->act_grads = m->block_grads;
    out->act_copies = m->block_copies;
    for (int i = 0; i < m->nlayers; i++)
        out->scratch += dt_model_scratch_floats(&m->layers[i], m->cap) * f;
    out->scratch += cap * ((size_t)m->nclasses + 2) * f + cap * sizeof(int);
}

long long dt_model_bf16_saving(const dt_model_t *m, int batch)
{
    /* the block planned both ways: bf16 halves the stored activations
     * and adds the float32 copies (relus in place are decided at init:
     * before it, none is counted as in place) */
    return (long long)dt_model_block_bytes(m, batch, 0) -
           (long long)dt_model_block_bytes(m, batch, 1);
}

dt_status_t dt_model_memory_estimate(const dt_model_t *m, int batch,
                                     int on_gpu, dt_model_memory_t *out)
{
    memset(out, 0, sizeof *out);
    if (!m || m->nlayers < 1 || batch < 1) {
        dt_error("dt_model_memory_estimate: %s", !m ? "no model (NULL)"
                                                 : m->nlayers < 1
                                                     ? "a model of no layers"
                                                     : "a batch below 1");
        return DT_ERR_INVALID;
    }
    /* the layers' fusion, decided on a copy as dt_model_init will decide
     * it for this kind of device: it sets which activations have a
     * buffer (the copy's layers share the model's pointers: only read) */
    dt_model_t copy = *m;
    copy.layers = malloc((size_t)m->nlayers * sizeof *copy.layers);
    if (!copy.layers)
        return DT_ERR_NOMEM;
    memcpy(copy.layers, m->layers, (size_t)m->nlayers * sizeof *copy.layers);
    if (!m->dev) /* else dt_model_init decided it already */
        dt_model_plan_fusion(&copy, !on_gpu);
    size_t block[3];
    int planned = dt_model_block_parts(&copy, batch, copy.act16, block);
    free(copy.layers);
    if (planned != 0)
        return DT_ERR_NOMEM;
    const size_t f = sizeof(float), b = (size_t)batch;
    size_t in = (size_t)m->in_c * m->in_h * m->in_w;
    out->params = param_bytes(m);
    out->activations =
        b * (in + dt_layer_out_size(&m->layers[m->nlayers - 1])) * f +
        block[0];
    out->act_grads = block[1];
    out->act_copies = block[2];
    /* the loss's: its probabilities, rows and labels; the layers' own
     * scratch depends on choices dt_model_init makes (im2col or
     * Winograd, the layout): left out, this stays a lower bound */
    out->scratch = b * ((size_t)m->nclasses + 2) * f + b * sizeof(int);
    return DT_OK;
}
