/* mpi_env.c — Open MPI's per-rank variables, in the one description both
 * the identify op (a program started by a plain `mpirun`) and the rank
 * prologue (dtctl's mpirun) are made from (../common/schedenv). */
#include "../common/frontend/prologue.h"
#include "../common/schedenv/schedenv.h"
#include "mpi_env.h"

static const schedenv_t ompi = {
    .source = "Open MPI",
    /* mpirun runs inside Slurm and SGE jobs: its variables are the inner
     * ones, so they win over the scheduler's */
    .precedence = 1,
    .rank = (const char *const[]){"OMPI_COMM_WORLD_RANK", NULL},
    .size = (const char *const[]){"OMPI_COMM_WORLD_SIZE", NULL},
    .local_rank = (const char *const[]){"OMPI_COMM_WORLD_LOCAL_RANK", NULL},
    .local_size = (const char *const[]){"OMPI_COMM_WORLD_LOCAL_SIZE", NULL},
    /* no node index: dtctl's placement gives it (prologue_placement_sh) */
    .host = (const char *const[]){"PMIX_HOSTNAME", NULL},
};

dt_status_t mpi_identify(char *const *envp, dt_worker_identity_t *out,
                         char *why, size_t why_len)
{
    return schedenv_identify(&ompi, envp, out, why, why_len);
}

dt_status_t mpi_prologue_identity(char **out)
{
    return schedenv_prologue(&ompi, prologue_placement_sh, out);
}
