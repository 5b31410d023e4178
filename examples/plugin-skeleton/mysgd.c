/* mysgd.c — a complete out-of-tree dt optimizer plugin: plain SGD with
 * optional weight decay, built against the installed headers only.
 *
 *   params[i] -= lr * (grads[i] + weight_decay * params[i])
 *
 * Copy this directory, rename "mysgd" everywhere (file name, struct name),
 * and `make`. The file must be called dt_optimizer_<name>.so. */
#include <stdlib.h>

#include <dt/log.h>
#include <dt/plugin.h>

typedef struct mysgd {
    size_t n;
    double weight_decay;
} mysgd_t;

/* The keys of section [optimizer.mysgd]; dt validates and documents them. */
static const dt_key_spec_t mysgd_keys[] = {
    {"weight_decay", DT_KEY_DOUBLE, "0", "L2 penalty added to each gradient"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static dt_status_t mysgd_create(const dt_config_t *cfg, size_t nparams,
                                dt_mem_t mem, void **state)
{
    if (mem != DT_MEM_HOST) {
        dt_error("optimizer mysgd: only host memory is supported");
        return DT_ERR_UNSUPPORTED;
    }
    mysgd_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    s->n = nparams;
    /* A value that is not a number was refused, naming where it was set,
     * when the configuration was validated against mysgd_keys. */
    if (cfg && dt_config_get_double(cfg, "optimizer.mysgd", "weight_decay",
                                    &s->weight_decay) == DT_ERR_CONFIG) {
        free(s);
        return DT_ERR_CONFIG;
    }
    *state = s;
    return DT_OK;
}

static dt_status_t mysgd_step(void *state, float *params, const float *grads,
                              float lr, uint64_t step, void *stream)
{
    (void)step;
    (void)stream;
    const mysgd_t *s = state;
    const float wd = (float)s->weight_decay;
    for (size_t i = 0; i < s->n; i++)
        params[i] -= lr * (grads[i] + wd * params[i]);
    return DT_OK;
}

/* Plain SGD keeps no state between steps. */
static size_t mysgd_state_size(void *state) { (void)state; return 0; }
static dt_status_t mysgd_save(void *state, void *buf, size_t len)
{
    (void)state; (void)buf;
    return len == 0 ? DT_OK : DT_ERR_INVALID;
}
static dt_status_t mysgd_load(void *state, const void *buf, size_t len)
{
    (void)state; (void)buf;
    return len == 0 ? DT_OK : DT_ERR_INVALID;
}
static void mysgd_destroy(void *state) { free(state); }

static const dt_optimizer_ops_t mysgd_ops = {
    .size = sizeof mysgd_ops,
    .create = mysgd_create,
    .step = mysgd_step,
    .state_size = mysgd_state_size,
    .save = mysgd_save,
    .load = mysgd_load,
    .destroy = mysgd_destroy,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_OPTIMIZER,
    .name = "mysgd",
    .version = "1.0",
    .description = "example out-of-tree SGD with weight decay",
    .keys = mysgd_keys,
    .available = NULL,
    .ops = &mysgd_ops,
};
