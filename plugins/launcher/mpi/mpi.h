/* mpi.h — state shared by the mpi launcher's files. */
#ifndef DT_LAUNCHER_MPI_H
#define DT_LAUNCHER_MPI_H

#include <stdbool.h>
#include <dt/plugin.h>
#include "../common/frontend/frontend.h"
#include "../common/frontend/strv.h"

/* [launcher.mpi] and the [cluster] keys it uses. */
typedef struct mpi_conf {
    const char *mpirun;      /* program (PATH lookup)                   */
    const char *map_by;      /* --map-by; "" leaves mpirun's default     */
    const char *bind_to;     /* --bind-to; ""                            */
    bool oversubscribe;
    const char *rsh_agent;   /* --mca plm_rsh_agent; ""                  */
    const char *ssh_identity;    /* build the agent from these; ""       */
    const char *ssh_known_hosts;
    long long ssh_port;          /* 0: ssh's default                      */
    char *rsh_agent_built;       /* owned; rsh_agent points at it         */
    char **extra_args;       /* before the program                       */
    char **env_vars;         /* names also passed with -x when set       */
    char **interface;        /* [cluster] interface                      */
} mpi_conf_t;

typedef struct mpi_launcher {
    mpi_conf_t conf;
    frontend_t *fe;
    int stopping;
    int signalled;           /* dtctl asked the job to stop             */
    char job_id[72];         /* DT_JOB_ID of the launched job           */
    dt_hostlist_t hosts;     /* owned copy of the job's hosts           */
} mpi_launcher_t;

/* The mpirun command line for spec: options, then `sh -c PROLOGUE
 * dt-worker PROGRAM ARGS`. env is the environment mpirun gets: each of
 * its variable names is exported with -x (names only: values, the job
 * token among them, never reach any argv). */
dt_status_t mpi_build_argv(const mpi_conf_t *c, const dt_launch_spec_t *spec,
                           const char *const *env, const char *script,
                           strv_t *argv);

/* From ssh_identity / ssh_known_hosts / ssh_port (when set) the ssh
 * command mpirun reaches other hosts with, host keys verified; sets
 * c->rsh_agent. Refuses them together with rsh_agent. */
dt_status_t mpi_build_rsh_agent(mpi_conf_t *c);

/* mpirun's own lines: the rank it names when one was killed. */
int mpi_on_line(void *arg, frontend_t *fe, int fd, const char *line);

/* Is prog runnable: a path, or a name found on PATH? */
int mpi_program_found(const char *prog);

/* ---- `dtctl check` (check.c, check_rsh.c) ---- */
dt_status_t mpi_check(void *ctx, const dt_hostlist_t *hosts,
                      void (*report)(void *arg, const char *host,
                                     const char *problem),
                      void *arg);

/* The rsh agent mpirun will use, as words (the first alternative of
 * "A : B" that is on PATH). DT_ERR_NOT_FOUND when none is. */
dt_status_t mpi_rsh_agent(const mpi_conf_t *c, strv_t *words);

/* Reach host h with the agent as mpirun would (ssh in BatchMode) and look
 * for orted there; each problem goes to report with its fix. */
void mpi_check_host(const mpi_conf_t *c, const strv_t *agent,
                    const dt_host_t *h,
                    void (*report)(void *, const char *, const char *),
                    void *arg);

/* run_on_host.c: argv on host h, here directly, elsewhere through the
 * rsh agent mpirun uses; output is stdout and stderr together. */
dt_status_t mpi_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code);

/* sweep.c: on every remote host of the job, kill the processes that
 * carry its DT_JOB_ID (after a job that did not end cleanly). */
void mpi_sweep_remote(mpi_launcher_t *L);

#endif /* DT_LAUNCHER_MPI_H */
