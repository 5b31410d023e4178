/* sweep.h — kill what a job left on the other hosts (sweep.c). */
#ifndef DT_LAUNCHER_MPI_SWEEP_H
#define DT_LAUNCHER_MPI_SWEEP_H

#include "mpi_types.h"

/* On every remote host of the job, kill the processes that
 * carry its DT_JOB_ID (after a job that did not end cleanly). */
void mpi_sweep_remote(mpi_launcher_t *L);

#endif /* DT_LAUNCHER_MPI_SWEEP_H */
