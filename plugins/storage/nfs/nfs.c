/* nfs.c — storage "nfs": the data set and the checkpoint directory live on
 * an NFS share mounted at the same path on every host. Staging copies
 * nothing: it checks on every host that the data path is on an NFS mount
 * of the same export and that all hosts see the same files, and with
 * mount = yes mounts the export first. The work is in ../common
 * (nfs_stage.c), shared with efs. */
#include <stdlib.h>

#include <dt/plugin.h>
#include "nfs_stage.h"

#define SECTION "storage.nfs"

static const dt_key_spec_t nfs_keys[] = {
    {"mount_point", DT_KEY_STRING, NULL,
     "where the share is mounted on every host (default: wherever [data] "
     "path's mount is; required with mount = yes)"},
    {"mount", DT_KEY_BOOL, "no",
     "mount the export on hosts where it is not mounted (needs root there)"},
    {"server", DT_KEY_STRING, NULL, "NFS server name or address (mount = yes)"},
    {"export", DT_KEY_STRING, "/", "exported directory on the server"},
    {"options", DT_KEY_STRING, "hard,timeo=600,retrans=2",
     "mount options (-o) for mount = yes"},
    {"fstypes", DT_KEY_LIST, "nfs,nfs4",
     "file system types accepted for the data path"},
    {"shared_dir", DT_KEY_STRING, NULL,
     "directory all ranks share for checkpoints and logs (absolute, or "
     "relative to the mount point; default <mount point>/dt)"},
    {"max_parallel", DT_KEY_INT, "16", "hosts checked at the same time"},
    {NULL, 0, NULL, NULL},
};

static dt_status_t nfs_init(const dt_config_t *cfg, void **ctx)
{
    nfs_cfg_t *c = calloc(1, sizeof *c);
    if (!c)
        return DT_ERR_NOMEM;
    dt_status_t st = nfs_cfg_read(cfg, SECTION, "storage nfs", 0, c);
    if (st != DT_OK) {
        nfs_cfg_free(c);
        free(c);
        return st;
    }
    *ctx = c;
    return DT_OK;
}

static dt_status_t nfs_stage_op(void *ctx, const dt_stage_request_t *req,
                                char **worker_path)
{
    return nfs_stage(ctx, req, worker_path);
}

static dt_status_t nfs_verify_op(void *ctx, const dt_stage_request_t *req)
{
    return nfs_verify(ctx, req);
}

static dt_status_t nfs_shared_op(void *ctx, const dt_stage_request_t *req,
                                 char **path)
{
    return nfs_shared_dir(ctx, req, path);
}

static void nfs_fini(void *ctx)
{
    if (ctx)
        nfs_cfg_free(ctx);
    free(ctx);
}

static const dt_storage_ops_t nfs_ops = {
    .size = sizeof(dt_storage_ops_t),
    .init = nfs_init,
    .stage = nfs_stage_op,
    .verify = nfs_verify_op,
    .shared_dir = nfs_shared_op,
    .fini = nfs_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_STORAGE,
    .name = "nfs",
    .version = "1.0",
    .description = "data set and checkpoints on an NFS share (checked on "
                   "every host; optional mount)",
    .keys = nfs_keys,
    .available = NULL,
    .ops = &nfs_ops,
};
