/* efs.c — storage "efs": Amazon EFS, which is NFS 4.1 with its own
 * defaults: the server is fs_id.efs.REGION.amazonaws.com (or a mount
 * target's address), the options are the ones AWS recommends, and when
 * amazon-efs-utils' mount.efs is installed on a host `mount -t efs` is
 * used there. Data, checkpoints and logs on the one file system, as on
 * the AWS cluster of seed 002. The work is in ../common (nfs_stage.c). */
#include <stdlib.h>

#include <dt/plugin.h>
#include "nfs_cmd.h"
#include "nfs_stage.h"

#define SECTION "storage.efs"

static const dt_key_spec_t efs_keys[] = {
    {"fs_id", DT_KEY_STRING, NULL, "EFS file system id (fs-0123abcd)"},
    {"region", DT_KEY_STRING, NULL, "AWS region of the file system"},
    {"server", DT_KEY_STRING, NULL,
     "server to mount instead of fs_id.efs.REGION.amazonaws.com (a mount "
     "target's IP address)"},
    {"export", DT_KEY_STRING, "/", "directory of the file system to mount"},
    {"mount_point", DT_KEY_STRING, "/mnt/efs",
     "where EFS is mounted on every host"},
    {"mount", DT_KEY_BOOL, "no",
     "mount EFS on hosts where it is not mounted (needs root there)"},
    {"options", DT_KEY_STRING, EFS_DEFAULT_OPTIONS,
     "mount options (AWS's recommended NFS client settings)"},
    {"efs_utils", DT_KEY_STRING, "auto",
     "use `mount -t efs` (amazon-efs-utils): auto (where mount.efs is "
     "installed), yes or no"},
    {"fstypes", DT_KEY_LIST, "nfs4",
     "file system types accepted for the data path"},
    {"shared_dir", DT_KEY_STRING, NULL,
     "directory all ranks share for checkpoints and logs (absolute, or "
     "relative to mount_point; default <mount_point>/dt)"},
    {"max_parallel", DT_KEY_INT, "16", "hosts checked at the same time"},
    {NULL, 0, NULL, NULL},
};

static dt_status_t efs_init(const dt_config_t *cfg, void **ctx)
{
    nfs_cfg_t *c = calloc(1, sizeof *c);
    if (!c)
        return DT_ERR_NOMEM;
    dt_status_t st = nfs_cfg_read(cfg, SECTION, "storage efs", 1, c);
    if (st != DT_OK) {
        nfs_cfg_free(c);
        free(c);
        return st;
    }
    *ctx = c;
    return DT_OK;
}

static dt_status_t efs_stage_op(void *ctx, const dt_stage_request_t *req,
                                char **worker_path)
{
    return nfs_stage(ctx, req, worker_path);
}

static dt_status_t efs_verify_op(void *ctx, const dt_stage_request_t *req)
{
    return nfs_verify(ctx, req);
}

static dt_status_t efs_shared_op(void *ctx, const dt_stage_request_t *req,
                                 char **path)
{
    return nfs_shared_dir(ctx, req, path);
}

static void efs_fini(void *ctx)
{
    if (ctx)
        nfs_cfg_free(ctx);
    free(ctx);
}

static const dt_storage_ops_t efs_ops = {
    .size = sizeof(dt_storage_ops_t),
    .init = efs_init,
    .stage = efs_stage_op,
    .verify = efs_verify_op,
    .shared_dir = efs_shared_op,
    .fini = efs_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_STORAGE,
    .name = "efs",
    .version = "1.0",
    .description = "data set and checkpoints on Amazon EFS (NFS 4.1 with "
                   "EFS defaults; optional mount)",
    .keys = efs_keys,
    .available = NULL,
    .ops = &efs_ops,
};
