/* optimizer_step.c — loads an optimizer plugin by name the way dt does
 * (search path, ABI check, config section from the environment) and prints
 * the parameters after one step on fixed inputs. Used by
 * plugin_skeleton.sh to prove an out-of-tree plugin works end to end. */
#include <stdio.h>
#include <stdlib.h>

#include <dt/config.h>
#include <dt/log.h>
#include "plugin/plugin_loader.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: optimizer_step NAME\n");
        return 2;
    }
    const dt_plugin_t *p;
    if (dt_plugin_load(DT_KIND_OPTIMIZER, argv[1], &p, NULL) != DT_OK)
        return 1;
    char section[128];
    snprintf(section, sizeof section, "optimizer.%s", argv[1]);
    dt_config_t *cfg = NULL;
    extern char **environ;
    if (dt_config_new(&cfg) != DT_OK ||
        (p->keys && dt_config_add_schema(cfg, section, p->keys) != DT_OK) ||
        dt_config_load_env(cfg, environ) != DT_OK)
        return 1;
    const dt_optimizer_ops_t *ops = p->ops;
    float params[4] = {1.0f, -2.0f, 0.5f, 4.0f};
    const float grads[4] = {0.5f, 1.0f, -1.0f, 2.0f};
    void *state = NULL;
    int rc = 1;
    if (ops->create(cfg, 4, DT_MEM_HOST, &state) == DT_OK &&
        ops->step(state, params, grads, 0.5f, 1, NULL) == DT_OK) {
        printf("%g %g %g %g\n", params[0], params[1], params[2], params[3]);
        rc = 0;
    }
    if (state)
        ops->destroy(state);
    dt_config_free(cfg);
    dt_plugins_unload_all();
    return rc;
}
