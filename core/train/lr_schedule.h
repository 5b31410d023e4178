/* lr_schedule.h — the learning rate at any point of training (internal).
 *
 * target = lr x world size (lr_scaling = linear) or lr (none).
 * Warmup (Horovod's): over the first warmup_epochs, per step, linearly
 * from target / world to target. Then the schedule, on the epoch position
 * e (fractional: epoch + step / steps_per_epoch, from 0):
 *   constant: target
 *   step:     target * gamma ^ floor(e / step_epochs)
 *   cosine:   lr_min + (target - lr_min) * (1 + cos(pi * p)) / 2, with p
 *             the fraction of the post-warmup epochs done. */
#ifndef DT_LR_SCHEDULE_H
#define DT_LR_SCHEDULE_H

#include <dt/config.h>
#include <dt/status.h>

typedef enum dt_lr_kind {
    DT_LR_CONSTANT = 0,
    DT_LR_STEP = 1,
    DT_LR_COSINE = 2
} dt_lr_kind_t;

typedef struct dt_lr_schedule {
    double target;        /* after scaling                                 */
    double start;         /* warmup start                                  */
    double warmup_epochs;
    double epochs;        /* total                                         */
    dt_lr_kind_t kind;
    double gamma, step_epochs, lr_min;
} dt_lr_schedule_t;

/* From [train] lr, lr_scaling, warmup_epochs, schedule, lr_gamma,
 * lr_step_epochs, lr_min, epochs. Errors name the key and its origin. */
dt_status_t dt_lr_schedule_from_config(const dt_config_t *cfg, int world,
                                       dt_lr_schedule_t *out);

/* lr at epoch position e (>= 0). */
double dt_lr_at(const dt_lr_schedule_t *s, double e);

/* A [train] key holding a real number (the config has no float type). */
dt_status_t dt_config_get_real(const dt_config_t *cfg, const char *section,
                               const char *key, double *out);

#endif /* DT_LR_SCHEDULE_H */
