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

#include "ckpt/ckpt.h"
#include "train.h"

bool dt_loss_ruined(double last, double first)
{
    return isfinite(first) && first > 0.0 && !isnan(last) &&
           last > DT_RUINED_LOSS_FACTOR * first;
}

void dt_trainer_sound_checkpoint(const dt_trainer_t *t, uint64_t below,
                                 bool *found, uint64_t *step,
                                 uint64_t *ruined, double *worst)
{
    *found = false;
    *step = 0;
    *ruined = 0;
    *worst = 0.0;
    for (;;) {
        dt_ckpt_t c;
        /* (a file that does not verify is named and passed over; none
         * left, or one the restore must refuse: the restore says why) */
        if (dt_ckpt_load_before(t->ckpt_dir, below, &c) != DT_OK)
            return;
        double last, first;
        dt_trainer_ckpt_losses(&c, &last, &first);
        below = c.step;
        dt_ckpt_free(&c);
        if (!dt_loss_ruined(last, first)) {
            *found = true;
            *step = below;
            return;
        }
        ++*ruined;
        if (last > *worst)
            *worst = last;
    }
}
