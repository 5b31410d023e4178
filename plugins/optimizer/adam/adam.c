/* adam.c — the adam optimizer plugin (L2 weight decay in the gradient);
 * the math is in ../adam_core.h. */
#include <stdio.h>

#include "../adam_core.h"

static const dt_key_spec_t adam_keys[] =
    ADAM_KEYS("0", "L2 penalty added to each gradient");

static dt_status_t create(const dt_config_t *cfg, size_t nparams, dt_mem_t mem,
                          void **state)
{
    return adam_create(cfg, nparams, mem, "adam", 0, 0.0, state);
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
    .name = "adam",
    .version = "1.0",
    .description = "Adam with bias correction and L2 weight decay",
    .keys = adam_keys,
    .available = NULL,
    .ops = &ops,
};
