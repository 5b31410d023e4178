/* model_memory.c — what the model's device memory is for
 * (dt_model_memory), counted from the sizes model.c, model_init.c and
 * model_grads.c allocate: the trainer reports it beside the GPU's own
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
    size_t cap = (size_t)m->cap, in = (size_t)m->in_c * m->in_h * m->in_w,
           largest = in;
    out->activations = cap * in * f;
    for (int i = 0; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        size_t n = cap * dt_layer_out_size(l);
        if (dt_layer_out_size(l) > largest)
            largest = dt_layer_out_size(l);
        out->scratch += dt_model_scratch_floats(l, m->cap) * f;
        if (l->inplace) /* writes its input's buffer */
            continue;
        if (dt_model_act16(m, i + 1))
            out->activations += (n + 1) / 2 * f;
        else if (!(i + 1 < m->nlayers && m->layers[i + 1].absorbed))
            out->activations += n * f;
    }
    out->act_grads = (size_t)m->npool * m->dpool_floats * f +
                     (m->dtmp ? cap * largest * f : 0);
    if (m->act16)
        out->act_copies = 2 * cap * largest * f;
    out->scratch += cap * ((size_t)m->nclasses + 2) * f + cap * sizeof(int);
}

long long dt_model_bf16_saving(const dt_model_t *m, int batch)
{
    const long long f = (long long)sizeof(float), b = batch;
    long long saved = 0;
    size_t largest = (size_t)m->in_c * m->in_h * m->in_w;
    for (int i = 0; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        long long n = b * (long long)dt_layer_out_size(l);
        if (dt_layer_out_size(l) > largest)
            largest = dt_layer_out_size(l);
        /* stored between the input and the logits, in a buffer of its own
         * (relus in place write their input's: decided at init, so a
         * relu is counted as in place here whenever it may be) */
        if (i + 1 < m->nlayers && !(l->ops == &dt_layer_relu && l->src == i))
            saved += n * f - (n + 1) / 2 * f;
    }
    return saved - 2 * b * (long long)largest * f; /* wx, wy */
}
