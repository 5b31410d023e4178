/* train_eval.c — test-set evaluation sharded over every rank: each rank
 * runs its part (no padding, so no sample counts twice) and the sums of
 * loss, correct predictions and samples are allreduced. */
#include <dt/dt.h>
#include <dt/log.h>
#include "train.h"

dt_status_t dt_trainer_evaluate(dt_trainer_t *t, double *loss,
                                double *accuracy)
{
    const dt_sampler_t *s = &t->test_sampler;
    /* sums[0]: loss x samples, [1]: correct, [2]: samples */
    double sums[3] = {0.0, 0.0, 0.0};
    for (size_t at = 0; at < s->count; at += t->batch) {
        size_t b = s->count - at < t->batch ? s->count - at : t->batch;
        float l = 0.0f;
        int correct = 0;
        dt_dataset_gather(&t->test, s->indices + at, b, t->x, t->y);
        DT_CHECK(dt_model_forward(t->model, t->x, t->y, (int)b, 0, &l,
                                  &correct));
        sums[0] += (double)l * (double)b;
        sums[1] += correct;
        sums[2] += (double)b;
    }
    if (t->world > 1)
        DT_CHECK(dt_allreduce(sums, sums, 3, DT_FLOAT64, DT_SUM));
    *loss = sums[2] > 0 ? sums[0] / sums[2] : 0.0;
    *accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0.0;
    return DT_OK;
}
