/* model_memory.c — what the model's device memory is for
 * (dt_model_memory), counted from the sizes model.c, model_init.c and
 * model_arena.c allocate: the trainer reports it beside the GPU's own
 * count, so a memory target can be read by part. */
#include "config.h"

#include <string.h>

#include "model.h"

void dt_model_memory(const dt_model_t *m, dt_model_memory_t *out)
{
    memset(out, 0, sizeof *out);
    const size_t f = sizeof(float);
    size_t nobias = 0;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].no_bias && (size_t)m->layers[i].out_c > nobias)
            nobias = (size_t)m->layers[i].out_c;
    out->params = (2 * m->nparams + m->nbuffers + 2 * nobias) * f;
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
