/* train.c — the training loop, read top to bottom: for each epoch, for
 * each step: take the batch the loader threads prepared (data/pipeline.c),
 * forward, backward (gradient buckets are
 * averaged while backward runs), clipping and the finiteness vote
 * (train_guard.c), optimizer step; then evaluate, report, checkpoint. */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "preempt.h"
#include "nn/device_math.h"
#include "nn/device_step.h"
#include "nn/model.h"
#include "plugin/plugin_crash.h"
#include "train.h"

/* After a step: checkpoint_every = N steps, checkpoint_steps, the wall
 * clock (checkpoint_interval) or a preemption, all agreed by every rank. */
static bool ckpt_due_after_step(const dt_trainer_t *t)
{
    if (!t->ckpt_dir)
        return false;
    return (t->ckpt_unit_steps && t->global_step % t->ckpt_every == 0) ||
           (t->ckpt_steps && t->global_step % t->ckpt_steps == 0) ||
           t->time_due || t->preempt_now;
}

static bool ckpt_due_after_epoch(const dt_trainer_t *t)
{
    return t->ckpt_dir && !t->ckpt_unit_steps &&
           t->epoch % t->ckpt_every == 0; /* t->epoch: epochs completed */
}

/* Test hook (DT_TEST_INF_PARAM_AT): the step's update overflowed one
 * parameter although its loss was finite. */
static dt_status_t poison_first_param(dt_trainer_t *t)
{
    const float inf = INFINITY;
    DT_CHECK(dt_device_sync(t->dev)); /* after the queued update */
    return dt_device_copy(t->dev, t->params, t->dev->mem, &inf, DT_MEM_HOST,
                          sizeof inf);
}

/* async: the gradients to the servers, their fresh parameters back. A
 * non-finite loss stops the job (no vote: workers are not in step). */
static dt_status_t async_update(dt_trainer_t *t, float loss, double lr,
                                uint64_t s, double *wait)
{
    if (!isfinite(loss)) {
        dt_error("worker %d: the loss is %g at epoch %llu step %llu: "
                 "diverged (lower [train] lr); stopping", t->rank,
                 (double)loss, (unsigned long long)t->epoch + 1,
                 (unsigned long long)s + 1);
        return DT_ERR_INVALID;
    }
    /* Sync applies lr to the average of W batches' gradients; here each
     * batch's gradient is applied alone, so W pushes at lr / W move the
     * parameters as far as one sync step of the same job. */
    double before = dt_ps_wait_seconds(t->ps);
    /* push_overlap: the fresh parameters land at the next push, so this
     * push's communication runs under the next step's compute. */
    if (t->push_overlap)
        DT_CHECK(dt_ps_push_begin(t->ps, t->params, t->grads,
                                  (float)(lr / (double)t->world),
                                  t->global_step + 1));
    else
        DT_CHECK(dt_ps_push_pull(t->ps, t->params, t->grads,
                                 (float)(lr / (double)t->world),
                                 t->global_step + 1));
    *wait += dt_ps_wait_seconds(t->ps) - before;
    return DT_OK;
}

/* async: no vote carries checkpoint_interval; a checkpoint is rank 0's
 * alone, so its own clock decides (sync: train_guard.c). */
static void async_time_due(dt_trainer_t *t)
{
    t->time_due = t->rank == 0 && t->ckpt_dir && t->ckpt_interval > 0 &&
                  dt_clock_now() - t->last_ckpt_time >= t->ckpt_interval;
}

/* Loss scaling: the averaged gradients back to their true size, or the
 * step skipped when they overflowed (loss_scale.h). Every rank holds the
 * same allreduced gradients, so every rank decides alike. */
static dt_status_t unscale(dt_trainer_t *t)
{
    double sum = 0.0;
    DT_CHECK(dt_device_abs_sum(t->dev, t->grads, t->nparams, &sum));
    bool finite = isfinite(sum);
    double scale = t->ls.scale;
    t->skip_update = !dt_loss_scale_update(&t->ls, finite);
    if (t->skip_update) {
        dt_debug("step %llu: gradients overflowed at loss scale %g: step "
                 "skipped, scale now %g",
                 (unsigned long long)t->global_step + 1, scale, t->ls.scale);
        return DT_OK;
    }
    return scale == 1.0 ? DT_OK
                        : dt_device_scale(t->dev, t->grads,
                                          (float)(1.0 / scale), t->nparams,
                                          NULL);
}

