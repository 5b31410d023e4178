/* job_memory.h — what one worker of a job will hold in memory, said by
 * dtctl check before anything starts (each worker checks it against its
 * host at its own start: core/train/train_memory_check.c). */
#ifndef DT_CLI_JOB_MEMORY_H
#define DT_CLI_JOB_MEMORY_H

#include <stddef.h>
#include <dt/config.h>
#include <dt/status.h>

/* One line for the job of cfg: "about X GiB per worker at batch N
 * (parameters A, ...)". DT_ERR_NOT_FOUND when the input's shape is not
 * known here (an image folder elsewhere); another error when the model
 * does not parse (said). */
dt_status_t job_memory_line(const dt_config_t *cfg, char *buf, size_t len,
                            size_t *per_worker);

/* np workers of per_worker bytes each, all on this machine: 0 when they
 * clearly do not fit what it has (MemAvailable + SwapFree, the address
 * space limit, the cgroup's: the check each worker makes at its start,
 * train_memory_check.c, with its 10% margin), buf then saying by how
 * much and what to do; 1 when they fit or nothing is known. */
int job_memory_fits_here(size_t per_worker, int np, char *buf, size_t len);

#endif
