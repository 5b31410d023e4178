/* model_grads.c — where backward keeps the activations' gradients.
 *
 * dacts[k], the gradient at activation k, is needed only from the moment
 * a layer reading activation k writes it (in backward order: the highest
 * such layer; for the logits, the loss) until the layer producing
 * activation k has read it as its dy. Outside that window the memory can
 * hold another gradient, so the gradients share a few buffers of the
 * largest activation's size instead of one buffer each: in a chain two
 * are live at a time, across a residual block one more (the block input's
 * gradient, waiting for the shortcut and the main path). A ResNet-18 at
 * batch 256 on 28x28 inputs needed 1.7 GB of gradient buffers one each,
 * about as much as its activations (measured on an H200, 2026-11-26:
 * dt's peak 4.1 GB against PyTorch's 3.5 GB in fp32); shared, a handful
 * of 51 MB buffers.
 *
 * A layer's dy (its output's gradient) and dx (its input's) are live at
 * the same step, so they never share a buffer. */
#include "config.h"

#include <stdlib.h>

#include "model.h"

/* The first layer backward runs (below it nothing needs a gradient): the
 * first with parameters, as dt_model_backward decides. */
int dt_model_first_backward(const dt_model_t *m)
{
    int first = 0, L = m->nlayers;
    while (first < L - 1 &&
           m->layers[first].nweights + m->layers[first].nbias == 0)
        first++;
    return first;
}

static size_t act_size(const dt_model_t *m, int k)
{
    return k == 0 ? (size_t)m->in_c * m->in_h * m->in_w
                  : dt_layer_out_size(&m->layers[k - 1]);
}

dt_status_t dt_model_plan_grads(dt_model_t *m, int batch)
{
    int L = m->nlayers, first = dt_model_first_backward(m);
    /* w[k]: the backward step that first writes dacts[k] (-1: never);
     * r[k]: the step that reads it last (its producer); the loss is step
     * L, above every layer. */
    int *w = malloc(2 * ((size_t)L + 1) * sizeof *w), *r = w + L + 1;
    int *order = malloc(((size_t)L + 1) * sizeof *order);
    if (!w || !order) {
        free(w);
        free(order);
        return DT_ERR_NOMEM;
    }
    for (int k = 0; k <= L; k++)
        w[k] = r[k] = -1;
    w[L] = L;
    for (int i = first; i < L; i++) {
        const dt_layer_t *l = &m->layers[i];
        if (l->absorbed)
            continue;
        r[i + 1 + l->fused] = i;
        if (l->src > first && w[l->src] < i)
            w[l->src] = i;
        if (l->skip > first && w[l->skip] < i)
            w[l->skip] = i;
    }
    /* in backward order of first write */
    int n = 0;
    size_t largest = 0;
    for (int k = L; k >= 0; k--)
        if (w[k] >= 0) {
            order[n++] = k;
            if (act_size(m, k) > largest)
                largest = act_size(m, k);
        }
    for (int a = 1; a < n; a++) /* insertion sort by w, descending */
        for (int b = a; b > 0 && w[order[b]] > w[order[b - 1]]; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    /* busy[j]: the step of the last read of buffer j's gradient; free for
     * a gradient first written at a lower step */
    int *busy = malloc(((size_t)n + 1) * sizeof *busy);
    m->dpool = calloc((size_t)n + 1, sizeof *m->dpool);
    dt_status_t st = busy && m->dpool ? DT_OK : DT_ERR_NOMEM;
    m->npool = 0;
    m->dpool_floats = (size_t)batch * largest;
    for (int a = 0; st == DT_OK && a < n; a++) {
        int k = order[a], j = 0;
        while (j < m->npool && !(w[k] < busy[j]))
            j++;
        if (j == m->npool) {
            st = dt_device_alloc(m->dev, (size_t)batch * largest *
                                             sizeof(float),
                                 (void **)&m->dpool[j]);
            if (st != DT_OK)
                break;
            m->npool++;
        }
        busy[j] = r[k]; /* -1 (never read): busy to the end */
        m->dacts[k] = m->dpool[j];
    }
    free(busy);
    free(w);
    free(order);
    return st;
}
