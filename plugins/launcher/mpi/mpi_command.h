/* mpi_command.h — the mpirun command line (mpi_command.c). */
#ifndef DT_LAUNCHER_MPI_COMMAND_H
#define DT_LAUNCHER_MPI_COMMAND_H

#include <dt/plugin.h>
#include "../common/frontend/strv.h"
#include "mpi_types.h"

/* The mpirun command line for spec: options, then `sh -c PROLOGUE
 * dt-worker PROGRAM ARGS`. env is the environment mpirun gets: each of
 * its variable names is exported with -x (names only: values, the job
 * token among them, never reach any argv). */
dt_status_t mpi_build_argv(const mpi_conf_t *c, const dt_launch_spec_t *spec,
                           const char *const *env, const char *script,
                           strv_t *argv);

#endif /* DT_LAUNCHER_MPI_COMMAND_H */
