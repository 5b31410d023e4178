/* worker_env.c — rank and size from dtctl's, Open MPI's or Slurm's
 * variables (see worker_env.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "worker_env.h"

const char *dt_worker_env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* A non-negative int from variable name; def when unset (-1: required). */
static dt_status_t get_int(char *const *envp, const char *name, int def,
                           int *out)
{
    const char *v = dt_worker_env_get(envp, name);
    if (!v || !*v) {
        if (def < 0) {
            dt_error("%s is not set, but the other variables of its launcher "
                     "are; start the workers with dtctl run",
                     name);
            return DT_ERR_CONFIG;
        }
        *out = def;
        return DT_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < 0 || x > 1 << 24) {
        dt_error("%s='%s' is not a worker number", name, v);
        return DT_ERR_CONFIG;
    }
    *out = (int)x;
    return DT_OK;
}

/* Tasks on node `node` from Slurm's "2(x3),1" form. */
static int slurm_tasks_on_node(const char *spec, int node)
{
    const char *p = spec;
    while (p && *p) {
        char *end;
        long tasks = strtol(p, &end, 10), reps = 1;
        if (end == p || tasks < 1)
            return -1;
        if (strncmp(end, "(x", 2) == 0) {
            reps = strtol(end + 2, &end, 10);
            if (reps < 1 || *end != ')')
                return -1;
            end++;
        }
        if (node < reps)
            return (int)tasks;
        node -= (int)reps;
        p = *end == ',' ? end + 1 : NULL;
    }
    return -1;
}

static dt_status_t read_slurm(char *const *envp, dt_worker_env_t *w)
{
    DT_CHECK(get_int(envp, "SLURM_PROCID", -1, &w->rank));
    DT_CHECK(get_int(envp, "SLURM_NTASKS", -1, &w->size));
    DT_CHECK(get_int(envp, "SLURM_LOCALID", 0, &w->local_rank));
    if (dt_worker_env_get(envp, "SLURM_NTASKS_PER_NODE"))
        return get_int(envp, "SLURM_NTASKS_PER_NODE", 1, &w->local_size);
    const char *tpn = dt_worker_env_get(envp, "SLURM_TASKS_PER_NODE");
    int node = 0;
    DT_CHECK(get_int(envp, "SLURM_NODEID", 0, &node));
    w->local_size = tpn ? slurm_tasks_on_node(tpn, node) : 1;
    if (w->local_size < 1) {
        dt_error("SLURM_TASKS_PER_NODE='%s' has no entry for node %d", tpn,
                 node);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t dt_worker_env_read(char *const *envp, dt_worker_env_t *w)
{
    *w = (dt_worker_env_t){0, 1, 0, 1, "none"};
    const char *names = NULL;
    if (dt_worker_env_get(envp, "DT_RANK")) {
        w->source = "dtctl";
        names = "DT_RANK, DT_WORLD_SIZE, DT_LOCAL_RANK, DT_LOCAL_SIZE";
        DT_CHECK(get_int(envp, "DT_RANK", -1, &w->rank));
        DT_CHECK(get_int(envp, "DT_WORLD_SIZE", -1, &w->size));
        DT_CHECK(get_int(envp, "DT_LOCAL_RANK", 0, &w->local_rank));
        DT_CHECK(get_int(envp, "DT_LOCAL_SIZE", 1, &w->local_size));
    } else if (dt_worker_env_get(envp, "OMPI_COMM_WORLD_RANK")) {
        w->source = "Open MPI";
        names = "OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE";
        DT_CHECK(get_int(envp, "OMPI_COMM_WORLD_RANK", -1, &w->rank));
        DT_CHECK(get_int(envp, "OMPI_COMM_WORLD_SIZE", -1, &w->size));
        DT_CHECK(get_int(envp, "OMPI_COMM_WORLD_LOCAL_RANK", 0,
                         &w->local_rank));
        DT_CHECK(get_int(envp, "OMPI_COMM_WORLD_LOCAL_SIZE", 1,
                         &w->local_size));
    } else if (dt_worker_env_get(envp, "SLURM_PROCID")) {
        w->source = "Slurm";
        names = "SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, "
                "SLURM_TASKS_PER_NODE";
        DT_CHECK(read_slurm(envp, w));
    } else {
        return DT_OK;
    }
    if (w->size < 1 || w->rank >= w->size || w->local_size < 1 ||
        w->local_rank >= w->local_size || w->local_size > w->size) {
        dt_error("inconsistent worker numbers from %s (%s): rank %d of %d, "
                 "local rank %d of %d",
                 w->source, names, w->rank, w->size, w->local_rank,
                 w->local_size);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}
