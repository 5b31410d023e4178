/* run_stage.h — the staging step of `dtctl run` and `dtctl stage`: the
 * storage plugin ([cluster] storage) puts [data] path where every host's
 * workers can read it, reaching the hosts through the launcher. */
#ifndef DT_CLI_RUN_STAGE_H
#define DT_CLI_RUN_STAGE_H

#include <dt/config.h>
#include <dt/hosts.h>
#include <dt/plugin.h>
#include "env_list.h"

typedef enum run_stage_mode {
    RUN_STAGE_COPY = 0,  /* stage: copy / check, then the shared dir     */
    RUN_STAGE_VERIFY,    /* only check that it is in place everywhere    */
    RUN_STAGE_SKIP       /* --no-stage: touch nothing, just the paths    */
} run_stage_mode_t;

typedef struct run_stage_args {
    const dt_config_t *cfg;
    const dt_hostlist_t *hosts;
    const dt_launcher_ops_t *launcher; /* its run_on_host reaches hosts */
    void *launcher_ctx;                /* initialised                   */
    const char *job_id;
    run_stage_mode_t mode;
    int (*stop)(void);                 /* a stop signal came (or NULL)  */
} run_stage_args_t;

/* Run the step. A stop signal (a->stop) ends a copy: DT_ERR_INTERRUPTED.
 * On DT_OK, *data_path is what workers get as DT_DATA_PATH
 * and *shared_dir as DT_SHARED_DIR (malloc'd; NULL when there is none,
 * e.g. no [data] path). Errors are logged by the plugin (host, path). */
dt_status_t run_stage(const run_stage_args_t *a, char **data_path,
                      char **shared_dir);

/* run_stage, then DT_DATA_PATH and DT_SHARED_DIR (when there are) into
 * the workers' common environment: dtctl run's whole staging step. */
dt_status_t run_stage_env(const run_stage_args_t *a, env_list_t *env);

#endif /* DT_CLI_RUN_STAGE_H */
