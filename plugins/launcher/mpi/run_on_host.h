/* run_on_host.h — a short command on one host (run_on_host.c). */
#ifndef DT_LAUNCHER_MPI_RUN_ON_HOST_H
#define DT_LAUNCHER_MPI_RUN_ON_HOST_H

#include <dt/plugin.h>

/* argv on host h, here directly, elsewhere through the
 * rsh agent mpirun uses; output is stdout and stderr together. */
dt_status_t mpi_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code);

#endif /* DT_LAUNCHER_MPI_RUN_ON_HOST_H */
