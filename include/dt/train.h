/* dt/train.h — dt's built-in data-parallel trainer as a library call: what
 * the dt-train worker program runs. A program that embeds the trainer
 * calls dt_init, builds a configuration (dt/config.h: the job file's
 * [model], [data], [train] sections and [cluster]), checks it and runs it,
 * then dt_finalize. */
#ifndef DT_PUBLIC_TRAIN_H
#define DT_PUBLIC_TRAIN_H

#include <dt/config.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Check the [train] settings of cfg for a job of `world` workers without
 * running anything (dtctl does before it starts workers, so errors name
 * the job file's lines). */
dt_status_t dt_train_check_config(const dt_config_t *cfg, int world);

/* Run the whole job on this worker: data, model, the training loop,
 * evaluation, checkpoints and metrics as cfg says. *final_accuracy (may
 * be NULL) gets the last test accuracy (0..1). Every rank calls it. */
dt_status_t dt_train_run(dt_config_t *cfg, double *final_accuracy);

#ifdef __cplusplus
}
#endif
#endif /* DT_PUBLIC_TRAIN_H */
