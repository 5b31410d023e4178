/* schedenv.h — a scheduler's per-rank variables, described once, and the
 * two things made from that description:
 *
 *   schedenv_identify  C: envp -> dt_worker_identity_t (the launcher's
 *                      `identify` op; libdt asks it when a program was
 *                      started by a plain mpirun or srun, without dtctl);
 *   schedenv_prologue  sh: the part of the rank prologue that sets
 *                      DT_RANK, DT_LOCAL_RANK, ... from the same variables
 *                      (jobs that dtctl starts through mpirun or srun).
 *
 * So a launcher lists its scheduler's variable names in one schedenv_t
 * (plugins/launcher/mpi/mpi_env.c, slurm/slurm_env.c) and both paths read
 * the same variables, with the same fallbacks and defaults:
 *
 *   field           unset (every name)                C        sh
 *   rank            not this scheduler's environment  NOT_FOUND (empty)
 *   size            an error naming the variable      CONFIG   (empty)
 *   local_rank      0
 *   local_size      tasks_per_node[node], else 1
 *   node_rank       -1 (0 to index tasks_per_node)
 *   num_nodes       -1
 *   host            (sh only) $(hostname)
 *
 * A field's names are tried in order, the first one set and non-empty
 * wins (SLURM_STEP_TASKS_PER_NODE before SLURM_TASKS_PER_NODE). */
#ifndef DT_LAUNCHER_SCHEDENV_H
#define DT_LAUNCHER_SCHEDENV_H

#include <stddef.h>
#include <dt/plugin.h>

/* NULL-terminated list of variable names; NULL: the scheduler has none. */
typedef const char *const *schedenv_names_t;

typedef struct schedenv {
    const char *source;        /* "Slurm": dt_worker_identity_t.source     */
    int precedence;            /* dt_worker_identity_t.precedence          */
    schedenv_names_t rank;     /* required: its presence is the test       */
    schedenv_names_t size;
    schedenv_names_t local_rank;
    schedenv_names_t local_size;     /* a plain count                      */
    schedenv_names_t tasks_per_node; /* Slurm's "2(x3),1": tasks on each
                                        node, by node_rank                 */
    schedenv_names_t node_rank;
    schedenv_names_t num_nodes;
    schedenv_names_t host;     /* the host's name (sh only)                */
} schedenv_t;

/* The launcher's identify op for scheduler v (see dt_launcher_ops_t). */
dt_status_t schedenv_identify(const schedenv_t *v, char *const *envp,
                              dt_worker_identity_t *out, char *why,
                              size_t why_len);

/* The prologue's identity part for v (POSIX sh, malloc'd in *out): sets
 * DT_RANK, DT_WORLD_SIZE, DT_LOCAL_RANK, DT_LOCAL_SIZE, DT_NODE_RANK,
 * DT_NUM_NODES and DT_HOST from v's variables, then runs `extra` (the
 * launcher's own adjustments, may be NULL: mpi's maps ranks to dtctl's
 * placement), then exports them with torchrun's names (RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE); an empty
 * DT_WORLD_SIZE, DT_NODE_RANK or DT_NUM_NODES is left as it was. */
dt_status_t schedenv_prologue(const schedenv_t *v, const char *extra,
                              char **out);

/* Tasks on node `node` from Slurm's "2(x3),1" form; -1 when the form is
 * malformed or has no such node. */
int schedenv_tasks_on_node(const char *spec, int node);

#endif /* DT_LAUNCHER_SCHEDENV_H */
