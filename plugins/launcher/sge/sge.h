/* sge.h — state shared by the Son of Grid Engine launcher's files. */
#ifndef DT_LAUNCHER_SGE_H
#define DT_LAUNCHER_SGE_H

#include <dt/plugin.h>
#include "jobdir.h"

typedef struct sge_conf {
    const char *pe, *queue, *project, *job_name, *shared_dir;
    char **resources;      /* -l items       */
    size_t nresources;
    char **extra_args;     /* passed as they are, before the script */
    size_t nextra;
    bool export_env;       /* DIR/env, not -V (env_file.c) */
    bool verify;           /* -w e           */
    int poll_ms;
    int submit_timeout_ms;
    char *home_dir;        /* default shared_dir, malloc'd */
} sge_conf_t;

typedef struct sge_launcher {
    sge_conf_t conf;
    int launched;
    char *dir;             /* the job directory                       */
    char *name;            /* -N                                      */
    char job_id[32];       /* SGE's job number once submitted         */
    proc_t qsub;           /* qsub -sync y: lives as long as the job  */
    strbuf_t qsub_out, qsub_err;
    int qsub_status;
    int job_over;          /* qsub returned                           */
    int qdel_sent;         /* 0, 1 (stop asked), 2 (asked again)      */
    jobdir_mon_t mon;
    int mon_ready;
    char *auto_pe;         /* the PE chosen when [launcher.sge] pe is unset */
} sge_launcher_t;

/* script.c: the job script (no secret in it). env_file: each worker
 * reads DIR/SGE_ENV_FILE before it starts the program. */
dt_status_t sge_script(const dt_launch_spec_t *spec, const char *dir,
                       const char *workdir, int env_file, strbuf_t *out);
/* The variables the job script sets per rank ("NAME=value" entries). */
int sge_script_sets(const char *entry);

/* env_file.c: environment (dtctl's) as DIR/SGE_ENV_FILE, 0600, less the
 * job token, what SGE and the script set per job and rank, and names sh
 * cannot assign. */
#define SGE_ENV_FILE "env"
dt_status_t sge_write_env(const char *dir, const dt_launch_spec_t *spec,
                          char *const *environment);
/* submit.c */
dt_status_t sge_launch(void *ctx, const dt_launch_spec_t *spec);
/* [launcher.sge] pe unset: the one PE that can hold np workers becomes
 * conf.pe (said at -v); else DT_ERR_CONFIG, logged with every PE. */
dt_status_t sge_pick_pe(sge_launcher_t *L, int np);
/* watch.c */
dt_status_t sge_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev);
dt_status_t sge_signal(void *ctx, int signo);
/* qdel the job (if it is still there) and wait for qsub to return. */
void sge_stop_and_reap(sge_launcher_t *L);

/* run_on_host.c: argv on one execution host with qrsh. */
dt_status_t sge_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code);

#endif /* DT_LAUNCHER_SGE_H */
