/* train_guard.c — what keeps training finite, between the gradient
 * allreduce and the optimizer step: clipping ([train] clip_grad_value,
 * clip_grad_norm), the collective vote on a finite loss, and what to do
 * when it is not ([train] on_divergence): say which epoch, step and rank,
 * the effective lr and global batch and which keys would help; then stop,
 * or roll back to the last checkpoint with half the lr. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <dt/clock.h>
#include <dt/dt.h>
#include <dt/log.h>
#include "ckpt/ckpt.h"
#include "nn/device_math.h"
#include "preempt.h"
#include "train.h"

static dt_status_t sum_all(double *buf, size_t n, void *arg)
{
    (void)arg;
    return dt_allreduce(buf, buf, n, DT_FLOAT64, DT_SUM);
}

/* Clip the averaged gradient (on a host copy when it lives on a GPU). */
static dt_status_t clip(dt_trainer_t *t, double *norm)
{
    size_t bytes = t->nparams * sizeof(float);
    float *g = t->grads;
    if (t->dev->mem != DT_MEM_HOST) {
        if (!t->clip_host)
            DT_CHECK(dt_device_host_alloc(t->dev, bytes,
                                          (void **)&t->clip_host));
        DT_CHECK(dt_device_copy(t->dev, t->clip_host, DT_MEM_HOST, t->grads,
                                t->dev->mem, bytes));
        g = t->clip_host;
    }
    *norm = dt_grad_clip_apply(&t->clip, g, t->nparams);
    if (g != t->grads)
        DT_CHECK(dt_device_copy(t->dev, t->grads, t->dev->mem, g,
                                DT_MEM_HOST, bytes));
    return DT_OK;
}

#define ADD(...)                                                             \
    do {                                                                     \
        if (at < len)                                                        \
            at += (size_t)snprintf(buf + at, len - at, __VA_ARGS__);         \
    } while (0)

/* "lower [train] lr (now 0.05); lr_scaling_max_batch ...": the keys that
 * would help, given what is set. */
static void advice(const dt_trainer_t *t, char *buf, size_t len)
{
    const dt_lr_schedule_t *s = &t->lr;
    size_t at = 0;
    ADD("a lower [train] lr (now %g)", s->base);
    if (s->scaling != DT_LR_SCALE_NONE && s->factor > 1.0) {
        /* half the global batch the rule counts now (after any cap) */
        long long half = (long long)(s->workers * (double)s->batch / 2);
        double lr_half = s->target / 2 > s->base ? s->target / 2 : s->base;
        if (half < s->batch)
            half = s->batch;
        ADD("; stop lr_scaling (%s, x%.3g) growing at a smaller global "
            "batch: lr_scaling_max_batch = %lld, or lr_scaling_max_lr = %g",
            s->scaling == DT_LR_SCALE_LINEAR ? "linear" : "sqrt", s->factor,
            half, lr_half);
        if (s->scaling == DT_LR_SCALE_LINEAR)
            ADD(", or lr_scaling = sqrt");
    }
    if (s->warmup_epochs > 0 || s->factor > 1.0)
        ADD("; a longer warmup: warmup_epochs or warmup_steps (now %g "
            "epoch%s)", s->warmup_epochs, s->warmup_epochs == 1 ? "" : "s");
    if (t->clip.max_norm <= 0)
        ADD("; clip_grad_norm = 1 (clips the averaged gradient)");
    if (t->on_divergence == DT_DIVERGE_STOP)
        ADD("; on_divergence = halve_lr%s restarts from the last checkpoint "
            "with half the lr", t->ckpt_dir ? "" : " (with checkpoint_dir)");
}

static void report(const dt_trainer_t *t, const dt_divergence_t *d,
                   double lr, uint64_t s, uint64_t job_step, bool fatal)
{
    char what[256], help[768];
    size_t at = 0, len = sizeof what;
    char *buf = what;
    if (d->kind == DT_BAD_LOSS) {
        ADD("the loss is %g on rank %d", d->value, d->first_rank);
        if (d->nbad > 1)
            ADD(" (and %d other rank%s)", d->nbad - 1,
                d->nbad == 2 ? "" : "s");
    } else if (d->kind == DT_BAD_GRAD) {
        ADD("the norm of the averaged gradient is %g", d->value);
    } else if (d->kind == DT_BAD_PARAMS) {
        ADD("its optimizer update left the parameters not finite (the sum "
            "of their magnitudes is %g) although its loss was finite",
            d->value);
    } else {
        ADD("the test loss after it is %g: the parameters are finite but "
            "so large that the model's outputs overflow", d->value);
    }
    dt_log(fatal ? DT_LOG_ERROR : DT_LOG_WARN,
           "training diverged at epoch %llu step %llu (step %llu of the "
           "job): %s; effective lr %.4g, global batch %lld (%d worker%s x "
           "%zu)", (unsigned long long)t->epoch + 1,
           (unsigned long long)s + 1, (unsigned long long)job_step, what,
           lr, (long long)t->world * (long long)t->batch, t->world,
           t->world == 1 ? "" : "s", t->batch);
    if (fatal) {
        advice(t, help, sizeof help);
        dt_error("what helps ([train] keys): %s", help);
    }
}
#undef ADD

