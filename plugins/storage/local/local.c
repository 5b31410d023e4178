/* local.c — storage "local": the data set already sits at the same path
 * on every host (a shared home, a data set baked into the image). Staging
 * copies nothing; it checks on every host, through the launcher, that the
 * path is there and readable, and fails naming the host and the path. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/plugin.h>
#include "stg.h"

#define SECTION "storage.local"

static const dt_key_spec_t local_keys[] = {
    {"max_parallel", DT_KEY_INT, "16", "hosts checked at the same time"},
    {NULL, 0, NULL, NULL},
};

typedef struct local_storage {
    int max_parallel;
} local_storage_t;

typedef struct visit {
    const dt_stage_request_t *req;
} visit_t;

static dt_status_t local_init(const dt_config_t *cfg, void **ctx)
{
    local_storage_t *L = calloc(1, sizeof *L);
    if (!L)
        return DT_ERR_NOMEM;
    dt_status_t st = stg_get_parallel(cfg, SECTION, &L->max_parallel);
    if (st != DT_OK) {
        free(L);
        return st;
    }
    *ctx = L;
    return DT_OK;
}

static dt_status_t check_host(void *arg, size_t i, const dt_host_t *h)
{
    visit_t *v = arg;
    (void)i;
    return stg_check_path(v->req, h, "storage local", v->req->src, 0);
}

static dt_status_t local_verify(void *ctx, const dt_stage_request_t *req)
{
    local_storage_t *L = ctx;
    if (!req || !req->src || !req->hosts)
        return DT_ERR_INVALID;
    visit_t v = {req};
    return stg_for_each_host(req->hosts, L->max_parallel, check_host, &v);
}

static dt_status_t local_stage(void *ctx, const dt_stage_request_t *req,
                               char **worker_path)
{
    DT_CHECK(local_verify(ctx, req));
    return (*worker_path = strdup(req->src)) ? DT_OK : DT_ERR_NOMEM;
}

static void local_fini(void *ctx) { free(ctx); }

static const dt_storage_ops_t local_ops = {
    .size = sizeof(dt_storage_ops_t),
    .init = local_init,
    .stage = local_stage,
    .verify = local_verify,
    .shared_dir = NULL,
    .fini = local_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_STORAGE,
    .name = "local",
    .version = "1.0",
    .description = "data set already at the same path on every host "
                   "(checked on each)",
    .keys = local_keys,
    .available = NULL,
    .ops = &local_ops,
};
