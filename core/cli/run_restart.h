/* run_restart.h — automatic restarts of `dtctl run` ([cluster]
 * max_restarts, --max-restarts; restart_backoff): after an attempt of the
 * job ends, decide whether to start it again, say why and from which
 * checkpoint, wait the backoff, and give the next attempt its
 * environment. Also what dtctl says when the job was preempted.
 *
 * The loop itself is around the whole launch (cmd_run.c): every launcher
 * gets it, since each attempt is a complete job of its own (fresh token,
 * store, launcher context). */
#ifndef DT_CLI_RUN_RESTART_H
#define DT_CLI_RUN_RESTART_H

#include <dt/config.h>
#include "env_list.h"
#include "supervise.h"

#define RUN_RESTART_BACKOFF_MAX 60.0 /* seconds: the doubling stops here */

typedef struct run_restart {
    long long max;          /* [cluster] max_restarts                      */
    double backoff;         /* [cluster] restart_backoff, seconds          */
    int trainer;            /* dt's trainer: restarts resume (--resume)    */
    char *ckpt_dir;         /* [train] checkpoint_dir as dtctl sees it     */
    char *metrics;          /* [train] metrics: restart records go there   */
    int used;               /* restarts done so far                        */
    char run_id[16];        /* the first attempt's job id: the run's, kept
                               across restarts (TORCHELASTIC_RUN_ID)       */
} run_restart_t;

/* Read the keys. trainer: the job runs dt-train; workdir: the workers'
 * directory (relative paths are relative to it), NULL: dtctl's. On
 * failure *r holds nothing to free (run_restart_free is still safe). */
dt_status_t run_restart_init(const dt_config_t *cfg, int trainer,
                             const char *workdir, run_restart_t *r);
void run_restart_free(run_restart_t *r);

/* The next attempt's variables: DT_RESTART_COUNT (0 the first time) and,
 * for the trainer after a restart, DT_TRAIN_RESUME=yes; torchrun's
 * TORCHELASTIC_RESTART_COUNT, _MAX_RESTARTS and _RUN_ID (job_id: this
 * attempt's; the run keeps the first one's). */
dt_status_t run_restart_env(run_restart_t *r, const char *job_id,
                            env_list_t *env);

/* An attempt ended with *code (res: how). 1: start the job again (the
 * restart is logged and recorded, the backoff waited); 0: *code is
 * dtctl's exit code (75 when the job was preempted; the final messages
 * are logged). launched: the workers were started at all. */
int run_restart_next(run_restart_t *r, const supervise_result_t *res,
                     int launched, int *code);

#endif /* DT_CLI_RUN_RESTART_H */
