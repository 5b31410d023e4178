/* slurm.h — state shared by the slurm launcher's files. */
#ifndef DT_LAUNCHER_SLURM_H
#define DT_LAUNCHER_SLURM_H

#include <dt/plugin.h>
#include "../common/frontend/frontend.h"
#include "../common/frontend/strv.h"

/* [launcher.slurm]. Strings are "" when unset; ints 0. */
typedef struct slurm_conf {
    const char *partition;
    const char *time_limit;
    const char *account;
    const char *job_name;
    long long nodes;
    long long tasks_per_node;
    char **extra_args;   /* salloc options (new allocations only) */
    char **srun_args;    /* srun options                          */
} slurm_conf_t;

typedef struct slurm_launcher {
    slurm_conf_t conf;
    frontend_t *fe;
    int inside;          /* dtctl runs inside an allocation          */
    char alloc_id[32];   /* SLURM_JOB_ID, or salloc's new job's id   */
    char step_name[64];  /* unique -J of our srun / salloc           */
    int cancelled;
    long long np;        /* [cluster] np, for the preflight          */
    int np_given;        /* np is set, not the default (-n, a file)  */
    int master_port_set; /* [cluster] master_port: keep MASTER_PORT  */
} slurm_launcher_t;

/* The command: `srun ...` inside an allocation, else `salloc ... srun
 * ...`; then `sh -c PROLOGUE dt-worker PROGRAM ARGS`. */
dt_status_t slurm_build_argv(const slurm_launcher_t *L,
                             const dt_launch_spec_t *spec, const char *script,
                             strv_t *argv);

/* salloc's and srun's own lines: the job id, failing tasks. */
int slurm_on_line(void *arg, frontend_t *fe, int fd, const char *line);

/* Cancel our job (new allocation) or our step (inside one) with scancel.
 * signo SIGKILL: at once; otherwise Slurm's cancel (SIGTERM, SIGKILL after
 * KillWait). DT_ERR_NOT_FOUND when the job is not known yet. */
dt_status_t slurm_cancel(slurm_launcher_t *L, int signo);

/* Ctrl-Z and fg: SIGSTOP or SIGCONT to every process of our step(s)
 * (scancel --signal; slurmstepd signals the step's processes, the
 * workers in their own sessions too, and keeps running itself). Not
 * DT_OK, said why, when scancel did not. */
dt_status_t slurm_stop_or_continue(slurm_launcher_t *L, int signo);

/* allocation.c: the tasks of the allocation dtctl runs in (SLURM_NTASKS,
 * else SLURM_NPROCS; 0 when unknown), and a warning when the job's np
 * does not fit it or, np not given, leaves part of it unused. */
long long slurm_alloc_tasks(void);
void slurm_say_np_fit(const slurm_launcher_t *L, int np);

/* The preflight of `dtctl check` (check.c). */
dt_status_t slurm_check(void *ctx, const dt_hostlist_t *hosts,
                        void (*report)(void *arg, const char *host,
                                       const char *problem),
                        void *arg);

/* run_on_host.c: argv on one node with `srun -N1 -n1 -w NODE`. */
dt_status_t slurm_run_on_host(void *ctx, const dt_host_t *host,
                              const char *const *argv, char **output,
                              int *exit_code);

#endif /* DT_LAUNCHER_SLURM_H */