/* Rank 0, after a rollback to the current step: the checkpoints of the
 * steps it abandoned leave the series (renamed *.diverged, kept), so that
 * --resume, dtctl's hint and a restart take the state training goes on
 * from, not the branch that diverged. */
static dt_status_t set_aside_abandoned(dt_trainer_t *t)
{
    size_t moved = 0;
    if (t->rank != 0)
        return DT_OK;
    DT_CHECK(dt_ckpt_set_aside_after(t->ckpt_dir, t->global_step,
                                     ".diverged", &moved));
    if (moved)
        dt_info("on_divergence = halve_lr: %zu checkpoint%s after step %llu "
                "set aside in %s (*.dtckpt.diverged)", moved,
                moved == 1 ? "" : "s", (unsigned long long)t->global_step,
                t->ckpt_dir);
    t->ckpt_have = true;
    t->ckpt_last_step = t->global_step;
    return DT_OK;
}

/* Where a rollback goes; rank 0 chooses, every rank gets the same. */
typedef struct rollback_plan {
    uint64_t found;   /* 1: a sound checkpoint, of `step`               */
    uint64_t step;
    uint64_t ruined;  /* newer ones passed over (rollback_target.c)     */
    uint64_t same;    /* 1: the divergence the last rollback was for    */
    double worst;     /* the highest loss the ruined ones recorded      */
    uint64_t sound;   /* 1 + the step of the newest sound checkpoint
                         when newer ones below `below` are ruined (0)   */
} rollback_plan_t;

/* Every rank: the newest sound checkpoint of a step below `below` (the
 * current step when its own state diverged, which a checkpoint of that
 * step holds). Only a sound checkpoint written since the last rollback
 * makes this a new divergence, counted from restart 1 again: ruined ones
 * are the same blow-up on its way to NaN. Diverging again without one
 * says the state the last rollback went to is already on its way out
 * (large weights, a large momentum): this one goes to the sound
 * checkpoint before it, while there is one. */
static dt_status_t plan_rollback(dt_trainer_t *t, uint64_t below,
                                 rollback_plan_t *p)
{
    memset(p, 0, sizeof *p);
    if (t->rank == 0) {
        bool found = false, earlier = false;
        uint64_t step = 0, ruined = 0, step2 = 0, ruined2 = 0;
        double worst = 0.0, worst2 = 0.0;
        dt_trainer_sound_checkpoint(t, below, &found, &step, &ruined,
                                    &worst);
        p->sound = found && ruined ? step + 1 : 0;
        p->same = t->restarts > 0 && !(found && step > t->rollback_step);
        if (p->same && t->rollback_step < below)
            dt_trainer_sound_checkpoint(t, t->rollback_step, &earlier,
                                        &step2, &ruined2, &worst2);
        if (earlier) {
            step = step2;
            ruined += ruined2;
            worst = worst2 > worst ? worst2 : worst;
        }
        p->found = found || earlier;
        p->step = step;
        p->ruined = ruined;
        p->worst = worst;
    }
    return dt_trainer_broadcast_host(p, sizeof *p);
}

/* Every rank: back to the planned checkpoint, lr halved. Without a sound
 * one (every file ruined, or a dt before the losses were recorded): the
 * newest below `below` that verifies, as before (below the last
 * rollback's for the same divergence), else any. */
static dt_status_t roll_back(dt_trainer_t *t, const rollback_plan_t *p,
                             uint64_t below)
{
    double scale = t->lr.scale * 0.5;
    bool found = false;
    /* chosen unverified: should it not verify, the next sound one, said
     * (say_rollback named the chosen one) */
    bool sound = false;
    if (p->found) {
        dt_trainer_test_hold_rollback(t, p->step);
        DT_CHECK(dt_trainer_restore_sound(t, p->step + 1, &found));
        sound = found;
    }
    if (p->same && t->rollback_step < below)
        below = t->rollback_step;
    if (!found && below != UINT64_MAX)
        DT_CHECK(dt_trainer_restore(t, below, &found));
    if (!found)
        DT_CHECK(dt_trainer_restore(t, UINT64_MAX, &found));
    if (!found) {
        if (t->rank == 0)
            dt_error("on_divergence = halve_lr: no valid checkpoint in %s "
                     "to go back to", t->ckpt_dir);
        return DT_ERR_INVALID;
    }
    if (p->found && t->rank == 0 && t->global_step != p->step)
        dt_warn("on_divergence = halve_lr: step %llu's checkpoint did not "
                "verify (see above): back to step %llu's instead%s",
                (unsigned long long)p->step,
                (unsigned long long)t->global_step,
                sound ? "" : " (no older one with a sound loss verifies: "
                             "the newest that does is taken, whatever its "
                             "loss)");
    t->lr.scale = scale;
    t->restarts++;
    t->rollback_step = t->global_step;
    return set_aside_abandoned(t);
}

