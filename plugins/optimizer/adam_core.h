/* adam_core.h — Adam and AdamW (Kingma & Ba; Loshchilov & Hutter), as in
 * PyTorch's torch.optim.Adam / AdamW. With t the step (from 1):
 *   adam:  g = grad + wd * p                 (L2 penalty in the gradient)
 *   adamw: p = p * (1 - lr * wd); g = grad   (decoupled weight decay)
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 * Shared by plugins/optimizer/adam and adamw. */
#ifndef DT_ADAM_CORE_H
#define DT_ADAM_CORE_H

#include <math.h>
#include <stdlib.h>

#include "optim_common.h"

typedef struct adam {
    const char *name; /* "adam" or "adamw" */
    optim_mem_t om;   /* host, or the GPU   */
    int decoupled;    /* adamw */
    size_t n;
    float beta1, beta2, eps, weight_decay;
    float *m, *v;     /* on om              */
} adam_t;

static inline void adam_destroy(void *state)
{
    adam_t *s = state;
    if (s) {
        if (s->m)
            optim_free(&s->om, s->m);
        if (s->v)
            optim_free(&s->om, s->v);
    }
    free(s);
}

static inline dt_status_t adam_create(const dt_config_t *cfg, size_t nparams,
                                      dt_mem_t mem, const char *name,
                                      int decoupled, double default_wd,
                                      void **state)
{
    *state = NULL;
    char section[32];
    snprintf(section, sizeof section, "optimizer.%s", name);
    double b1, b2, eps, wd;
    DT_CHECK(optim_number(cfg, section, "beta1", 0.9, 0, 1,
                          OPTIM_OPEN_HI, &b1));
    DT_CHECK(optim_number(cfg, section, "beta2", 0.999, 0, 1,
                          OPTIM_OPEN_HI, &b2));
    DT_CHECK(optim_number(cfg, section, "eps", 1e-8, 0, 1,
                          OPTIM_OPEN_LO, &eps));
    DT_CHECK(optim_number(cfg, section, "weight_decay", default_wd, 0, 1e3, 0,
                          &wd));
    adam_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    dt_status_t st = optim_mem_init(name, mem, &s->om);
    if (st != DT_OK) {
        free(s);
        return st;
    }
    s->name = name;
    s->decoupled = decoupled;
    s->n = nparams;
    s->beta1 = (float)b1, s->beta2 = (float)b2;
    s->eps = (float)eps, s->weight_decay = (float)wd;
    if ((st = optim_alloc(&s->om, nparams, &s->m)) != DT_OK ||
        (st = optim_alloc(&s->om, nparams, &s->v)) != DT_OK) {
        adam_destroy(s);
        return st;
    }
    *state = s;
    return DT_OK;
}

static inline dt_status_t adam_step(void *state, float *p, const float *grad,
                                    float lr, uint64_t step, void *stream)
{
    adam_t *s = state;
    if (step < 1) {
        dt_error("optimizer %s: steps count from 1 (got 0)", s->name);
        return DT_ERR_INVALID;
    }
    const float b1 = s->beta1, b2 = s->beta2, eps = s->eps;
    /* Bias corrections in double: beta^t underflows gracefully. */
    const float bc1 = (float)(1.0 - pow(b1, (double)step));
    const float rbc2 = (float)(1.0 / sqrt(1.0 - pow(b2, (double)step)));
    const float step_size = lr / bc1;
    const float l2 = s->decoupled ? 0.0f : s->weight_decay;
    const float shrink = s->decoupled ? 1.0f - lr * s->weight_decay : 1.0f;
    float *m = s->m, *v = s->v;
    if (s->om.cuda) {
        const dt_gpu_adam_args_t a = {
            .beta1 = b1, .beta2 = b2, .eps = eps, .l2 = l2,
            .shrink = shrink, .step_size = step_size, .rbc2 = rbc2};
        s->om.stream = stream;
        return dt_gpu_adam_step(stream, p, grad, m, v, s->n, &a);
    }
    for (size_t i = 0; i < s->n; i++) {
        float g = grad[i] + l2 * p[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        p[i] = p[i] * shrink - step_size * m[i] / (sqrtf(v[i]) * rbc2 + eps);
    }
    return DT_OK;
}

static inline size_t adam_state_size(void *state)
{
    const adam_t *s = state;
    return optim_state_size(s->n, 2);
}

static inline dt_status_t adam_save(void *state, void *buf, size_t len)
{
    adam_t *s = state;
    float *bufs[2] = {s->m, s->v};
    return optim_save(s->name, &s->om, s->n, bufs, 2, buf, len);
}

static inline dt_status_t adam_load(void *state, const void *buf, size_t len)
{
    adam_t *s = state;
    float *bufs[2] = {s->m, s->v};
    return optim_load(s->name, &s->om, s->n, bufs, 2, buf, len);
}

#define ADAM_KEYS(default_wd, wd_doc)                                         \
    {{"beta1", DT_KEY_DOUBLE, "0.9", "decay of the gradient average"},        \
     {"beta2", DT_KEY_DOUBLE, "0.999", "decay of the squared average"},       \
     {"eps", DT_KEY_DOUBLE, "1e-8", "added to the denominator (above 0)"},    \
     {"weight_decay", DT_KEY_DOUBLE, default_wd, wd_doc},                     \
     {NULL, DT_KEY_STRING, NULL, NULL}}

#endif /* DT_ADAM_CORE_H */
