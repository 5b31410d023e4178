/* mpi_env.h — Open MPI's per-rank variables (mpi_env.c). A leaf: it
 * depends on no other file of this launcher. */
#ifndef DT_LAUNCHER_MPI_ENV_H
#define DT_LAUNCHER_MPI_ENV_H

#include <stddef.h>
#include <dt/plugin.h>

/* The launcher's identify op: OMPI_COMM_WORLD_* -> identity. */
dt_status_t mpi_identify(char *const *envp, dt_worker_identity_t *out,
                         char *why, size_t why_len);

/* The rank prologue's identity part (sh, malloc'd): the same variables,
 * then node and host from dtctl's placement. */
dt_status_t mpi_prologue_identity(char **out);

#endif /* DT_LAUNCHER_MPI_ENV_H */