/* Rank 0: where the rollback goes, and which checkpoints it passes over
 * for their loss (set aside with the rest of the abandoned branch). */
static void say_rollback(const dt_trainer_t *t, const rollback_plan_t *p)
{
    double lr_x = t->lr.scale * 0.5;
    if (p->found)
        dt_warn("on_divergence = halve_lr: back to the checkpoint of step "
                "%llu with lr x%g (restart %d of at most %d)",
                (unsigned long long)p->step, lr_x, t->restarts + 1,
                DT_DIVERGE_MAX_RESTARTS);
    else
        dt_warn("on_divergence = halve_lr: back to %s checkpoint with lr "
                "x%g (restart %d of at most %d)",
                p->same ? "an earlier" : "the last", lr_x, t->restarts + 1,
                DT_DIVERGE_MAX_RESTARTS);
    if (p->ruined)
        dt_warn("on_divergence = halve_lr: %llu newer checkpoint%s passed "
                "over: %s training loss (up to %.4g) is more than %gx the "
                "job's first step's (%.4g), a state already blown up though "
                "still finite", (unsigned long long)p->ruined,
                p->ruined == 1 ? "" : "s", p->ruined == 1 ? "its" : "their",
                p->worst, DT_RUINED_LOSS_FACTOR, t->first_loss);
    if (!p->found && p->ruined)
        dt_warn("on_divergence = halve_lr: no checkpoint left with a sound "
                "loss (checkpoint_keep = %d kept none from before the "
                "blow-up): back to the newest regardless", t->ckpt_keep);
}

/* Rank 0, stopping after the last restart: the ruined checkpoints leave
 * the series too, so that --resume and dtctl's hint take a sound state. */
static void set_aside_ruined(const dt_trainer_t *t, const rollback_plan_t *p)
{
    size_t moved = 0;
    if (t->rank != 0 || !p->sound ||
        dt_ckpt_set_aside_after(t->ckpt_dir, p->sound - 1, ".diverged",
                                &moved) != DT_OK || !moved)
        return;
    dt_info("on_divergence = halve_lr: %zu checkpoint%s after step %llu "
            "set aside in %s (*.dtckpt.diverged): %s training loss is "
            "more than %gx the job's first step's; --resume takes step "
            "%llu's", moved, moved == 1 ? "" : "s",
            (unsigned long long)p->sound - 1, t->ckpt_dir,
            moved == 1 ? "its" : "their", DT_RUINED_LOSS_FACTOR,
            (unsigned long long)p->sound - 1);
}

/* Every rank, on the same vote: report (rank 0), then stop or roll back
 * ([train] on_divergence) to a checkpoint below `below`. s: the step of
 * the epoch, job_step: of the job (1-based), the step that diverged. */
static dt_status_t diverged(dt_trainer_t *t, const dt_divergence_t *d,
                            double lr, uint64_t s, uint64_t job_step,
                            uint64_t below, bool *rolled_back)
{
    rollback_plan_t plan;
    memset(&plan, 0, sizeof plan);
    if (t->on_divergence == DT_DIVERGE_HALVE_LR)
        DT_CHECK(plan_rollback(t, below, &plan));
    if (!plan.same)
        t->restarts = 0; /* a new divergence, with its own restarts */
    bool again = t->on_divergence == DT_DIVERGE_HALVE_LR &&
                 t->restarts < DT_DIVERGE_MAX_RESTARTS;
    if (t->rank == 0) {
        report(t, d, lr, s, job_step, !again);
        if (again)
            say_rollback(t, &plan);
        else if (t->on_divergence == DT_DIVERGE_HALVE_LR) {
            dt_error("on_divergence = halve_lr: still diverging after %d "
                     "restarts (lr x%g); stopping", t->restarts,
                     t->lr.scale);
            set_aside_ruined(t, &plan);
        }
    }
    if (!again)
        return DT_ERR_DIVERGED;
    DT_CHECK(roll_back(t, &plan, below));
    *rolled_back = true;
    return DT_OK;
}

