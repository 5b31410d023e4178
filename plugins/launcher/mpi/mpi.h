/* mpi.h — state shared by the mpi launcher's files. */
#ifndef DT_LAUNCHER_MPI_H
#define DT_LAUNCHER_MPI_H

#include <stdbool.h>
#include <dt/plugin.h>
#include "../frontend/frontend.h"
#include "../frontend/strv.h"

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
dt_status_t mpi_rsh_agent(mpi_conf_t *c);

/* mpirun's own lines: the rank it names when one was killed. */
int mpi_on_line(void *arg, frontend_t *fe, int fd, const char *line);

#endif /* DT_LAUNCHER_MPI_H */
