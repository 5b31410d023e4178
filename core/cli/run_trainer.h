/* run_trainer.h — `dtctl run JOB.ini` with no program: dt's built-in
 * trainer (the dt-train worker program) runs on every worker. */
#ifndef DT_RUN_TRAINER_H
#define DT_RUN_TRAINER_H

#include <stddef.h>
#include <dt/config.h>
#include <dt/status.h>

/* Check what can be checked before any worker starts (the layer string,
 * with the job file's line and a caret under the bad token; the [train]
 * settings for np workers), and write the worker program's path into
 * path. */
dt_status_t run_trainer_prepare(const dt_config_t *cfg, int np, char *path,
                                size_t len);

#endif /* DT_RUN_TRAINER_H */
