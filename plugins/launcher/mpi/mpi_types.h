/* mpi_types.h — the mpi launcher's state: types only, no functions, so
 * every file may include it without depending on another file's code.
 *
 * Files depend one way (each .c includes only the headers of the files
 * below it; each header declares only what its own .c defines):
 *
 *   mpi.c            the ops table, init/launch/wait/signal/fini
 *     mpi_env        Open MPI's variables: identify, the prologue's part
 *     mpi_command    the mpirun command line
 *     mpi_ipv6       IPv6 hosts and networks mpirun cannot take (a leaf)
 *     mpi_rsh        the ssh command mpirun reaches other hosts with
 *     mpi_lines      mpirun's own output lines
 *     check          dtctl check      -> check_rsh, mpi_ipv6
 *     sweep          leftovers' kill  -> run_on_host -> check_rsh
 *     check_rsh      the rsh agent, probing a host -> program
 *     program        is a program on PATH (a leaf)
 */
#ifndef DT_LAUNCHER_MPI_TYPES_H
#define DT_LAUNCHER_MPI_TYPES_H

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

#endif /* DT_LAUNCHER_MPI_TYPES_H */
