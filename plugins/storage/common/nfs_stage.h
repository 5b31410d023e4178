/* nfs_stage.h — the work of the nfs and efs storage plugins (they differ
 * in defaults and in how the server is named): check on every host that
 * the data set path is on an NFS mount of the same export, that all hosts
 * see the same files (rank 0's host writes a marker with the job id, every
 * host reads it back), and optionally mount the export first. */
#ifndef DT_STG_NFS_STAGE_H
#define DT_STG_NFS_STAGE_H

#include <stdbool.h>
#include <dt/plugin.h>

typedef struct nfs_cfg {
    const char *section;  /* "storage.nfs" / "storage.efs"            */
    const char *who;      /* "storage nfs" for messages               */
    int efs;              /* fs_id/region/efs_utils apply             */
    char *mount_point;    /* NULL (nfs): wherever the data path is    */
    bool mount;           /* mount where not mounted yet              */
    char *server, *export_path, *options;
    char *fs_id, *region, *efs_utils; /* efs only                       */
    char **fstypes;       /* accepted file system types               */
    size_t nfstypes;
    char *shared_dir;     /* NULL: <mount point>/dt                   */
    int max_parallel;
    char *resolved_shared; /* after a check: the shared directory      */
} nfs_cfg_t;

/* Read section's keys (the plugin's table declares them). */
dt_status_t nfs_cfg_read(const dt_config_t *cfg, const char *section,
                         const char *who, int efs, nfs_cfg_t *c);
void nfs_cfg_free(nfs_cfg_t *c);

dt_status_t nfs_stage(nfs_cfg_t *c, const dt_stage_request_t *req,
                      char **worker_path);
dt_status_t nfs_verify(nfs_cfg_t *c, const dt_stage_request_t *req);
dt_status_t nfs_shared_dir(nfs_cfg_t *c, const dt_stage_request_t *req,
                           char **path);

#endif /* DT_STG_NFS_STAGE_H */