dt_status_t dt_trainer_guard_step(dt_trainer_t *t, float loss, double lr,
                                  uint64_t step_in_epoch, bool *rolled_back)
{
    double norm = 0.0;
    *rolled_back = false;
    /* A step skipped for overflow (loss scaling) still votes below. */
    if (dt_grad_clip_enabled(&t->clip) && !t->skip_update)
        DT_CHECK(clip(t, &norm));
    dt_bad_kind_t kind = !isfinite(loss)  ? DT_BAD_LOSS
                         : !isfinite(norm) ? DT_BAD_GRAD
                                           : DT_BAD_NONE;
    /* The same allreduce carries the step's agreements: a preemption
     * request on any rank, and rank 0's clock saying checkpoint_interval
     * has passed (clocks differ: rank 0 alone decides). */
    double now = dt_clock_now();
    double flags[2] = {
        dt_preempt_requested() ? 1.0 : 0.0,
        t->rank == 0 && t->ckpt_dir && t->ckpt_interval > 0 &&
                now - t->last_ckpt_time >= t->ckpt_interval
            ? 1.0
            : 0.0};
    dt_divergence_t d;
    DT_CHECK(dt_divergence_vote_flags(kind, kind == DT_BAD_LOSS
                                                ? (double)loss
                                                : norm,
                                      t->rank, t->world, sum_all, NULL,
                                      flags, 2, &d));
    t->preempt_now = flags[0] > 0 && t->ckpt_dir;
    t->time_due = flags[1] > 0;
    if (t->preempt_now)
        dt_preempt_agreed();
    /* A request waits for the next vote at most 2 s + 3 x the longest
     * time between two votes seen (a step, an evaluation, a checkpoint). */
    if (t->last_vote_time > 0 && now - t->last_vote_time > t->max_vote_gap) {
        t->max_vote_gap = now - t->last_vote_time;
        dt_preempt_set_grace_ms(2000 + (long)(3000.0 * t->max_vote_gap));
    }
    t->last_vote_time = now;
    return d.nbad ? diverged(t, &d, lr, step_in_epoch, t->global_step + 1,
                             UINT64_MAX, rolled_back)
                  : DT_OK;
}

/* A parameter can overflow in the update of a step whose loss was finite;
 * the next step's vote sees it, but the epoch's last step (and max_steps)
 * has none before the evaluation and the checkpoint. So before those the
 * state is judged too (sync: every rank holds the same parameters and the
 * same allreduced test loss; the vote keeps them agreeing regardless). */
dt_status_t dt_trainer_guard_kept(dt_trainer_t *t, double test_loss,
                                  bool *rolled_back)
{
    double sum = 0.0;
    *rolled_back = false;
    if (t->async) /* the servers hold the parameters */
        return DT_OK;
    DT_CHECK(dt_device_abs_sum(t->dev, t->params, t->nparams, &sum));
    dt_bad_kind_t kind = !isfinite(sum)         ? DT_BAD_PARAMS
                         : !isfinite(test_loss) ? DT_BAD_TEST_LOSS
                                                : DT_BAD_NONE;
    dt_divergence_t d;
    DT_CHECK(dt_divergence_vote(kind, kind == DT_BAD_PARAMS ? sum : test_loss,
                                t->rank, t->world, sum_all, NULL, &d));
    if (d.nbad == 0)
        return DT_OK;
    /* the step that did it is the last one run */
    uint64_t s = t->step_in_epoch > 0 ? t->step_in_epoch - 1 : 0;
    return diverged(t, &d, t->step_lr, s, t->global_step, t->global_step,
                    rolled_back);
}

/* The preemption is agreed at the step's vote, before its update: an
 * update that overflowed is seen only here, and a checkpoint of it would
 * be what --resume (and a rollback) takes. */
dt_status_t dt_trainer_guard_preempt(dt_trainer_t *t, bool *bad)
{
    double sum = 0.0;
    *bad = false;
    if (t->async) /* the servers hold the parameters */
        return DT_OK;
    DT_CHECK(dt_device_abs_sum(t->dev, t->params, t->nparams, &sum));
    dt_divergence_t d;
    DT_CHECK(dt_divergence_vote(isfinite(sum) ? DT_BAD_NONE : DT_BAD_PARAMS,
                                sum, t->rank, t->world, sum_all, NULL, &d));
    *bad = d.nbad > 0;
    return DT_OK;
}

dt_status_t dt_trainer_guard_begin(dt_trainer_t *t)
{
    if (t->on_divergence != DT_DIVERGE_HALVE_LR || t->global_step != 0 ||
        !t->ckpt_dir)
        return DT_OK;
    return dt_trainer_save(t);
}
