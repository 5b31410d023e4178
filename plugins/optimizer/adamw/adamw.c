/* adamw.c — the adamw optimizer plugin: Adam with decoupled weight decay
 * (p *= 1 - lr * weight_decay before the Adam update); the math is in
 * ../adam_core.h. */
#include <stdio.h>

#include "../adam_core.h"

static const dt_key_spec_t adamw_keys[] =
    ADAM_KEYS("0.01", "decoupled decay: p *= 1 - lr * weight_decay");

static dt_status_t create(const dt_config_t *cfg, size_t nparams, dt_mem_t mem,
                          void **state)
{
    return adam_create(cfg, nparams, mem, "adamw", 1, 0.01, state);
}

static const dt_optimizer_ops_t ops = {
    .size = sizeof ops,
    .create = create,
    .step = adam_step,
    .state_size = adam_state_size,
    .save = adam_save,
    .load = adam_load,
    .destroy = adam_destroy,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_OPTIMIZER,
    .name = "adamw",
    .version = "1.0",
    .description = "AdamW: Adam with decoupled weight decay",
    .keys = adamw_keys,
    .available = NULL,
    .ops = &ops,
};
