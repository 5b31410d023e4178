/* slurm_env.h — Slurm's per-rank variables (slurm_env.c). */
#ifndef DT_LAUNCHER_SLURM_ENV_H
#define DT_LAUNCHER_SLURM_ENV_H

#include <stddef.h>
#include <dt/plugin.h>

/* The launcher's identify op: SLURM_PROCID & co. -> identity. */
dt_status_t slurm_identify(char *const *envp, dt_worker_identity_t *out,
                           char *why, size_t why_len);

/* The rank prologue's identity part (sh, malloc'd) from the same
 * variables. */
dt_status_t slurm_prologue_identity(char **out);

#endif /* DT_LAUNCHER_SLURM_ENV_H */
