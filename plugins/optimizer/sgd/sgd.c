/* sgd.c — stochastic gradient descent with momentum, Nesterov momentum
 * and L2 weight decay (PyTorch's torch.optim.SGD, dampening 0):
 *   g = grad + wd * p
 *   buf = momentum * buf + g            (buf starts at 0)
 *   d = nesterov ? g + momentum * buf : (momentum ? buf : g)
 *   p -= lr * d */
#include <stdlib.h>

#include "../optim_common.h"

#define SECTION "optimizer.sgd"

typedef struct sgd {
    optim_mem_t om; /* host, or the GPU */
    size_t n;
    float momentum, weight_decay;
    int nesterov;
    float *buf; /* momentum buffer (on om); NULL without momentum */
} sgd_t;

static const dt_key_spec_t sgd_keys[] = {
    {"momentum", DT_KEY_DOUBLE, "0", "momentum factor in [0, 1)"},
    {"nesterov", DT_KEY_BOOL, "no", "Nesterov momentum (needs momentum > 0)"},
    {"weight_decay", DT_KEY_DOUBLE, "0", "L2 penalty added to each gradient"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static void sgd_destroy(void *state)
{
    sgd_t *s = state;
    if (s && s->buf)
        optim_free(&s->om, s->buf);
    free(s);
}

static dt_status_t sgd_create(const dt_config_t *cfg, size_t nparams,
                              dt_mem_t mem, void **state)
{
    *state = NULL;
    double momentum, wd;
    bool nesterov = false;
    DT_CHECK(optim_number(cfg, SECTION, "momentum", 0, 0, 1,
                          OPTIM_OPEN_HI, &momentum));
    DT_CHECK(optim_number(cfg, SECTION, "weight_decay", 0, 0, 1e3, 0, &wd));
    if (cfg && dt_config_get(cfg, SECTION, "nesterov"))
        DT_CHECK(dt_config_get_bool(cfg, SECTION, "nesterov", &nesterov));
    if (nesterov && momentum == 0) {
        const char *where = "?";
        dt_config_origin(cfg, SECTION, "nesterov", NULL, &where);
        dt_error("%s: [%s] nesterov = yes needs momentum > 0 (momentum is "
                 "0): set momentum (0.9 is usual) or nesterov = no", where,
                 SECTION);
        return DT_ERR_CONFIG;
    }
    sgd_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    dt_status_t st = optim_mem_init("sgd", mem, &s->om);
    if (st != DT_OK) {
        free(s);
        return st;
    }
    s->n = nparams;
    s->momentum = (float)momentum;
    s->weight_decay = (float)wd;
    s->nesterov = nesterov;
    if (momentum > 0 && (st = optim_alloc(&s->om, nparams, &s->buf)) != DT_OK) {
        sgd_destroy(s);
        return st;
    }
    *state = s;
    return DT_OK;
}

static dt_status_t sgd_step(void *state, float *p, const float *grad,
                            float lr, uint64_t step, void *stream)
{
    sgd_t *s = state;
    (void)step;
    const float mu = s->momentum, wd = s->weight_decay;
    float *buf = s->buf;
    if (s->om.cuda) {
        s->om.stream = stream;
        return dt_gpu_sgd_step(stream, p, grad, buf, s->n, lr, mu, wd,
                               s->nesterov);
    }
    if (!buf) {
        for (size_t i = 0; i < s->n; i++)
            p[i] -= lr * (grad[i] + wd * p[i]);
    } else if (s->nesterov) {
        for (size_t i = 0; i < s->n; i++) {
            float g = grad[i] + wd * p[i];
            buf[i] = mu * buf[i] + g;
            p[i] -= lr * (g + mu * buf[i]);
        }
    } else {
        for (size_t i = 0; i < s->n; i++) {
            float g = grad[i] + wd * p[i];
            buf[i] = mu * buf[i] + g;
            p[i] -= lr * buf[i];
        }
    }
    return DT_OK;
}

static size_t sgd_state_size(void *state)
{
    const sgd_t *s = state;
    return optim_state_size(s->n, s->buf ? 1 : 0);
}

static dt_status_t sgd_save(void *state, void *buf, size_t len)
{
    sgd_t *s = state;
    return optim_save("sgd", &s->om, s->n, &s->buf, s->buf ? 1 : 0, buf, len);
}

static dt_status_t sgd_load(void *state, const void *buf, size_t len)
{
    sgd_t *s = state;
    return optim_load("sgd", &s->om, s->n, &s->buf, s->buf ? 1 : 0, buf, len);
}

static const dt_optimizer_ops_t sgd_ops = {
    .size = sizeof sgd_ops,
    .create = sgd_create,
    .step = sgd_step,
    .state_size = sgd_state_size,
    .save = sgd_save,
    .load = sgd_load,
    .destroy = sgd_destroy,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_OPTIMIZER,
    .name = "sgd",
    .version = "1.0",
    .description = "SGD with momentum, Nesterov and weight decay",
    .keys = sgd_keys,
    .available = NULL,
    .ops = &sgd_ops,
};