/* One optimizer step on this rank's batch `s` of the epoch; or, when the
 * step diverged and on_divergence rolled every rank back to the last
 * checkpoint, *rolled_back and no step. */
static dt_status_t train_step(dt_trainer_t *t, uint64_t s, uint64_t steps,
                              float *loss, bool *rolled_back)
{
    /* The epoch's position by samples: a resumed epoch that starts at
     * epoch_start (another world size) counts what was seen before. */
    (void)steps;
    double whole = (double)dt_trainer_steps_per_epoch(t);
    double pos = (double)t->epoch_start /
                     ((double)t->batch * (double)t->world) + (double)s;
    double lr = dt_lr_at(&t->lr, (double)t->epoch + pos / whole);
    double t0 = dt_clock_now(), wait = 0.0, data_wait = 0.0;
    dt_batch_t batch;

    DT_CHECK(dt_trainer_batch_data_status(
        dt_pipeline_next(t->pipe, &batch, &data_wait)));
    if (batch.epoch != t->epoch || batch.step != s) {
        dt_error("data pipeline: batch %llu of epoch %llu came for step %llu "
                 "of epoch %llu", (unsigned long long)batch.step + 1,
                 (unsigned long long)batch.epoch + 1,
                 (unsigned long long)s + 1, (unsigned long long)t->epoch + 1);
        return DT_ERR_INTERNAL;
    }
    size_t b = batch.count;
    /* Unequal shares: this rank's mean gradient weighs b / global in the
     * sum (grad_sync.h); equal ones (every rank b) the plain average.
     * Every rank must choose alike (a sum on some, an average on others
     * is wrong): with work_load always the weights (a share of 64 among
     * 32, 64, 96 is global / world without being equal); with equal
     * shares, an epoch's short last batch split unevenly gives no rank
     * exactly global / world, so each one's own test agrees. */
    int weighted = (t->work_load || t->work_load_auto) && t->world > 1;
    dt_grad_sync_set_scale(t->sync,
                           weighted || b * (size_t)t->world != batch.global
                               ? (double)b / (double)batch.global
                               : 0.0);
    double c0 = dt_clock_now();
    if (t->ls.enabled)
        DT_CHECK(dt_model_set_loss_scale(t->model, (float)t->ls.scale));
    dt_layer_timer_t *lt = dt_layer_timer_on(t->layer_timer, t->global_step)
                               ? t->layer_timer
                               : NULL;
    if (lt)
        DT_CHECK(dt_layer_timer_begin(lt, dt_grad_sync_ready, t->sync));
    if (lt) { /* timed layer by layer: forward, then backward */
        DT_CHECK(dt_model_forward(t->model, batch.x, batch.y, (int)b, 1,
                                  loss, NULL));
        DT_CHECK(dt_layer_timer_mark(lt, DT_LT_FORWARD_DONE));
        DT_CHECK(dt_model_backward(t->model, dt_layer_timer_ready, lt));
        DT_CHECK(dt_layer_timer_mark(lt, DT_LT_BACKWARD_DONE));
    } else { /* one wait, for the loss; a CUDA graph ([train] cuda_graphs) */
        DT_CHECK(dt_model_train_step(t->model, batch.x, batch.y, (int)b,
                                     loss, dt_grad_sync_ready, t->sync));
    }
    if (t->slow_rank == t->rank && t->slow_factor > 1.0) {
        /* Test hook (DT_TEST_SLOW_RANK): this rank computes slower, as
         * if its forward and backward took slow_factor times as long;
         * at most 3 s a step, so a large factor stays bounded on a slow
         * (sanitizer, loaded CI) machine whose steps take 100x longer. */
        double extra = (t->slow_factor - 1.0) * (dt_clock_now() - c0);
        if (extra > 3.0)
            extra = 3.0;
        struct timespec ts = {(time_t)extra,
                              (long)((extra - (double)(time_t)extra) * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (!lt) { /* a timed step's syncs are not its compute (work_load) */
        t->compute_seconds += dt_clock_now() - c0;
        t->compute_samples += b;
    }
    DT_CHECK(dt_grad_sync_finish(t->sync, &wait));
    /* cuda_graphs = auto compares whole steps, the sync included */
    dt_model_graph_step_time(t->model, dt_clock_now() - c0);
    if (t->ls.enabled)
        DT_CHECK(unscale(t));
    *rolled_back = false;
    dt_status_t st;
    if (t->async) {
        st = async_update(t, *loss, lr, s, &wait);
        if (st != DT_OK)
            return st;
        async_time_due(t);
        goto stepped;
    }
    if (t->rank == 0 && t->global_step + 1 == t->preempt_at)
        raise(SIGTERM); /* (test hook) as the scheduler's notice would */
    if (t->nan_next < t->nan_n && t->rank == 0 &&
        t->global_step + 1 == t->nan_at[t->nan_next]) { /* (test hook) */
        t->nan_next++;
        *loss = NAN;
    }
    DT_CHECK(dt_trainer_guard_step(t, *loss, lr, s, rolled_back));
    if (*rolled_back)
        return DT_OK;
    if (t->skip_update) {
        t->opt_base++; /* as GradScaler: no optimizer step at all */
        goto stepped; /* overflowed: the batch is spent, nothing applied */
    }
    if (lt)
        DT_CHECK(dt_layer_timer_mark(lt, DT_LT_OPT_BEGIN));
    uint64_t opt_t = t->global_step + 1 - t->opt_base;
    if (opt_t == 1 && t->global_step > 0 && t->rank == 0)
        dt_debug("optimizer '%s': step 1 of its state at step %llu of the "
                 "job (bias correction counts from here)",
                 t->opt_plugin->name,
                 (unsigned long long)t->global_step + 1);
    dt_plugin_call_t was = dt_plugin_call_begin(t->opt_plugin, "step");
    st = t->opt->step(t->opt_state, t->params, t->grads, (float)lr, opt_t,
                      t->dev->stream);
    dt_plugin_call_end(was);
    if (st == DT_OK && t->rank == 0 && t->global_step + 1 == t->inf_param_at)
        st = poison_first_param(t); /* (test hook) */
    if (st == DT_OK && lt)
        st = dt_layer_timer_mark(lt, DT_LT_OPT_DONE);
    if (st != DT_OK) {
        dt_error("optimizer '%s' failed at step %llu (%s)",
                 t->opt_plugin->name,
                 (unsigned long long)t->global_step + 1, dt_status_str(st));
        return st;
    }
stepped:
    DT_CHECK(dt_device_sync(t->dev));
    if (lt)
        DT_CHECK(dt_layer_timer_step_done(lt));
    t->global_step++;
    if (t->global_step == 1)
        dt_trainer_report_memory(t);
    if (t->global_step == 1 && t->rank == 0 && t->world > 1)
        dt_debug("gradients of %zu parameters averaged in %zu bucket%s per "
                 "step, %s (d2h_grad_copies=%zu per step)", t->nparams,
                 dt_grad_sync_buckets(t->sync),
                 dt_grad_sync_buckets(t->sync) == 1 ? "" : "s",
                 dt_grad_sync_path(t->sync),
                 dt_grad_sync_d2h_copies(t->sync));
    t->step_in_epoch = s + 1;
    t->step_lr = lr;
    t->last_loss = *loss;
    if (t->global_step == 1) /* the untrained model's */
        t->first_loss = *loss;
    t->loss_sum += (double)*loss * (double)b;
    t->loss_count += (double)b;
    t->epoch_samples += b;
    t->epoch_global += batch.global;
    t->train_seconds += dt_clock_now() - t0;
    t->comm_wait_seconds += wait;
    t->data_wait_seconds += data_wait;
    return DT_OK;
}

/* The samples of the epoch so far over all workers, for rank 0's progress
 * line: every rank's share of each global batch (under [cluster]
 * work_load rank 0's own share times the workers undercounted it, 4x at
 * 1,1,10); async workers keep their own pace, so rank 0's times W, as
 * its epoch line says. */
static double progress_samples(const dt_trainer_t *t)
{
    if (t->async)
        return (double)t->world * (double)t->epoch_samples;
    return (double)t->epoch_global;
}

/* Rank 0: the epoch's metrics line and TensorBoard scalars, after its
 * checkpoint. A write that fails is warned once (naming the file) and
 * that output stops: training and checkpoints go on. */
static void write_outputs(dt_trainer_t *t, const dt_epoch_metrics_t *m)
{
    if (t->jsonl && dt_jsonl_write_epoch(t->jsonl, m) != DT_OK) {
        dt_jsonl_close(t->jsonl);
        t->jsonl = NULL;
    }
    const struct { const char *tag; double v; } s[] = {
        {"train/loss", m->train_loss}, {"test/loss", m->test_loss},
        {"test/accuracy", m->test_accuracy}, {"train/lr", m->lr},
        {"perf/samples_per_sec", m->samples_per_sec},
        {"perf/comm_fraction", m->comm_fraction},
        {"perf/data_wait", m->data_wait}};
    for (size_t i = 0; t->tb && i < sizeof s / sizeof s[0]; i++)
        if (dt_tb_scalar(t->tb, s[i].tag, (int64_t)m->epoch,
                         (float)s[i].v) != DT_OK) {
            dt_tb_close(t->tb);
            t->tb = NULL;
        }
}

/* Summaries over all ranks, evaluation and rank 0's progress line; *out
 * the epoch's metrics (rank 0 writes them out after the checkpoint).
 * *rolled_back: the state it evaluated had diverged and on_divergence
 * went back to a checkpoint (nothing reported, nothing to write). */
static dt_status_t end_epoch(dt_trainer_t *t, double epoch_start,
                             dt_epoch_metrics_t *out, bool *rolled_back)
{
    *rolled_back = false; /* async ranks > 0 return before the guard */
    double sums[3] = {t->loss_sum, t->loss_count, (double)t->epoch_samples};
    if (t->world > 1 && !t->async)
        DT_CHECK(dt_allreduce(sums, sums, 3, DT_FLOAT64, DT_SUM));
    dt_epoch_metrics_t m = {.epoch = t->epoch + 1, .step = t->global_step};
    m.train_loss = sums[1] > 0 ? sums[0] / sums[1] : NAN;
    if (t->async) {
        /* Each worker its own pace; rank 0 evaluates the servers' current
         * parameters alone, the others go on. Its loss and samples/s are
         * its own (each worker logs its samples/s). */
        dt_info("async worker %d: epoch %llu: %llu samples in %.2f s (%.1f "
                "samples/s), %.0f%% of it waiting for the servers", t->rank,
                (unsigned long long)t->epoch + 1,
                (unsigned long long)t->epoch_samples, t->train_seconds,
                t->train_seconds > 0 ? (double)t->epoch_samples /
                                           t->train_seconds
                                     : 0.0,
                t->train_seconds > 0
                    ? 100.0 * t->comm_wait_seconds / t->train_seconds
                    : 0.0);
        if (t->rank != 0)
            return DT_OK;
        DT_CHECK(dt_ps_pull(t->ps, t->params));
    }
    DT_CHECK(dt_trainer_evaluate(t, &m.test_loss, &m.test_accuracy));
    /* before a line, a best or a checkpoint says a diverged model is one */
    DT_CHECK(dt_trainer_guard_kept(t, m.test_loss, rolled_back));
    if (*rolled_back)
        return DT_OK;
    m.lr = dt_lr_at(&t->lr, (double)t->epoch + 1.0 - 1e-9);
    /* Steps run in lockstep: rank 0's time is the job's time. */
    m.samples_per_sec = t->train_seconds > 0 ? sums[2] / t->train_seconds
                                             : 0.0;
    m.comm_fraction = t->train_seconds > 0
                          ? t->comm_wait_seconds / t->train_seconds
                          : 0.0;
    m.data_wait = t->train_seconds > 0
                      ? t->data_wait_seconds / t->train_seconds
                      : 0.0;
    m.epoch_seconds = dt_clock_now() - epoch_start;
    t->final_accuracy = m.test_accuracy;
    t->evaluated = true;
    /* Every rank has the same (allreduced) accuracy: the same decision.
     * The best is always kept (the final line names it); best.dtckpt only
     * with checkpoint_best. */
    bool better = m.test_accuracy > t->best_acc || t->best_epoch == 0;
    if (better) {
        t->best_acc = m.test_accuracy;
        t->best_epoch = t->epoch + 1;
    }
    if (t->async)
        m.samples_per_sec *= t->world; /* rank 0's pace x the workers */
    t->best_improved = t->ckpt_best && better;
    if (t->rank == 0 && t->ls.enabled)
        dt_info("epoch %llu: loss scale %g; %llu step%s skipped for "
                "overflowing gradients (%llu in the job)",
                (unsigned long long)t->epoch + 1, t->ls.scale,
                (unsigned long long)t->ls.skipped_epoch,
                t->ls.skipped_epoch == 1 ? "" : "s",
                (unsigned long long)t->ls.skipped);
    t->ls.skipped_epoch = 0;
    if (t->rank == 0)
        dt_progress_epoch_end(&t->progress, &m);
    *out = m;
    return DT_OK;
}

/* Every rank agreed on a preemption and the checkpoint is written (rank 0
 * tells the others whether it was): stop with DT_ERR_INTERRUPTED. */
static dt_status_t preempted(dt_trainer_t *t, uint64_t s)
{
    bool bad;
    DT_CHECK(dt_trainer_guard_preempt(t, &bad));
    if (bad) {
        if (t->rank == 0 && t->ckpt_have)
            dt_error("preempted at epoch %llu step %llu (step %llu of the "
                     "job), but that step's update left parameters that "
                     "are not finite (the model diverged): no checkpoint "
                     "written; the newest, of step %llu in %s, stands "
                     "(--resume continues from it; lower [train] lr or set "
                     "[train] on_divergence = halve_lr, or it diverges "
                     "again)", (unsigned long long)t->epoch + 1,
                     (unsigned long long)s,
                     (unsigned long long)t->global_step,
                     (unsigned long long)t->ckpt_last_step, t->ckpt_dir);
        else if (t->rank == 0)
            dt_error("preempted at epoch %llu step %llu (step %llu of the "
                     "job), but that step's update left parameters that "
                     "are not finite (the model diverged): no checkpoint "
                     "written, and this job has none yet (lower [train] "
                     "lr)", (unsigned long long)t->epoch + 1,
                     (unsigned long long)s,
                     (unsigned long long)t->global_step);
        return DT_ERR_INTERRUPTED;
    }
    dt_status_t st = dt_trainer_save_last(t);
    if (t->rank == 0 && st == DT_ERR_IO)
        dt_error("preempted at epoch %llu step %llu, but its checkpoint "
                 "could not be written (see above)",
                 (unsigned long long)t->epoch + 1, (unsigned long long)s);
    DT_CHECK(st);
    if (t->rank == 0) {
        int sig = dt_preempt_requested();
        dt_warn("preempted (%s) at epoch %llu step %llu (step %llu of the "
                "job): checkpoint written to %s; exiting with %d "
                "(resumable: rerun with --resume)",
                sig ? strsignal(sig) : "a signal to another worker",
                (unsigned long long)t->epoch + 1, (unsigned long long)s,
                (unsigned long long)t->global_step, t->ckpt_dir,
                DT_TRAIN_EXIT_PREEMPTED);
    }
    return DT_ERR_INTERRUPTED;
}

/* The job stops at max_steps: its last checkpoint, unless the step's
 * own was written just now. */
static dt_status_t stop_at_max_steps(dt_trainer_t *t, bool saved)
{
    if (!t->ckpt_dir)
        return DT_OK;
    /* a step checkpoint that failed is retried as the last */
    int32_t again = !saved || (t->rank == 0 && (!t->ckpt_have ||
                                t->ckpt_last_step != t->global_step));
    if (saved && t->world > 1 && !t->async)
        DT_CHECK(dt_trainer_broadcast_host(&again, sizeof again));
    if (t->async && t->rank != 0)
        again = !saved;
    return again ? dt_trainer_save_last(t) : DT_OK;
}

/* max_steps reached inside an epoch: the job still ends as an epoch does
 * (the evaluation, the progress and metrics lines, best.dtckpt), with its
 * last checkpoint; the final line then has an accuracy to give. */
static dt_status_t end_at_max_steps(dt_trainer_t *t, double epoch_start,
                                    bool saved, bool *rolled_back)
{
    dt_epoch_metrics_t m;
    if (t->rank == 0)
        dt_info("stopping after %llu steps ([train] max_steps): evaluating",
                (unsigned long long)t->global_step);
    dt_preempt_busy(true);
    dt_status_t st = end_epoch(t, epoch_start, &m, rolled_back);
    if (st == DT_OK && !*rolled_back) {
        st = stop_at_max_steps(t, saved);
        if (st == DT_OK && t->best_improved)
            st = dt_trainer_save_as(t, DT_TRAIN_BEST_NAME, NULL);
        if (t->rank == 0)
            write_outputs(t, &m);
    }
    dt_preempt_busy(false);
    return st;
}

static dt_status_t train_loop(dt_trainer_t *t, uint64_t max_steps)
{
    bool saved = false, step_ckpt_at_end = false;
    t->last_ckpt_time = dt_clock_now();
    DT_CHECK(dt_trainer_guard_begin(t));
restart: /* after a rollback (on_divergence): from the checkpoint's step */
    step_ckpt_at_end = false;
    /* The loaders start (again) at the batch the loop needs next. */
    DT_CHECK(dt_pipeline_seek_from(t->pipe, t->epoch, t->epoch_start,
                                   t->step_in_epoch));
    for (; t->epoch < t->epochs;
         t->epoch++, t->step_in_epoch = 0, t->epoch_start = 0) {
        double start = dt_clock_now();
        uint64_t steps = dt_trainer_epoch_steps(t);
        t->train_seconds = t->comm_wait_seconds = 0.0;
        t->data_wait_seconds = 0.0;
        t->epoch_samples = t->epoch_global = 0;
        t->compute_seconds = 0.0;
        t->compute_samples = 0;
        if (t->step_in_epoch == 0)
            t->loss_sum = t->loss_count = 0.0;
        if (t->rank == 0)
            dt_progress_epoch_start(&t->progress, t->step_in_epoch);
        for (uint64_t s = t->step_in_epoch; s < steps; s++) {
            float loss;
            bool rolled_back = false;
            DT_CHECK(train_step(t, s, steps, &loss, &rolled_back));
            if (rolled_back)
                goto restart;
            saved = false;
            if (t->rank == 0)
                dt_progress_step(&t->progress, t->epoch + 1, s + 1, steps,
                                 loss, progress_samples(t) /
                                           (t->train_seconds + 1e-12),
                                 t->data_wait_seconds /
                                     (t->train_seconds + 1e-12));
            if (t->preempt_now)
                return preempted(t, s + 1);
            /* The epoch's last step (or max_steps): its checkpoint after
             * the evaluation, which may find the state diverged. */
            bool epoch_done = s + 1 == steps;
            bool last = epoch_done ||
                        (max_steps && t->global_step >= max_steps);
            if (ckpt_due_after_step(t) && last) {
                step_ckpt_at_end = true;
            } else if (ckpt_due_after_step(t)) {
                DT_CHECK(dt_trainer_guard_kept(t, 0.0, &rolled_back));
                if (rolled_back)
                    goto restart;
                dt_preempt_busy(true);
                DT_CHECK(dt_trainer_save(t));
                dt_preempt_busy(false);
                saved = true;
            }
            /* [train] eval_steps; the epoch's last step and max_steps
             * evaluate anyway */
            if (t->eval_steps && t->global_step % t->eval_steps == 0 &&
                !last) {
                dt_preempt_busy(true);
                dt_status_t ev = dt_trainer_eval_steps(t, s + 1, steps);
                dt_preempt_busy(false);
                DT_CHECK(ev);
            }
            /* max_steps inside an epoch; at its last step the epoch ends
             * as any other, whole (below) */
            if (max_steps && t->global_step >= max_steps && !epoch_done) {
                DT_CHECK(end_at_max_steps(t, start, saved, &rolled_back));
                if (rolled_back)
                    goto restart;
                return DT_OK;
            }
        }
        dt_epoch_metrics_t m;
        bool rolled_back = false;
        bool stop = max_steps && t->global_step >= max_steps;
        if (stop && t->rank == 0 && t->epoch + 1 < t->epochs)
            dt_info("stopping after %llu steps ([train] max_steps), at the "
                    "end of epoch %llu: evaluating",
                    (unsigned long long)t->global_step,
                    (unsigned long long)t->epoch + 1);
        dt_preempt_busy(true); /* the evaluation and checkpoints below */
        dt_status_t ended = end_epoch(t, start, &m, &rolled_back);
        if (ended != DT_OK || rolled_back) {
            dt_preempt_busy(false);
            DT_CHECK(ended);
            goto restart;
        }
        /* work_load = auto: the next epoch's shares from this one's
         * compute times (before the checkpoint, which records them). */
        if (t->work_load_auto)
            DT_CHECK(dt_trainer_rebalance(t));
        /* The checkpoint describes the start of the next epoch. */
        uint64_t done = t->epoch;
        t->epoch++;
        t->step_in_epoch = 0;
        t->epoch_start = 0;
        t->loss_sum = t->loss_count = 0.0;
        /* The checkpoints first: a metrics write cannot cost them; the
         * metrics still come when the last checkpoint failed. */
        dt_status_t st = DT_OK;
        if (t->ckpt_dir && (t->epoch == t->epochs || stop))
            st = dt_trainer_save_last(t);
        else if (ckpt_due_after_epoch(t) || step_ckpt_at_end)
            st = dt_trainer_save(t);
        step_ckpt_at_end = false;
        if (st == DT_OK && t->best_improved)
            st = dt_trainer_save_as(t, DT_TRAIN_BEST_NAME, NULL);
        if (t->rank == 0)
            write_outputs(t, &m);
        dt_preempt_busy(false);
        DT_CHECK(st);
        if (stop) /* at the start of the next epoch, which max_steps ends */
            return DT_OK;
        t->epoch = done;
    }
    return DT_OK;
}

/* async: rank 0 hands the servers their shards (from the checkpoint with
 * --resume), then every worker takes the servers' parameters and the
 * position to start at. */
static dt_status_t async_start(dt_trainer_t *t)
{
    dt_ps_pos_t pos = {0, 0, 0, 0};
    uint64_t opt_steps = 0;
    dt_status_t st = DT_OK;
    if (t->rank == 0) {
        void **opt = calloc((size_t)t->nservers, sizeof *opt);
        size_t *len = calloc((size_t)t->nservers, sizeof *len);
        bool found = false;
        if (!opt || !len)
            st = DT_ERR_NOMEM;
        if (st == DT_OK && t->resume)
            st = dt_trainer_restore_async(t, opt, len, &pos, &opt_steps,
                                          &found);
        if (st == DT_OK)
            st = dt_ps_init_servers(t->ps, t->params, opt, len, opt_steps,
                                    &pos);
        for (int s = 0; opt && s < t->nservers; s++)
            free(opt[s]);
        free(opt);
        free(len);
        if (st == DT_OK)
            dt_info("async: %d worker%s, %d parameter server%s (ranks %d..%d)"
                    ", max_staleness %d%s", t->world,
                    t->world == 1 ? "" : "s", t->nservers,
                    t->nservers == 1 ? "" : "s", t->world,
                    t->world + t->nservers - 1, t->max_staleness,
                    t->max_staleness ? "" : " (unbounded)");
    }
    if (st == DT_OK)
        st = dt_ps_join(t->ps, t->params, &pos);
    if (st != DT_OK)
        return st;
    t->epoch = pos.epoch;
    t->step_in_epoch = pos.step_in_epoch;
    t->epoch_start = pos.epoch_start;
    t->global_step = pos.global_step;
    return DT_OK;
}

/* The checkpoint resumed from is the end of training: evaluate it as the
 * last epoch would have (async: rank 0 alone, on the servers' parameters),
 * so that the job still ends with its accuracy. */
static dt_status_t evaluate_at_end(dt_trainer_t *t)
{
    double loss = 0.0, acc = 0.0;
    if (t->rank == 0 && t->epoch >= t->epochs)
        dt_info("the checkpoint is at the end of training (epoch %llu of "
                "%llu, step %llu): nothing left to train; evaluating it",
                (unsigned long long)t->epoch, (unsigned long long)t->epochs,
                (unsigned long long)t->global_step);
    else if (t->rank == 0)
        dt_info("the checkpoint is at step %llu, [train] max_steps: nothing "
                "left to train; evaluating it",
                (unsigned long long)t->global_step);
    if (t->async) {
        if (t->rank != 0)
            return DT_OK;
        DT_CHECK(dt_ps_pull(t->ps, t->params));
    }
    DT_CHECK(dt_trainer_evaluate(t, &loss, &acc));
    t->final_accuracy = acc;
    t->evaluated = true;
    return DT_OK;
}

dt_status_t dt_train_run(dt_config_t *cfg, double *final_accuracy)
{
    dt_trainer_t t;
    long long max_steps = 0;
    /* async: ranks from the number of workers on are parameter servers. */
    const char *mode = dt_config_get(cfg, "train", "mode");
    int servers = dt_train_async_servers();
    if (mode && strcmp(mode, "async") == 0 && servers > 0 &&
        dt_rank() >= dt_size() - servers && dt_size() > servers) {
        if (final_accuracy)
            *final_accuracy = 0.0;
        return dt_ps_serve(cfg, dt_size() - servers, servers);
    }
    dt_status_t st = dt_trainer_setup(&t, cfg);
    if (st == DT_OK)
        st = dt_config_get_int(cfg, "train", "max_steps", &max_steps);
    if (st == DT_OK)
        st = dt_trainer_prepare_outputs(&t);
    if (st == DT_OK && t.async) {
        st = async_start(&t);
    } else if (st == DT_OK && t.resume) {
        st = dt_trainer_restore(&t, UINT64_MAX, NULL);
        if (st == DT_OK && t.lr.scale != 1.0 && t.rank == 0)
            dt_info("the lr stays x%g, as on_divergence = halve_lr left it",
                    t.lr.scale);
    }
    /* SIGTERM/SIGUSR1: a checkpoint at the next step, then a resumable
     * exit (needs somewhere to write it). */
    if (st == DT_OK && t.ckpt_dir && !t.async)
        dt_preempt_install();
    /* Resumed from a checkpoint at the end of training: nothing to run,
     * but the user still gets the model's accuracy (evaluated now). */
    bool at_end = st == DT_OK &&
                  (t.epoch >= t.epochs ||
                   (max_steps > 0 && t.global_step >= (uint64_t)max_steps));
    if (st == DT_OK && !at_end) /* (a step at max_steps would be one more) */
        st = train_loop(&t, max_steps > 0 ? (uint64_t)max_steps : 0);
    if (st == DT_OK && at_end)
        st = evaluate_at_end(&t);
    dt_preempt_restore();
    /* async: this worker is done; the servers answer once all are. */
    if (st == DT_OK && t.async)
        st = dt_ps_done(t.ps, t.params);
    if (st == DT_OK && t.rank == 0) {
        /* The best test accuracy and its epoch, always; with
         * checkpoint_best also the file that holds that epoch's model. */
        char best[4300] = "";
        if (t.best_epoch)
            snprintf(best, sizeof best, "; best %.2f%% at epoch %llu%s%s%s%s",
                     100.0 * t.best_acc, (unsigned long long)t.best_epoch,
                     t.ckpt_best ? " (" : "", t.ckpt_best ? t.ckpt_dir : "",
                     t.ckpt_best ? "/" DT_TRAIN_BEST_NAME : "",
                     t.ckpt_best ? ")" : "");
        /* Stopped inside an epoch (max_steps): how far into it. */
        char part[96] = "";
        if (t.step_in_epoch > 0 && t.epoch < t.epochs)
            snprintf(part, sizeof part, " and %llu step%s of epoch %llu",
                     (unsigned long long)t.step_in_epoch,
                     t.step_in_epoch == 1 ? "" : "s",
                     (unsigned long long)t.epoch + 1);
        if (t.evaluated) /* a model at 0% still says so */
            printf("final test accuracy: %.2f%% after %llu epoch%s%s (%llu "
                   "step%s, %d worker%s)%s\n", 100.0 * t.final_accuracy,
                   (unsigned long long)t.epoch, t.epoch == 1 ? "" : "s",
                   part, (unsigned long long)t.global_step,
                   t.global_step == 1 ? "" : "s", t.world,
                   t.world == 1 ? "" : "s", best);
        fflush(stdout);
    }
    if (final_accuracy)
        *final_accuracy = t.final_accuracy;
    free(t.ckpt_foreign);
    dt_trainer_teardown(&t);
    return st;
}
