/* lr_schedule.h — the learning rate at any point of training (internal).
 *
 * Scaling (lr_scaling), with N workers of batch_size B each:
 *   k = N, or fewer when lr_scaling_max_batch M caps the global batch the
 *       rule follows: k = min(N, max(1, M / B))
 *   linear: target = lr x k;  sqrt: target = lr x sqrt(k);  none: lr
 *   then at most lr_scaling_max_lr (when set); factor = target / lr.
 * Warmup (Horovod's): per step, linearly from target / N to target, over
 * warmup_steps, else warmup_epochs; warmup_epochs = auto (the default)
 * gives log2(factor) epochs, at most a quarter of the epochs (0 when the
 * lr is not scaled up). Then the schedule, on the epoch position e
 * (fractional: epoch + step / steps_per_epoch, from 0):
 *   constant: target
 *   step:     target * gamma ^ floor(e / step_epochs)
 *   cosine:   lr_min + (target - lr_min) * (1 + cos(pi * p)) / 2, with p
 *             the fraction of the post-warmup epochs done.
 * Everything is multiplied by `scale` (1; halved by on_divergence). */
#ifndef DT_LR_SCHEDULE_H
#define DT_LR_SCHEDULE_H

#include <stddef.h>
#include <dt/config.h>
#include <dt/status.h>

typedef enum dt_lr_kind {
    DT_LR_CONSTANT = 0,
    DT_LR_STEP = 1,
    DT_LR_COSINE = 2
} dt_lr_kind_t;

typedef enum dt_lr_scaling {
    DT_LR_SCALE_NONE = 0,
    DT_LR_SCALE_LINEAR = 1,
    DT_LR_SCALE_SQRT = 2
} dt_lr_scaling_t;

/* What stopped the scaling rule from growing (for messages). */
typedef enum dt_lr_cap {
    DT_LR_CAP_NONE = 0,
    DT_LR_CAP_BATCH = 1,  /* lr_scaling_max_batch                         */
    DT_LR_CAP_LR = 2      /* lr_scaling_max_lr                            */
} dt_lr_cap_t;

typedef struct dt_lr_schedule {
    double base;          /* [train] lr                                    */
    dt_lr_scaling_t scaling;
    int world;
    long long batch;      /* per worker                                    */
    double max_lr;        /* 0: no cap                                     */
    long long max_batch;  /* 0: no cap                                     */
    double workers;       /* k: the workers the rule counted (<= world)    */
    dt_lr_cap_t capped;   /* the cap that applied, if any                  */
    double factor;        /* target / base                                 */
    double target;        /* after scaling and caps                        */
    double start;         /* warmup start                                  */
    double warmup_epochs; /* resolved (after dt_lr_schedule_set_steps when
                             warmup_steps is set)                          */
    long long warmup_steps; /* 0: warmup given in epochs                   */
    int warmup_auto;      /* warmup_epochs = auto                          */
    double steps_per_epoch; /* 0 until dt_lr_schedule_set_steps            */
    double epochs;        /* total                                         */
    dt_lr_kind_t kind;
    double gamma, step_epochs, lr_min;
    double scale;         /* 1, halved by each on_divergence = halve_lr    */
} dt_lr_schedule_t;

/* From [train] lr, lr_scaling, lr_scaling_max_lr, lr_scaling_max_batch,
 * batch_size, warmup_epochs, warmup_steps, schedule, lr_gamma,
 * lr_step_epochs, lr_min, epochs. Errors name the key and its origin. */
dt_status_t dt_lr_schedule_from_config(const dt_config_t *cfg, int world,
                                       dt_lr_schedule_t *out);

/* Steps per epoch, once the data set is known: converts warmup_steps to
 * epochs (steps count from 0 at epoch position 0). */
void dt_lr_schedule_set_steps(dt_lr_schedule_t *s, double steps_per_epoch);

/* lr at epoch position e (>= 0). */
double dt_lr_at(const dt_lr_schedule_t *s, double e);
/* The scaled lr (target, caps applied, times scale) this schedule's rule
 * gives world workers of batch each: what a checkpoint written at another
 * world size ran with (train_state.c). */
double dt_lr_target_for(const dt_lr_schedule_t *s, int world,
                        long long batch);
const char *dt_lr_scaling_name(const dt_lr_schedule_t *s);

/* A warmup the job asked for (warmup_steps, or warmup_epochs other than
 * auto) that will not do what it says: on one worker it starts at the lr
 * it climbs to (nothing happens), or it outlasts the epochs (the lr never
 * reaches its target, the schedule never starts). Writes the reason
 * into buf and returns the key to name ("warmup_steps" or
 * "warmup_epochs"), or NULL when there is nothing to say. warmup_steps'
 * length is judged only after dt_lr_schedule_set_steps. */
const char *dt_lr_schedule_warmup_note(const dt_lr_schedule_t *s,
                                       char *buf, size_t len);

/* One line for -v: "lr 0.05 x 8 workers (linear) = 0.4, warmup 3 epochs
 * (351 steps) from 0.05, then cosine to 0". */
void dt_lr_schedule_describe(const dt_lr_schedule_t *s, char *buf,
                             size_t len);

#endif /* DT_LR_SCHEDULE_H */
