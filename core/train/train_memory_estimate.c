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
#include "opt_probe.h"

/* The state's bytes per parameter of the job's optimizer, measured in a
 * child process (opt_probe.c). 0 when it cannot be made. */
static size_t optimizer_bytes_per_param(const dt_config_t *cfg)
{
    const char *name = dt_config_get(cfg, "train", "optimizer");
    const dt_plugin_t *plugin = NULL;
    size_t per = 0;
    if (dt_plugin_load(DT_KIND_OPTIMIZER, name && *name ? name : "sgd",
                       &plugin, NULL) != DT_OK ||
        dt_opt_probe(cfg, plugin, &per) != DT_OK)
        return 0;
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
