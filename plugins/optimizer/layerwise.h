/* layerwise.h — what the layer-wise optimizers (lars, lamb) share: the
 * parameter tensors' boundaries (the optional set_tensors op of
 * dt_optimizer_ops_t; without it the whole vector is one tensor) and
 * kinds (set_tensor_kinds: with exclude_bias_norm, biases and batchnorm's
 * scale and shift get the plain step, no trust ratio or weight decay, as
 * in the reference recipes), the L2 norm of a range, and parameters in
 * CUDA memory stepped on the host.
 *
 * Their state (momentum; m and v) stays in host memory on either device:
 * with CUDA parameters each step copies params and grads to the host,
 * steps there and copies params back (dt_gpu_copy, ordered after the
 * trainer's stream). Slower than a kernel, the same numbers as the CPU
 * path; the state blob is the same on both devices. */
#ifndef DT_LAYERWISE_H
#define DT_LAYERWISE_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "optim_common.h"

typedef struct layerwise {
    const char *name;
    size_t n;
    size_t *offsets;   /* ntensors + 1 boundaries, host                 */
    size_t ntensors;
    unsigned char *kinds; /* ntensors dt_tensor_kind_t; NULL: not given */
    int exclude;       /* exclude_bias_norm: plain step for non-weights */
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
    /* Kinds given for the old tensors would describe the wrong ones. */
    free(lw->kinds);
    lw->kinds = NULL;
    return DT_OK;
}

/* set_tensor_kinds: one known kind per tensor of set_tensors. */
static inline dt_status_t layerwise_set_kinds(layerwise_t *lw,
                                              const unsigned char *kinds,
                                              size_t ntensors)
{
    if (ntensors != lw->ntensors || (ntensors && !kinds)) {
        dt_error("optimizer %s: %zu tensor kinds%s for the %zu tensors of "
                 "set_tensors; give one kind per tensor, in its order",
                 lw->name, ntensors, kinds ? "" : " (a NULL table)",
                 lw->ntensors);
        return DT_ERR_INVALID;
    }
    /* A kind added after this plugin was built steps as a weight: an
     * older plugin keeps working with a newer trainer. */
    unsigned char *copy = malloc(ntensors ? ntensors : 1);
    if (!copy)
        return DT_ERR_NOMEM;
    if (ntensors)
        memcpy(copy, kinds, ntensors);
    free(lw->kinds);
    lw->kinds = copy;
    return DT_OK;
}

/* Tensor t gets the plain step (trust 1, no weight decay): a bias or a
 * normalization tensor with exclude_bias_norm. Without kinds, none. */
static inline int layerwise_plain(const layerwise_t *lw, size_t t)
{
    return lw->exclude && lw->kinds &&
           (lw->kinds[t] == DT_TENSOR_BIAS || lw->kinds[t] == DT_TENSOR_NORM);
}

/* The exclude_bias_norm key of [section]; unset: yes, the reference
 * recipes' behaviour. */
static inline dt_status_t layerwise_exclude_key(const dt_config_t *cfg,
                                                const char *section, bool *on)
{
    *on = true;
    if (cfg && dt_config_get(cfg, section, "exclude_bias_norm"))
        return dt_config_get_bool(cfg, section, "exclude_bias_norm", on);
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
    free(lw->kinds);
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
