/* mpi_rsh.h — the ssh command mpirun reaches other hosts with (mpi_rsh.c). */
#ifndef DT_LAUNCHER_MPI_RSH_H
#define DT_LAUNCHER_MPI_RSH_H

#include <dt/plugin.h>
#include "mpi_types.h"

/* From ssh_identity / ssh_known_hosts / ssh_port (when set) the ssh
 * command mpirun reaches other hosts with, host keys verified; sets
 * c->rsh_agent. Refuses them together with rsh_agent. */
dt_status_t mpi_build_rsh_agent(mpi_conf_t *c);

#endif /* DT_LAUNCHER_MPI_RSH_H */
