/* worker_env.h — who this worker is, from the environment that dtctl set,
 * or else from the scheduler that started it (a plain mpirun or srun),
 * which the launcher plugins recognise. Internal to libdt; exported as
 * dt_worker_env_* so the tests can reach it. */
#ifndef DT_WORKER_ENV_H
#define DT_WORKER_ENV_H

#include <dt/status.h>

typedef struct dt_worker_env {
    int rank, size;
    int local_rank, local_size;
    char source[32]; /* "dtctl", a launcher's ("Open MPI", "Slurm"), or
                        "none" (a job of one) */
} dt_worker_env_t;

/* DT_RANK/DT_WORLD_SIZE/DT_LOCAL_RANK/DT_LOCAL_SIZE when DT_RANK is set.
 * Otherwise the installed launcher plugins (loaded only now) are asked
 * through their `identify` op (include/dt/plugin.h): the one that
 * recognises envp, the highest precedence when several do; none: a job of
 * one. envp is an environ-style array. DT_ERR_CONFIG (logged, naming the
 * variables) for values that are not numbers or do not fit together. */
dt_status_t dt_worker_env_read(char *const *envp, dt_worker_env_t *out);

/* The value of name in envp, or NULL. */
const char *dt_worker_env_get(char *const *envp, const char *name);

#endif /* DT_WORKER_ENV_H */
