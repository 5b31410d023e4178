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
/* Where a worker program of dt (dt-train, dt_allreduce_bench) is:
 * $DT_LIBEXECDIR/name when set; the build tree's build_subdir/name when
 * this dtctl runs from the build tree; else beside this binary (a tree
 * staged with DESTDIR or moved whole: <root><libexecdir>, then
 * <bindir>/../libexec/dt); else the configured libexecdir. */
void dt_cli_worker_program(const char *build_subdir, const char *name,
                           char *buf, size_t len);

dt_status_t run_trainer_prepare(const dt_config_t *cfg, int np, char *path,
                                size_t len);

/* The input of [data] dataset: channels, height, width, classes (one
 * place for dtctl run, config and plan). DT_ERR_NOT_FOUND: an image
 * folder whose shape is not known on this host; DT_ERR_CONFIG (said): a
 * data set dt does not read. */
dt_status_t run_trainer_input_shape(const dt_config_t *cfg, int shape[4]);
/* As run_trainer_input_shape; on DT_ERR_NOT_FOUND why says what is
 * missing, with the path ("[data] path/train = /data/x/train: not a
 * directory here (No such file or directory)"). */
dt_status_t run_trainer_input_shape_why(const dt_config_t *cfg, int shape[4],
                                        char *why, size_t len);

#endif /* DT_RUN_TRAINER_H */
