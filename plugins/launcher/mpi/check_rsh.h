/* check_rsh.h — the rsh agent mpirun uses, and probing a host with it
 * (check_rsh.c). */
#ifndef DT_LAUNCHER_MPI_CHECK_RSH_H
#define DT_LAUNCHER_MPI_CHECK_RSH_H

#include <dt/plugin.h>
#include "../common/frontend/strv.h"
#include "mpi_types.h"

/* The rsh agent mpirun will use, as words (the first alternative of
 * "A : B" that is on PATH). DT_ERR_NOT_FOUND when none is. */
dt_status_t mpi_rsh_agent(const mpi_conf_t *c, strv_t *words);

/* Reach host h with the agent as mpirun would (ssh in BatchMode) and look
 * for orted there; each problem goes to report with its fix. */
void mpi_check_host(const mpi_conf_t *c, const strv_t *agent,
                    const dt_host_t *h,
                    void (*report)(void *, const char *, const char *),
                    void *arg);

#endif /* DT_LAUNCHER_MPI_CHECK_RSH_H */
