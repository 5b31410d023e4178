/* input_rate.c — the job's input pipeline timed alone (dt/train.h:
 * dt_train_input_rate), for dtctl plan's data wait.
 *
 * The pipeline's ring holds `prefetch` batches made ahead: the warm-up
 * takes prefetch + threads + 1 batches as fast as they come, which
 * empties it, so the timed batches arrive at the loaders' own rate
 * (threads of them, each gathering, augmenting and normalizing a batch),
 * not from a stock made while the data set loaded. */
#include "config.h"

#include <string.h>

#include <dt/clock.h>
#include <dt/log.h>
#include <dt/train.h>
#include "data/augment.h"
#include "data/dataset.h"
#include "data/pipeline.h"

#define MIN_TIMED 3

static dt_status_t time_batches(dt_pipeline_t *p, int warm, double seconds,
                                dt_train_input_rate_t *out)
{
    dt_batch_t b;
    for (int i = 0; i < warm; i++)
        DT_CHECK(dt_pipeline_next(p, &b, NULL));
    double t0 = dt_clock_now(), t = t0;
    size_t n = 0, samples = 0;
    while (n < MIN_TIMED || t - t0 < seconds) {
        DT_CHECK(dt_pipeline_next(p, &b, NULL));
        n++;
        samples += b.count; /* an epoch's last batch may be short */
        t = dt_clock_now();
    }
    out->timed = n;
    if (samples == 0) /* empty batches only: nothing to time */
        return DT_ERR_INVALID;
    out->samples_per_sec = (double)samples / (t - t0);
    out->batch_seconds = (double)out->batch / out->samples_per_sec;
    return DT_OK;
}

dt_status_t dt_train_input_rate(const dt_config_t *cfg, size_t batch,
                                double seconds, dt_train_input_rate_t *out)
{
    memset(out, 0, sizeof *out);
    if (!cfg || !(seconds > 0))
        return DT_ERR_INVALID;
    long long bs = 0, seed = 0;
    DT_CHECK(dt_config_get_int(cfg, "train", "batch_size", &bs));
    DT_CHECK(dt_config_get_int(cfg, "train", "seed", &seed));
    if (batch == 0)
        batch = bs > 0 ? (size_t)bs : 0;
    if (batch == 0) {
        dt_error("input rate: [train] batch_size = %lld: must be at least 1",
                 bs);
        return DT_ERR_CONFIG;
    }
    dt_pipeline_opts_t po = {.batch = batch, .world = 1,
                             .seed = (uint64_t)seed};
    DT_CHECK(dt_pipeline_opts_from_config(cfg, &po));
    dt_dataset_t ds;
    memset(&ds, 0, sizeof ds);
    DT_CHECK(dt_dataset_load(cfg, DT_SPLIT_TRAIN, &ds));
    dt_pipeline_t *p = NULL;
    dt_status_t st = dt_augment_from_config(cfg, &ds, (uint64_t)seed, &po.aug);
    if (st == DT_OK)
        st = dt_pipeline_new(&ds, &po, &p);
    if (st == DT_OK)
        st = dt_pipeline_seek(p, 0, 0);
    out->batch = batch;
    out->threads = po.threads;
    if (st == DT_OK)
        st = time_batches(p, po.prefetch + po.threads + 1, seconds, out);
    dt_pipeline_free(p);
    dt_dataset_free(&ds);
    return st;
}
