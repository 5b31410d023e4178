/* slurm_env.c — Slurm's per-rank variables, in the one description both
 * the identify op (a program started by a plain `srun`) and the rank
 * prologue (dtctl's srun) are made from (../common/schedenv). The step's
 * variables come first: inside an allocation, srun's step may use fewer
 * tasks and nodes than the allocation (SLURM_TASKS_PER_NODE,
 * SLURM_NNODES). */
#include <stdio.h>

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

/* MASTER_ADDR on a step of several nodes. dtctl picked it from its own
 * host list, which Slurm ignores (127.0.0.1 by default): rank 0 runs on
 * the step's node 0, the first of SLURM_STEP_NODELIST ("gpu[07-09],x" ->
 * gpu07). Read here without a process; `scontrol show hostnames` only
 * for a list this cannot read. A one-node step keeps dtctl's values:
 * 127.0.0.1 reaches rank 0 there. */
static const char master_addr_sh[] =
    "if [ \"${DT_NUM_NODES:-1}\" -gt 1 ] 2>/dev/null; then\n"
    "  dt_l=${SLURM_STEP_NODELIST:-${SLURM_JOB_NODELIST:-$SLURM_NODELIST}}\n"
    "  dt_r=$dt_l; dt_m=\n"
    "  while [ -n \"$dt_r\" ]; do\n"
    "    dt_p=${dt_r%%[],[]*}; dt_m=$dt_m$dt_p; dt_r=${dt_r#\"$dt_p\"}\n"
    "    case $dt_r in\n"
    "      \\[*\\]*) dt_r=${dt_r#?}; dt_m=$dt_m${dt_r%%[],-]*}; "
    "dt_r=${dt_r#*\\]};;\n"
    "      \\[*) dt_m=; break;;\n"
    "      *) break;;\n"
    "    esac\n"
    "  done\n"
    "  case $dt_m in ''|*[!A-Za-z0-9._-]*) dt_m=; [ -z \"$dt_l\" ] ||\n"
    "    dt_m=$(scontrol show hostnames \"$dt_l\" 2>/dev/null)\n"
    "    dt_m=${dt_m%%[!A-Za-z0-9._-]*};; esac\n"
    "  [ -z \"$dt_m\" ] || export MASTER_ADDR=\"$dt_m\"\n";

/* MASTER_PORT on such a step when [cluster] master_port is not set:
 * dtctl's is a port that was free on its own machine (or 29500), not on
 * node 0; every rank derives the same one from the job and step ids
 * (slurm_env.h), so a restart (a new step) or the job beside it gets
 * another. */
static const char master_port_sh[] =
    "  dt_j=${SLURM_JOB_ID:-$SLURM_JOBID}\n"
    "  dt_s=${SLURM_STEP_ID:-${SLURM_STEPID:-0}}\n"
    "  case $dt_j:$dt_s in :*|*[!0-9:]*) ;; *)\n"
    "    export MASTER_PORT=$((" SLURM_STR(SLURM_MASTER_PORT_BASE)
    " + (dt_j * 31 + dt_s) % " SLURM_STR(SLURM_MASTER_PORT_RANGE) "));; "
    "esac\n";

static const char master_end_sh[] =
    "fi\nunset dt_l dt_r dt_m dt_p dt_j dt_s\n";

dt_status_t slurm_identify(char *const *envp, dt_worker_identity_t *out,
                           char *why, size_t why_len)
{
    return schedenv_identify(&slurm, envp, out, why, why_len);
}

dt_status_t slurm_prologue_identity(int derive_port, char **out)
{
    char extra[sizeof master_addr_sh + sizeof master_port_sh +
               sizeof master_end_sh];
    snprintf(extra, sizeof extra, "%s%s%s", master_addr_sh,
             derive_port ? master_port_sh : "", master_end_sh);
    return schedenv_prologue(&slurm, extra, out);
}
