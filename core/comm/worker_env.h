/* worker_env.h — who this worker is, from the environment that dtctl (or
 * mpirun, or srun) set. Internal to libdt; exported as dt_worker_env_* so
 * the tests can reach it. */
#ifndef DT_WORKER_ENV_H
#define DT_WORKER_ENV_H

#include <dt/status.h>

typedef struct dt_worker_env {
    int rank, size;
    int local_rank, local_size;
    const char *source; /* "dtctl", "Open MPI", "Slurm", or "none" (N=1) */
} dt_worker_env_t;

/* Read, in order of preference, DT_RANK/DT_WORLD_SIZE/DT_LOCAL_RANK/
 * DT_LOCAL_SIZE, OMPI_COMM_WORLD_*, SLURM_PROCID/NTASKS/LOCALID (local size
 * from SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE and SLURM_NODEID).
 * None set: a job of one. envp is an environ-style array. DT_ERR_CONFIG
 * (logged, naming the variable) for values that are not numbers or do not
 * fit together. */
dt_status_t dt_worker_env_read(char *const *envp, dt_worker_env_t *out);

/* The value of name in envp, or NULL. */
const char *dt_worker_env_get(char *const *envp, const char *name);

#endif /* DT_WORKER_ENV_H */
