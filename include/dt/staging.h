/* dt/staging.h — where a worker finds the data set and the directory all
 * ranks share, after `dtctl run` staged the data set (docs/STORAGE.md).
 *
 * dtctl runs the storage plugin ([cluster] storage) before the workers
 * start and hands them the result in their environment:
 *   DT_DATA_PATH    the data set directory as this worker reads it. It
 *                   may hold "{host}" ([storage.rsync] dst = /x/{host}),
 *                   which stands for the worker's host as dtctl listed it
 *                   ($DT_HOST).
 *   DT_SHARED_DIR   a directory every rank sees (nfs, efs): checkpoints,
 *                   logs. Unset when the storage has none.
 * DT_DATA_PATH is also the environment form of [data] path, so a worker
 * that loads its configuration with dt_config_load_env() sees the staged
 * path there too. */
#ifndef DT_STAGING_H
#define DT_STAGING_H

#include <dt/config.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The data set directory this worker reads: $DT_DATA_PATH ("{host}"
 * expanded), else [data] path of cfg (cfg may be NULL). Refuses a copy
 * that did not complete (its ".dt-staging" marker is still there) with
 * DT_ERR_IO; DT_ERR_NOT_FOUND when no path is configured. Both logged
 * with what to do. *path is malloc'd. */
dt_status_t dt_data_path(const dt_config_t *cfg, char **path);

/* The directory every rank shares: $DT_SHARED_DIR. DT_ERR_NOT_FOUND (not
 * logged) when the job's storage has none: then rank 0 writes locally.
 * *path is malloc'd. */
dt_status_t dt_shared_dir(char **path);

#ifdef __cplusplus
}
#endif
#endif /* DT_STAGING_H */
