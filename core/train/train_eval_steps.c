/* train_eval_steps.c — [train] eval_steps: the test set evaluated every N
 * optimizer steps inside an epoch (see train.h). An epoch of ImageNet is
 * hours: its end alone said too late that a run had gone wrong. Reported
 * only: the best checkpoint, the divergence guard and the epoch's line
 * stay with the epoch's end. */
#include <dt/log.h>
#include "ps.h"
#include "train.h"

dt_status_t dt_trainer_eval_steps(dt_trainer_t *t, uint64_t step,
                                  uint64_t steps)
{
    double loss = 0.0, acc = 0.0;
    if (t->async) { /* each worker its own pace: rank 0 alone */
        if (t->rank != 0)
            return DT_OK;
        DT_CHECK(dt_ps_pull(t->ps, t->params));
    }
    DT_CHECK(dt_trainer_evaluate(t, &loss, &acc));
    if (t->rank != 0)
        return DT_OK;
    dt_progress_eval(&t->progress, t->epoch + 1, step, steps,
                     t->global_step, loss, acc);
    if (t->jsonl && dt_jsonl_write_eval(t->jsonl, t->epoch + 1,
                                        t->global_step, loss, acc) != DT_OK) {
        dt_jsonl_close(t->jsonl);
        t->jsonl = NULL;
    }
    if (t->tb && (dt_tb_scalar(t->tb, "eval/test_loss",
                               (int64_t)t->global_step, (float)loss) != DT_OK ||
                  dt_tb_scalar(t->tb, "eval/test_accuracy",
                               (int64_t)t->global_step, (float)acc) != DT_OK)) {
        dt_tb_close(t->tb);
        t->tb = NULL;
    }
    return DT_OK;
}
