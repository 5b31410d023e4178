/* train_eval.c — test-set evaluation sharded over every rank: each rank
 * runs its part (no padding, so no sample counts twice) and the sums of
 * loss, correct predictions and samples are allreduced. Before it, and
 * before each checkpoint, every rank takes rank 0's batchnorm running
 * statistics, so all ranks evaluate the model the checkpoint holds. */
#include <stdint.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "train.h"

/* FNV-1a of the buffers, for the debug line that shows them equal. */
static uint32_t hash_floats(const float *v, size_t n)
{
    const unsigned char *p = (const unsigned char *)v;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n * sizeof(float); i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

dt_status_t dt_trainer_sync_buffers(dt_trainer_t *t)
{
    float *b = NULL;
    size_t n = 0;
    if (t->world <= 1 || t->async)
        return DT_OK;
    DT_CHECK(dt_model_buffers(t->model, &b, &n));
    if (n == 0)
        return DT_OK;
    int host = t->dev->mem == DT_MEM_HOST;
    uint32_t before = host ? hash_floats(b, n) : 0;
    DT_CHECK(dt_trainer_broadcast(t, b, n * sizeof(float)));
    if (host)
        dt_debug("rank %d: batchnorm running statistics %08x, rank 0's "
                 "%08x (%zu floats)", t->rank, (unsigned)before,
                 (unsigned)hash_floats(b, n), n);
    return DT_OK;
}

dt_status_t dt_trainer_evaluate(dt_trainer_t *t, double *loss,
                                double *accuracy)
{
    const dt_sampler_t *s = &t->test_sampler;
    /* sums[0]: loss x samples, [1]: correct, [2]: samples */
    double sums[3] = {0.0, 0.0, 0.0};
    DT_CHECK(dt_trainer_sync_buffers(t));
    for (size_t at = 0; at < s->count; at += t->batch) {
        size_t b = s->count - at < t->batch ? s->count - at : t->batch;
        float l = 0.0f;
        int correct = 0;
        DT_CHECK(dt_trainer_batch_data_status(dt_dataset_gather(
            &t->test, s->indices + at, b, t->x, t->y)));
        DT_CHECK(dt_model_forward(t->model, t->x, t->y, (int)b, 0, &l,
                                  &correct));
        sums[0] += (double)l * (double)b;
        sums[1] += correct;
        sums[2] += (double)b;
    }
    /* async: rank 0 evaluated the whole test set alone. */
    if (t->world > 1 && !t->async)
        DT_CHECK(dt_allreduce(sums, sums, 3, DT_FLOAT64, DT_SUM));
    *loss = sums[2] > 0 ? sums[0] / sums[2] : 0.0;
    *accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0.0;
    return DT_OK;
}
