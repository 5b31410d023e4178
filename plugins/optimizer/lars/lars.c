/* lars.c — LARS, layer-wise adaptive rate scaling (You, Gitman & Ginsburg
 * 2017, "Large Batch Training of Convolutional Networks"): SGD with
 * momentum whose step for each parameter tensor w (gradient g) is scaled
 * by a trust ratio:
 *   trust = eta * ||w|| / (||g|| + wd * ||w|| + eps)
 *           (1 when ||w|| or ||g|| is 0)
 *   buf = momentum * buf + trust * (g + wd * w)
 *   w -= lr * buf
 * Tensors come from the optional set_tensors op (the trainer gives each
 * layer's weights and bias); without it the whole vector is one. With
 * exclude_bias_norm and kinds from set_tensor_kinds, biases and
 * batchnorm's scale and shift get trust 1 and wd 0 (plain momentum SGD),
 * as in the reference ResNet-50 recipe. */
#include <stdlib.h>

#include "../layerwise.h"

#define SECTION "optimizer.lars"

typedef struct lars {
    layerwise_t lw;
    float momentum, weight_decay, eta, eps;
    float *buf; /* momentum buffer, host; NULL without momentum */
} lars_t;

static const dt_key_spec_t lars_keys[] = {
    {"momentum", DT_KEY_DOUBLE, "0.9", "momentum factor in [0, 1)"},
    {"weight_decay", DT_KEY_DOUBLE, "0", "L2 penalty added to each gradient"},
    {"eta", DT_KEY_DOUBLE, "0.001",
     "trust coefficient: each tensor's step is eta*||w||/(||g||+wd*||w||)"},
    {"eps", DT_KEY_DOUBLE, "0", "added to the trust ratio's denominator"},
    {"exclude_bias_norm", DT_KEY_BOOL, "yes",
     "biases and batchnorm's scale and shift: plain momentum SGD, no trust "
     "ratio or weight decay (no: every tensor alike)"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static void lars_destroy(void *state)
{
    lars_t *s = state;
    if (s) {
        layerwise_fini(&s->lw);
        free(s->buf);
    }
    free(s);
}

static dt_status_t lars_create(const dt_config_t *cfg, size_t nparams,
                               dt_mem_t mem, void **state)
{
    *state = NULL;
    double momentum, wd, eta, eps;
    bool exclude;
    DT_CHECK(optim_number(cfg, SECTION, "momentum", 0.9, 0, 1,
                          OPTIM_OPEN_HI, &momentum));
    DT_CHECK(optim_number(cfg, SECTION, "weight_decay", 0, 0, 1e3, 0, &wd));
    DT_CHECK(optim_number(cfg, SECTION, "eta", 0.001, 0, 1e3, 0, &eta));
    DT_CHECK(optim_number(cfg, SECTION, "eps", 0, 0, 1, 0, &eps));
    DT_CHECK(layerwise_exclude_key(cfg, SECTION, &exclude));
    if (eta == 0) {
        dt_error("[%s] eta = 0 would never move the parameters", SECTION);
        return DT_ERR_CONFIG;
    }
    lars_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    dt_status_t st = layerwise_init(&s->lw, "lars", nparams, mem);
    s->lw.exclude = exclude;
    s->momentum = (float)momentum;
    s->weight_decay = (float)wd;
    s->eta = (float)eta;
    s->eps = (float)eps;
    if (st == DT_OK && momentum > 0 &&
        !(s->buf = calloc(nparams ? nparams : 1, sizeof *s->buf)))
        st = DT_ERR_NOMEM;
    if (st != DT_OK) {
        lars_destroy(s);
        return st;
    }
    *state = s;
    return DT_OK;
}

static dt_status_t lars_set_tensors(void *state, const size_t *offsets,
                                    size_t ntensors)
{
    lars_t *s = state;
    return layerwise_set(&s->lw, offsets, ntensors);
}

static dt_status_t lars_set_tensor_kinds(void *state,
                                         const unsigned char *kinds,
                                         size_t ntensors)
{
    lars_t *s = state;
    return layerwise_set_kinds(&s->lw, kinds, ntensors);
}

/* The trust ratio of the n values at p (gradient g), decay wd. */
static float lars_trust(const lars_t *s, const float *p, const float *g,
                        size_t n, float wd)
{
    double wn = layerwise_norm(p, n), gn = layerwise_norm(g, n);
    if (wn > 0 && gn > 0)
        return (float)(s->eta * wn / (gn + wd * wn + s->eps));
    return 1.0f;
}

static dt_status_t lars_step(void *state, float *params, const float *grad,
                             float lr, uint64_t step, void *stream)
{
    lars_t *s = state;
    (void)step;
    float *p = params;
    DT_CHECK(layerwise_begin(&s->lw, &p, &grad, stream));
    const float mu = s->momentum;
    for (size_t t = 0; t < s->lw.ntensors; t++) {
        size_t lo = s->lw.offsets[t], n = s->lw.offsets[t + 1] - lo;
        int plain = layerwise_plain(&s->lw, t);
        float wd = plain ? 0.0f : s->weight_decay;
        float trust = plain ? 1.0f : lars_trust(s, p + lo, grad + lo, n, wd);
        for (size_t i = lo; i < lo + n; i++) {
            float d = trust * (grad[i] + wd * p[i]);
            if (s->buf)
                d = s->buf[i] = mu * s->buf[i] + d;
            p[i] -= lr * d;
        }
    }
    return layerwise_end(&s->lw, params, stream);
}

static const optim_mem_t host_mem = {0, NULL};

static size_t lars_state_size(void *state)
{
    const lars_t *s = state;
    return optim_state_size(s->lw.n, s->buf ? 1 : 0);
}

static dt_status_t lars_save(void *state, void *buf, size_t len)
{
    lars_t *s = state;
    return optim_save("lars", &host_mem, s->lw.n, &s->buf, s->buf ? 1 : 0,
                      buf, len);
}

static dt_status_t lars_load(void *state, const void *buf, size_t len)
{
    lars_t *s = state;
    return optim_load("lars", &host_mem, s->lw.n, &s->buf, s->buf ? 1 : 0,
                      buf, len);
}

static const dt_optimizer_ops_t lars_ops = {
    .size = sizeof lars_ops,
    .create = lars_create,
    .step = lars_step,
    .state_size = lars_state_size,
    .save = lars_save,
    .load = lars_load,
    .destroy = lars_destroy,
    .set_tensors = lars_set_tensors,
    .set_tensor_kinds = lars_set_tensor_kinds,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_OPTIMIZER,
    .name = "lars",
    .version = "1.0",
    .description = "LARS: SGD momentum with a layer-wise trust ratio",
    .keys = lars_keys,
    .available = NULL,
    .ops = &lars_ops,
};
