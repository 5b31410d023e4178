/* train_memory_estimate.c — what one worker of a job will hold in memory
 * (dt_train_memory_estimate): the model's parts, and the optimizer's
 * state measured on two small instances of the job's optimizer (its
 * plugin alone knows how many buffers it keeps per parameter). */
#include "config.h"

#include <string.h>

#include <dt/loader.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include <dt/train.h>

/* The state's bytes per parameter of the job's optimizer: the growth of
 * its serialized state from 1 to 1 + PROBE parameters (the header and
 * the hyperparameters cancel out). 0 when it cannot be made. */
#define PROBE 1024
static size_t optimizer_bytes_per_param(const dt_config_t *cfg)
{
    const char *name = dt_config_get(cfg, "train", "optimizer");
    const dt_plugin_t *plugin = NULL;
    if (dt_plugin_load(DT_KIND_OPTIMIZER, name && *name ? name : "sgd",
                       &plugin, NULL) != DT_OK)
        return 0;
    const dt_optimizer_ops_t *ops = plugin->ops;
    void *small = NULL, *large = NULL;
    size_t per = 0;
    if (ops->create(cfg, 1, DT_MEM_HOST, &small) == DT_OK &&
        ops->create(cfg, 1 + PROBE, DT_MEM_HOST, &large) == DT_OK) {
        size_t a = ops->state_size(small), b = ops->state_size(large);
        per = b > a ? (b - a) / PROBE : 0;
    }
    if (small)
        ops->destroy(small);
    if (large)
        ops->destroy(large);
    return per;
}

dt_status_t dt_train_memory_estimate(const dt_config_t *cfg,
                                     const dt_model_t *m, int batch,
                                     int on_gpu, dt_train_memory_t *out)
{
    memset(out, 0, sizeof *out);
    if (batch <= 0) {
        long long b = 0;
        DT_CHECK(dt_config_get_int(cfg, "train", "batch_size", &b));
        batch = b > 0 && b < (1 << 30) ? (int)b : 1;
    }
    out->batch = batch;
    DT_CHECK(dt_model_memory_estimate(m, batch, on_gpu, &out->model));
    out->optimizer = optimizer_bytes_per_param(cfg) * dt_model_nparams(m);
    out->total = out->model.params + out->model.activations +
                 out->model.act_grads + out->model.act_copies +
                 out->model.scratch + out->optimizer;
    return DT_OK;
}
