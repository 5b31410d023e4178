/* divergence.h — the trainer's check that training is still finite
 * (internal).
 *
 * Every step, before the optimizer applies anything, every rank votes:
 * is its loss (or, when clipping, the gradient norm) finite? The vote is
 * one collective sum, so every rank learns the same outcome at the same
 * step and takes the same decision ([train] on_divergence): a NaN on one
 * rank stops (or rolls back) all of them. Only when some rank voted
 * "diverged" does a second sum tell everyone which ranks and what value. */
#ifndef DT_DIVERGENCE_H
#define DT_DIVERGENCE_H

#include <stddef.h>
#include <dt/config.h>
#include <dt/status.h>

typedef enum dt_on_divergence {
    DT_DIVERGE_STOP = 0,     /* report and stop every rank                */
    DT_DIVERGE_HALVE_LR = 1  /* roll back to the last checkpoint, lr / 2  */
} dt_on_divergence_t;

/* Restarts on_divergence = halve_lr makes before it stops (lr / 8). */
#define DT_DIVERGE_MAX_RESTARTS 3

/* [train] on_divergence. halve_lr needs checkpoint_dir (has_ckpt_dir);
 * errors name the key and its origin. */
dt_status_t dt_on_divergence_from_config(const dt_config_t *cfg,
                                         int has_ckpt_dir,
                                         dt_on_divergence_t *out);

/* Sum n doubles over all ranks in place (the same call on every rank). */
typedef dt_status_t (*dt_sum_fn)(double *buf, size_t n, void *arg);

/* What a rank found wrong (its vote). */
typedef enum dt_bad_kind {
    DT_BAD_NONE = 0,
    DT_BAD_LOSS = 1,         /* the loss is not finite                     */
    DT_BAD_GRAD = 2,         /* the gradient norm is not finite            */
    DT_BAD_PARAMS = 3,       /* after an update: the parameters are not   */
    DT_BAD_TEST_LOSS = 4     /* ... or the test loss is not (overflow)     */
} dt_bad_kind_t;

typedef struct dt_divergence {
    int nbad;                /* ranks that found `kind` (0: all fine)     */
    int first_rank;          /* the lowest of them                         */
    dt_bad_kind_t kind;      /* what it found                              */
    double value;            /* its non-finite value                       */
} dt_divergence_t;

/* Collective: every rank passes its own kind and value (loss or norm);
 * every rank gets the same *out. world ranks, this one is rank. */
dt_status_t dt_divergence_vote(dt_bad_kind_t kind, double value, int rank,
                               int world, dt_sum_fn sum, void *arg,
                               dt_divergence_t *out);

/* The same vote carrying nflags (at most DT_VOTE_MAX_FLAGS) more numbers
 * in the same allreduce: each rank's flags[i] in, their sum over ranks
 * out. The trainer's per-step agreements ride on it at no extra
 * collective: a preemption request, rank 0's "a checkpoint is due by the
 * clock". */
#define DT_VOTE_MAX_FLAGS 7
dt_status_t dt_divergence_vote_flags(dt_bad_kind_t kind, double value,
                                     int rank, int world, dt_sum_fn sum,
                                     void *arg, double *flags, size_t nflags,
                                     dt_divergence_t *out);

#endif /* DT_DIVERGENCE_H */
