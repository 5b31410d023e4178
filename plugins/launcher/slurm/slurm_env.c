/* slurm_env.c — Slurm's per-rank variables, in the one description both
 * the identify op (a program started by a plain `srun`) and the rank
 * prologue (dtctl's srun) are made from (../common/schedenv). The step's
 * variables come first: inside an allocation, srun's step may use fewer
 * tasks and nodes than the allocation (SLURM_TASKS_PER_NODE,
 * SLURM_NNODES). */
#include "../common/schedenv/schedenv.h"
#include "slurm_env.h"

static const schedenv_t slurm = {
    .source = "Slurm",
    .precedence = 0,
    .rank = (const char *const[]){"SLURM_PROCID", NULL},
    .size = (const char *const[]){"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
                                  NULL},
    .local_rank = (const char *const[]){"SLURM_LOCALID", NULL},
    .tasks_per_node = (const char *const[]){"SLURM_STEP_TASKS_PER_NODE",
                                            "SLURM_TASKS_PER_NODE", NULL},
    .node_rank = (const char *const[]){"SLURM_NODEID", NULL},
    .num_nodes = (const char *const[]){"SLURM_STEP_NUM_NODES", "SLURM_NNODES",
                                       NULL},
    .host = (const char *const[]){"SLURMD_NODENAME", NULL},
};

dt_status_t slurm_identify(char *const *envp, dt_worker_identity_t *out,
                           char *why, size_t why_len)
{
    return schedenv_identify(&slurm, envp, out, why, why_len);
}

dt_status_t slurm_prologue_identity(char **out)
{
    return schedenv_prologue(&slurm, NULL, out);
}
