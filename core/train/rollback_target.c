/* rollback_target.c — which checkpoint on_divergence = halve_lr goes back
 * to. A loss that explodes stays finite for several steps before it is
 * NaN (lr 50 with momentum 0.9: 2.4, 3e4, 9e7 ... 3e36, then NaN), and a
 * checkpoint written in between holds a finite but ruined state: going
 * back to it only replays the blow-up with less lr, once per such file.
 * So each checkpoint records rank 0's training loss at its last step and
 * at the job's first (the untrained model's), and a rollback takes the
 * newest one whose last loss is at most DT_RUINED_LOSS_FACTOR times the
 * first: no sound state is that far above a model that knows nothing,
 * while a blow-up passes it by orders of magnitude within a few steps. The
 * first step's loss, not the lowest one seen, is the reference: a batch's
 * loss late in training is noisy enough to be 10x another batch's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <dt/log.h>
#include "ckpt/ckpt.h"
#include "train.h"

bool dt_loss_ruined(double last, double first)
{
    return isfinite(first) && first > 0.0 && !isnan(last) &&
           last > DT_RUINED_LOSS_FACTOR * first;
}

/* The losses a file recorded, from its LOSSES section alone: a rollback
 * on a large model with several ruined checkpoints must not read and hash
 * each whole while the other ranks wait (past [cluster] timeout they call
 * rank 0 hung). Unverified, so the restore takes the chosen file only if
 * it verifies, and only a sound one in its place (dt_trainer_restore_sound).
 * DT_OK, or dt_ckpt_peek's error for the file. */
static dt_status_t peek_losses(const char *path, double *last, double *first)
{
    unsigned char b[16];
    size_t len = 0;
    uint64_t step;
    *last = *first = NAN;
    dt_status_t st = dt_ckpt_peek(path, DT_TRAIN_TAG_LOSSES, b, sizeof b,
                                  &len, &step);
    if (st == DT_ERR_NOT_FOUND || (st == DT_OK && len < sizeof b))
        return DT_OK; /* none recorded (a dt before them): unknown */
    if (st == DT_OK)
        dt_trainer_losses_decode(b, last, first);
    return st;
}

void dt_trainer_sound_checkpoint(const dt_trainer_t *t, uint64_t below,
                                 bool *found, uint64_t *step,
                                 uint64_t *ruined, double *worst)
{
    *found = false;
    *step = 0;
    *ruined = 0;
    *worst = 0.0;
    dt_ckpt_entry_t *v = NULL;
    size_t n = 0;
    if (dt_ckpt_list(t->ckpt_dir, &v, &n) != DT_OK)
        return; /* none, or unreadable: the restore says why */
    char path[4096];
    for (size_t i = 0; i < n; i++) {
        if (v[i].step >= below)
            continue;
        snprintf(path, sizeof path, "%s/%s", t->ckpt_dir, v[i].name);
        double last, first;
        dt_status_t st = peek_losses(path, &last, &first);
        /* a file that is not a checkpoint is named and passed over; one
         * the restore must refuse (a newer dt's, unreadable to this
         * user): the restore says why */
        if (st == DT_ERR_INVALID || st == DT_ERR_IO) {
            dt_warn("%s: skipped (see above); trying the previous "
                    "checkpoint", path);
            continue;
        }
        if (st != DT_OK)
            break;
        if (!dt_loss_ruined(last, first)) {
            *found = true;
            *step = v[i].step;
            break;
        }
        ++*ruined;
        if (last > *worst)
            *worst = last;
    }
    free(v);
}
