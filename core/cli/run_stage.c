/* run_stage.c — load the storage plugin, hand it [data] path, the hosts
 * and the launcher's run_on_host, and return the paths workers get. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "plugin/plugin_loader.h"
#include "run_checks.h"
#include "run_stage.h"

/* An op exists when it lies inside the plugin's table and is set. */
#define HAS_OP(ops, f)                                                       \
    ((ops)->size >= offsetof(dt_storage_ops_t, f) + sizeof(ops)->f &&        \
     (ops)->f != NULL)

static dt_status_t run_remote(void *ctx, const dt_host_t *host,
                              const char *const *argv, char **output,
                              int *exit_code)
{
    const run_stage_args_t *a = ctx;
    return a->launcher->run_on_host(a->launcher_ctx, host, argv, output,
                                    exit_code);
}

static dt_status_t do_stage(const run_stage_args_t *a, const dt_plugin_t *p,
                            void *ctx, const dt_stage_request_t *req,
                            char **data_path, char **shared_dir)
{
    const dt_storage_ops_t *ops = p->ops;
    dt_status_t st = DT_OK;
    if (a->mode == RUN_STAGE_COPY) {
        st = ops->stage(ctx, req, data_path);
        if (st == DT_ERR_INTERRUPTED)
            dt_error("staging the data set %s with storage '%s' was "
                     "stopped by a signal; run `dtctl stage` to complete it",
                     req->src, p->name);
        else if (st != DT_OK)
            dt_error("staging the data set %s with storage '%s' failed (see "
                     "above); fix it and run `dtctl stage`, or start without "
                     "staging: --no-stage",
                     req->src, p->name);
    } else {
        if (a->mode == RUN_STAGE_VERIFY) {
            if (!HAS_OP(ops, verify)) {
                dt_error("storage '%s' cannot verify a data set", p->name);
                return DT_ERR_UNSUPPORTED;
            }
            st = ops->verify(ctx, req);
            if (st == DT_OK)
                dt_info("storage %s: the data set is in place on %s%zu "
                        "host%s",
                        p->name, req->hosts->n == 1 ? "" : "all ",
                        req->hosts->n, req->hosts->n == 1 ? "" : "s");
        }
        if (st == DT_OK && HAS_OP(ops, worker_path))
            st = ops->worker_path(ctx, req, data_path);
        else if (st == DT_OK && !(*data_path = strdup(req->src)))
            st = DT_ERR_NOMEM;
    }
    if (st == DT_OK && HAS_OP(ops, shared_dir)) {
        st = ops->shared_dir(ctx, req, shared_dir);
        if (st == DT_ERR_UNSUPPORTED)
            st = DT_OK;
    }
    return st;
}

dt_status_t run_stage(const run_stage_args_t *a, char **data_path,
                      char **shared_dir)
{
    const char *src = NULL;
    const dt_plugin_t *p = NULL;
    *data_path = *shared_dir = NULL;
    src = dt_config_get(a->cfg, "data", "path");
    if (!src || !*src) {
        dt_debug("no [data] path: nothing to stage");
        return DT_OK;
    }
    DT_CHECK(run_load_plugin(a->cfg, DT_KIND_STORAGE, "storage", &p));
    /* The loader refused a storage plugin without init, stage or fini. */
    const dt_storage_ops_t *ops = p->ops;
    const dt_launcher_ops_t *l = a->launcher;
    int can_run = l && l->size >= offsetof(dt_launcher_ops_t, run_on_host) +
                                      sizeof l->run_on_host &&
                  l->run_on_host;
    dt_remote_t remote = {(void *)a, run_remote};
    dt_stage_request_t req = {
        .src = src,
        .hosts = a->hosts,
        .remote = can_run ? &remote : NULL,
        .job_id = a->job_id,
        .stop_requested = a->stop,
    };
    void *ctx = NULL;
    if (ops->init(a->cfg, &ctx) != DT_OK) {
        dt_error("storage plugin '%s' could not be set up (see above)",
                 p->name);
        return DT_ERR_CONFIG;
    }
    dt_status_t st = do_stage(a, p, ctx, &req, data_path, shared_dir);
    ops->fini(ctx);
    if (st != DT_OK) {
        free(*data_path);
        free(*shared_dir);
        *data_path = *shared_dir = NULL;
    } else {
        dt_debug("workers read the data set at %s%s%s", *data_path,
                 *shared_dir ? "; shared directory " : "",
                 *shared_dir ? *shared_dir : "");
    }
    return st;
}

dt_status_t run_stage_env(const run_stage_args_t *a, env_list_t *env)
{
    char *data = NULL, *shared = NULL;
    dt_status_t st = run_stage(a, &data, &shared);
    if (st == DT_OK && data)
        st = env_list_addf(env, "DT_DATA_PATH", "%s", data);
    if (st == DT_OK && shared)
        st = env_list_addf(env, "DT_SHARED_DIR", "%s", shared);
    free(data);
    free(shared);
    return st;
}
