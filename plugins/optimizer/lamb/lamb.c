/* lamb.c — LAMB, layer-wise adaptive moments (You et al. 2019, "Large
 * Batch Optimization for Deep Learning: Training BERT in 76 minutes"):
 * Adam's moments, and for each parameter tensor w a trust ratio on the
 * update. With t the step (from 1):
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd * w
 *   trust = ||w|| / ||r||      (1 when ||w|| or ||r|| is 0)
 *   w -= lr * trust * r
 * Tensors come from the optional set_tensors op (the trainer gives each
 * layer's weights and bias); without it the whole vector is one. With
 * exclude_bias_norm and kinds from set_tensor_kinds, biases and
 * batchnorm's scale and shift get wd 0 and trust 1 (the Adam update), as
 * in the reference BERT recipe. */
#include <stdlib.h>

#include "../layerwise.h"

#define SECTION "optimizer.lamb"

typedef struct lamb {
    layerwise_t lw;
    float beta1, beta2, eps, weight_decay;
    float *m, *v, *r; /* host; r: one step's update (scratch) */
} lamb_t;

static const dt_key_spec_t lamb_keys[] = {
    {"beta1", DT_KEY_DOUBLE, "0.9", "decay of the gradient average"},
    {"beta2", DT_KEY_DOUBLE, "0.999", "decay of the squared average"},
    {"eps", DT_KEY_DOUBLE, "1e-6", "added to the denominator (above 0)"},
    {"weight_decay", DT_KEY_DOUBLE, "0.01",
     "decoupled decay added to the update before the trust ratio"},
    {"exclude_bias_norm", DT_KEY_BOOL, "yes",
     "biases and batchnorm's scale and shift: the Adam update, no trust "
     "ratio or weight decay (no: every tensor alike)"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static void lamb_destroy(void *state)
{
    lamb_t *s = state;
    if (s) {
        layerwise_fini(&s->lw);
        free(s->m);
        free(s->v);
        free(s->r);
    }
    free(s);
}

static dt_status_t lamb_create(const dt_config_t *cfg, size_t nparams,
                               dt_mem_t mem, void **state)
{
    *state = NULL;
    double b1, b2, eps, wd;
    bool exclude;
    DT_CHECK(optim_number(cfg, SECTION, "beta1", 0.9, 0, 1,
                          OPTIM_OPEN_HI, &b1));
    DT_CHECK(optim_number(cfg, SECTION, "beta2", 0.999, 0, 1,
                          OPTIM_OPEN_HI, &b2));
    DT_CHECK(optim_number(cfg, SECTION, "eps", 1e-6, 0, 1,
                          OPTIM_OPEN_LO, &eps));
    DT_CHECK(optim_number(cfg, SECTION, "weight_decay", 0.01, 0, 1e3, 0,
                          &wd));
    DT_CHECK(layerwise_exclude_key(cfg, SECTION, &exclude));
    lamb_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    dt_status_t st = layerwise_init(&s->lw, "lamb", nparams, mem);
    s->lw.exclude = exclude;
    s->beta1 = (float)b1, s->beta2 = (float)b2;
    s->eps = (float)eps, s->weight_decay = (float)wd;
    size_t n = nparams ? nparams : 1;
    if (st == DT_OK && (!(s->m = calloc(n, sizeof *s->m)) ||
                        !(s->v = calloc(n, sizeof *s->v)) ||
                        !(s->r = calloc(n, sizeof *s->r))))
        st = DT_ERR_NOMEM;
    if (st != DT_OK) {
        lamb_destroy(s);
        return st;
    }
    *state = s;
    return DT_OK;
}

static dt_status_t lamb_set_tensors(void *state, const size_t *offsets,
                                    size_t ntensors)
{
    lamb_t *s = state;
    return layerwise_set(&s->lw, offsets, ntensors);
}

static dt_status_t lamb_set_tensor_kinds(void *state,
                                         const unsigned char *kinds,
                                         size_t ntensors)
{
    lamb_t *s = state;
    return layerwise_set_kinds(&s->lw, kinds, ntensors);
}

/* ||w|| / ||r|| over n values; 1 when either is 0 (a fresh bias). */
static float lamb_trust(const float *w, const float *r, size_t n)
{
    double wn = layerwise_norm(w, n), rn = layerwise_norm(r, n);
    return wn > 0 && rn > 0 ? (float)(wn / rn) : 1.0f;
}

static dt_status_t lamb_step(void *state, float *params, const float *grad,
                             float lr, uint64_t step, void *stream)
{
    lamb_t *s = state;
    if (step < 1) {
        dt_error("optimizer lamb: steps count from 1 (got 0)");
        return DT_ERR_INVALID;
    }
    float *p = params;
    DT_CHECK(layerwise_begin(&s->lw, &p, &grad, stream));
    const float b1 = s->beta1, b2 = s->beta2, eps = s->eps;
    const float rbc1 = (float)(1.0 / (1.0 - pow(b1, (double)step)));
    const float rbc2 = (float)(1.0 / sqrt(1.0 - pow(b2, (double)step)));
    float *m = s->m, *v = s->v, *r = s->r;
    for (size_t t = 0; t < s->lw.ntensors; t++) {
        size_t lo = s->lw.offsets[t], n = s->lw.offsets[t + 1] - lo;
        int plain = layerwise_plain(&s->lw, t);
        const float wd = plain ? 0.0f : s->weight_decay;
        for (size_t i = lo; i < lo + n; i++) {
            float g = grad[i];
            m[i] = b1 * m[i] + (1.0f - b1) * g;
            v[i] = b2 * v[i] + (1.0f - b2) * g * g;
            r[i] = m[i] * rbc1 / (sqrtf(v[i]) * rbc2 + eps) + wd * p[i];
        }
        float trust = plain ? 1.0f : lamb_trust(p + lo, r + lo, n);
        for (size_t i = lo; i < lo + n; i++)
            p[i] -= lr * trust * r[i];
    }
    return layerwise_end(&s->lw, params, stream);
}

static const optim_mem_t host_mem = {0, NULL};

static size_t lamb_state_size(void *state)
{
    const lamb_t *s = state;
    return optim_state_size(s->lw.n, 2);
}

static dt_status_t lamb_save(void *state, void *buf, size_t len)
{
    lamb_t *s = state;
    float *bufs[2] = {s->m, s->v};
    return optim_save("lamb", &host_mem, s->lw.n, bufs, 2, buf, len);
}

static dt_status_t lamb_load(void *state, const void *buf, size_t len)
{
    lamb_t *s = state;
    float *bufs[2] = {s->m, s->v};
    return optim_load("lamb", &host_mem, s->lw.n, bufs, 2, buf, len);
}

static const dt_optimizer_ops_t lamb_ops = {
    .size = sizeof lamb_ops,
    .create = lamb_create,
    .step = lamb_step,
    .state_size = lamb_state_size,
    .save = lamb_save,
    .load = lamb_load,
    .destroy = lamb_destroy,
    .set_tensors = lamb_set_tensors,
    .set_tensor_kinds = lamb_set_tensor_kinds,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_OPTIMIZER,
    .name = "lamb",
    .version = "1.0",
    .description = "LAMB: Adam moments with a layer-wise trust ratio",
    .keys = lamb_keys,
    .available = NULL,
    .ops = &lamb_ops,
};
