/* opt_probe.c — the optimizer made in a child process (opt_probe.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <dt/log.h>
#include "opt_call.h"
#include "opt_probe.h"
#include "plugin/plugin_crash.h"
#include "plugin/plugin_isolate.h"
#include "plugin/plugin_loader.h"

/* The growth of the serialized state from 1 to 1 + PROBE parameters (the
 * header and the hyperparameters cancel out). */
#define PROBE 1024

typedef struct probe_args {
    const dt_config_t *cfg;
    const dt_plugin_t *plugin;
    const dt_optimizer_ops_t *ops;
    int measure;
} probe_args_t;

/* Make one of n parameters; the state_size when asked (size), then gone. */
static dt_status_t make_one(const probe_args_t *a, size_t n, size_t *size)
{
    void *state = NULL;
    dt_isolated_op("create");
    dt_plugin_call_t was = dt_plugin_call_begin(a->plugin, "create");
    dt_status_t st = a->ops->create(a->cfg, n, DT_MEM_HOST, &state);
    dt_plugin_call_end(was);
    if (st == DT_OK && size) {
        dt_isolated_op("state_size");
        *size = dt_opt_state_size(a->plugin, a->ops, state);
    }
    if (state) {
        dt_isolated_op("destroy");
        dt_opt_destroy(a->plugin, a->ops, state);
    }
    return st;
}

/* In the child: create's status when it failed (negative), else the bytes
 * per parameter (0 unless measured). */
static int probe_in_child(void *arg, char *out, size_t out_len)
{
    (void)out, (void)out_len;
    const probe_args_t *a = arg;
    size_t small = 0, large = 0;
    dt_status_t st = make_one(a, 1, a->measure ? &small : NULL);
    if (st != DT_OK)
        return st < 0 ? (int)st : -1;
    if (!a->measure || make_one(a, 1 + PROBE, &large) != DT_OK)
        return 0;
    size_t per = large > small ? (large - small) / PROBE : 0;
    return per < (1u << 30) ? (int)per : 0;
}

dt_status_t dt_opt_probe(const dt_config_t *cfg, const dt_plugin_t *p,
                         size_t *per_param)
{
    probe_args_t a = {cfg, p, p->ops, per_param != NULL};
    dt_isolated_t res;
    char none[1];
    if (per_param)
        *per_param = 0;
    int ret;
    if (dt_run_isolated(probe_in_child, &a, DT_PLUGIN_PROBE_TIMEOUT_S, none,
                        sizeof none, &res) != 0) {
        if (errno)
            dt_debug("optimizer '%s': made in this process (fork: %s)",
                     p->name, strerror(errno));
        ret = probe_in_child(&a, none, sizeof none); /* each op marked */
    } else if (res.returned) {
        ret = res.ret;
    } else {
        const char *path = dt_plugin_path_of(p);
        char why[1024];
        dt_isolated_describe(&res, "create", path ? path : p->name,
                             DT_PLUGIN_PROBE_TIMEOUT_S, why, sizeof why);
        dt_error("optimizer plugin '%s' %s", p->name, why);
        return DT_ERR_PLUGIN;
    }
    if (ret < 0)
        return (dt_status_t)ret;
    if (per_param)
        *per_param = (size_t)ret;
    return DT_OK;
}
