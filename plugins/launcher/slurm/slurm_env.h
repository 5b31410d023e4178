/* slurm_env.h — Slurm's per-rank variables (slurm_env.c). */
#ifndef DT_LAUNCHER_SLURM_ENV_H
#define DT_LAUNCHER_SLURM_ENV_H

#include <stddef.h>
#include <dt/plugin.h>

/* MASTER_PORT of a step on several nodes without [cluster] master_port:
 * BASE + (SLURM_JOB_ID * 31 + SLURM_STEP_ID) % RANGE. */
#define SLURM_MASTER_PORT_BASE 20000
#define SLURM_MASTER_PORT_RANGE 10000
#define SLURM_STR_(x) #x
#define SLURM_STR(x) SLURM_STR_(x)

/* The launcher's identify op: SLURM_PROCID & co. -> identity. */
dt_status_t slurm_identify(char *const *envp, dt_worker_identity_t *out,
                           char *why, size_t why_len);

/* The rank prologue's identity part (sh, malloc'd) from the same
 * variables; on a step of several nodes it also exports MASTER_ADDR (the
 * step's first node) and, with derive_port (no [cluster] master_port),
 * MASTER_PORT from the job and step ids. */
dt_status_t slurm_prologue_identity(int derive_port, char **out);

#endif /* DT_LAUNCHER_SLURM_ENV_H */
