/* nfs_cfg.c — [storage.nfs] / [storage.efs] read into nfs_cfg_t. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "nfs_cmd.h"
#include "nfs_stage.h"
#include "stg.h"

dt_status_t nfs_cfg_read(const dt_config_t *cfg, const char *section,
                         const char *who, int efs, nfs_cfg_t *c)
{
    memset(c, 0, sizeof *c);
    c->section = section;
    c->who = who;
    c->efs = efs;
    DT_CHECK(stg_opt_string(cfg, section, "mount_point", &c->mount_point));
    DT_CHECK(dt_config_get_bool(cfg, section, "mount", &c->mount));
    DT_CHECK(stg_opt_string(cfg, section, "server", &c->server));
    DT_CHECK(stg_opt_string(cfg, section, "export", &c->export_path));
    DT_CHECK(stg_opt_string(cfg, section, "options", &c->options));
    DT_CHECK(stg_opt_string(cfg, section, "shared_dir", &c->shared_dir));
    DT_CHECK(stg_get_parallel(cfg, section, &c->max_parallel));
    DT_CHECK(dt_config_get_list(cfg, section, "fstypes", &c->fstypes,
                                &c->nfstypes));
    if (c->nfstypes == 0) {
        dt_error("[%s] fstypes is empty: list the file system types the data "
                 "set may be on (nfs, nfs4)", section);
        return DT_ERR_CONFIG;
    }
    if (c->mount_point)
        DT_CHECK(stg_check_absolute(section, "mount_point", c->mount_point));
    if (c->shared_dir && c->shared_dir[0] != '/' && !c->mount_point) {
        dt_error("[%s] shared_dir = '%s' is relative: set mount_point too, or "
                 "make it absolute", section, c->shared_dir);
        return DT_ERR_CONFIG;
    }
    if (efs) {
        DT_CHECK(stg_opt_string(cfg, section, "fs_id", &c->fs_id));
        DT_CHECK(stg_opt_string(cfg, section, "region", &c->region));
        DT_CHECK(stg_opt_string(cfg, section, "efs_utils", &c->efs_utils));
        if (c->efs_utils && strcmp(c->efs_utils, "auto") &&
            strcmp(c->efs_utils, "yes") && strcmp(c->efs_utils, "no")) {
            dt_error("[%s] efs_utils = '%s': want auto, yes or no", section,
                     c->efs_utils);
            return DT_ERR_CONFIG;
        }
        /* fs_id + region name the server unless it is given (a mount
         * target's address, for example). */
        if (c->mount && !c->server) {
            char dns[256];
            if (!c->fs_id || !c->region) {
                dt_error("[%s] mount = yes needs fs_id and region (or server, "
                         "a mount target's address)", section);
                return DT_ERR_CONFIG;
            }
            if (efs_dns_name(section, c->fs_id, c->region, dns,
                             sizeof dns) != DT_OK)
                return DT_ERR_CONFIG;
            if (!(c->server = strdup(dns)))
                return DT_ERR_NOMEM;
        }
    } else if (c->mount && !c->server) {
        dt_error("[%s] mount = yes needs server (the NFS server's name or "
                 "address) and export", section);
        return DT_ERR_CONFIG;
    }
    if (c->mount && !c->mount_point) {
        dt_error("[%s] mount = yes needs mount_point (where to mount the "
                 "export on every host)", section);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

void nfs_cfg_free(nfs_cfg_t *c)
{
    free(c->mount_point);
    free(c->server);
    free(c->export_path);
    free(c->options);
    free(c->fs_id);
    free(c->region);
    free(c->efs_utils);
    dt_strv_free(c->fstypes);
    free(c->shared_dir);
    free(c->resolved_shared);
    memset(c, 0, sizeof *c);
}
