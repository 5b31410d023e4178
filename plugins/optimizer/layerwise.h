/* layerwise.h — what the layer-wise optimizers (lars, lamb) share: the
 * parameter tensors' boundaries (the optional set_tensors op of
 * dt_optimizer_ops_t; without it the whole vector is one tensor), the L2
 * norm of a range, and parameters in CUDA memory stepped on the host.
 *
 * Their state (momentum; m and v) stays in host memory on either device:
 * with CUDA parameters each step copies params and grads to the host,
 * steps there and copies params back (dt_gpu_copy, ordered after the
 * trainer's stream). Slower than a kernel, the same numbers as the CPU
 * path; the state blob is the same on both devices. */
#ifndef DT_LAYERWISE_H
#define DT_LAYERWISE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optim_common.h"

typedef struct layerwise {
    const char *name;
    size_t n;
    size_t *offsets;   /* ntensors + 1 boundaries, host                 */
    size_t ntensors;
    int cuda;          /* params and grads are in CUDA memory           */
    float *hp, *hg;    /* cuda: host copies of params and grads         */
} layerwise_t;

static inline dt_status_t layerwise_set(layerwise_t *lw, const size_t *off,
                                        size_t ntensors)
{
    if (ntensors < 1 || !off || off[0] != 0 || off[ntensors] != lw->n) {
        dt_error("optimizer %s: tensor boundaries must run from 0 to the "
                 "%zu parameters", lw->name, lw->n);
        return DT_ERR_INVALID;
    }
    for (size_t i = 0; i < ntensors; i++)
        if (off[i + 1] <= off[i]) {
            dt_error("optimizer %s: tensor %zu is empty or out of order "
                     "([%zu, %zu))", lw->name, i, off[i], off[i + 1]);
            return DT_ERR_INVALID;
        }
    size_t *copy = malloc((ntensors + 1) * sizeof *copy);
    if (!copy)
        return DT_ERR_NOMEM;
    memcpy(copy, off, (ntensors + 1) * sizeof *copy);
    free(lw->offsets);
    lw->offsets = copy;
    lw->ntensors = ntensors;
    return DT_OK;
}

static inline dt_status_t layerwise_init(layerwise_t *lw, const char *name,
                                         size_t n, dt_mem_t mem)
{
    memset(lw, 0, sizeof *lw);
    lw->name = name;
    lw->n = n;
    optim_mem_t om;
    DT_CHECK(optim_mem_init(name, mem, &om));
    lw->cuda = om.cuda;
    if (lw->cuda) {
        lw->hp = malloc((n ? n : 1) * sizeof(float));
        lw->hg = malloc((n ? n : 1) * sizeof(float));
        if (!lw->hp || !lw->hg)
            return DT_ERR_NOMEM;
    }
    size_t whole[2] = {0, n};
    return n ? layerwise_set(lw, whole, 1) : DT_OK;
}

static inline void layerwise_fini(layerwise_t *lw)
{
    free(lw->offsets);
    free(lw->hp);
    free(lw->hg);
}

/* sqrt(sum x^2) over [0, n), accumulated in double. */
static inline double layerwise_norm(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return sqrt(s);
}

/* The host params and grads a step works on (copies for CUDA). */
static inline dt_status_t layerwise_begin(layerwise_t *lw, float **p,
                                          const float **g, void *stream)
{
    if (!lw->cuda)
        return DT_OK;
    size_t bytes = lw->n * sizeof(float);
    DT_CHECK(dt_gpu_copy(lw->hp, DT_MEM_HOST, *p, DT_MEM_CUDA, bytes, stream));
    DT_CHECK(dt_gpu_copy(lw->hg, DT_MEM_HOST, *g, DT_MEM_CUDA, bytes, stream));
    *p = lw->hp;
    *g = lw->hg;
    return DT_OK;
}

static inline dt_status_t layerwise_end(layerwise_t *lw, float *p,
                                        void *stream)
{
    if (!lw->cuda)
        return DT_OK;
    return dt_gpu_copy(p, DT_MEM_CUDA, lw->hp, DT_MEM_HOST,
                       lw->n * sizeof(float), stream);
}

#endif /* DT_LAYERWISE_H */
