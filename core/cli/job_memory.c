/* job_memory.c — the per-worker memory estimate of a job for dtctl check
 * (job_memory.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include <dt/nn.h>
#include <dt/train.h>
#include "job_memory.h"
#include "train/mem_budget.h"
#include "run_trainer.h"

/* bytes as MiB below a GiB, else GiB: what a reader compares */
static const char *size_str(size_t bytes, char *buf, size_t len)
{
    if (bytes < (1u << 30))
        snprintf(buf, len, "%.1f MiB", (double)bytes / (1u << 20));
    else
        snprintf(buf, len, "%.2f GiB", (double)bytes / (1u << 30));
    return buf;
}

dt_status_t job_memory_line(const dt_config_t *cfg, char *buf, size_t len,
                            size_t *per_worker)
{
    const char *layers = dt_config_get(cfg, "model", "layers");
    const char *device = dt_config_get(cfg, "train", "device");
    int shape[4];
    if (!layers || !*layers)
        return DT_ERR_NOT_FOUND;
    DT_CHECK(run_trainer_input_shape(cfg, shape));
    dt_model_t *m = NULL;
    dt_status_t st = dt_model_parse(layers, NULL, shape[0], shape[1],
                                    shape[2], shape[3], &m, NULL);
    /* the activations' storage: bf16 halves them on a GPU */
    const char *act = dt_config_get(cfg, "train", "activations");
    if (st == DT_OK && act && strcmp(act, "bf16") == 0)
        dt_model_set_activations(m, DT_ACTIVATIONS_BF16);
    dt_train_memory_t e;
    int gpu = device && strcmp(device, "cuda") == 0;
    if (st == DT_OK)
        st = dt_train_memory_estimate(cfg, m, 0, gpu, &e);
    if (st == DT_OK) {
        *per_worker = e.total;
        size_t grads = dt_model_nparams(m) * sizeof(float);
        char a[32], p[32], g[32], o[32], x[32], d[32];
        snprintf(buf, len, "about %s per worker at batch %d, at least "
                 "(parameters %s, gradients %s, optimizer state %s, "
                 "activations %s and their gradients %s); each worker "
                 "refuses to start when its host cannot hold it",
                 size_str(e.total, a, sizeof a), e.batch,
                 size_str(e.model.params - grads, p, sizeof p),
                 size_str(grads, g, sizeof g),
                 size_str(e.optimizer, o, sizeof o),
                 size_str(e.model.activations + e.model.act_copies +
                              e.model.scratch,
                          x, sizeof x),
                 size_str(e.model.act_grads, d, sizeof d));
    }
    dt_model_free(m);
    return st;
}

int job_memory_fits_here(size_t per_worker, int np, char *buf, size_t len)
{
    dt_mem_shared_t shared;
    dt_mem_measure_shared(np, &shared);
    /* The workers start in dtctl's cgroup: all np share its limit (its
     * count of processes running dt-train is 0 before they start). */
    shared.cgroup_workers = np;
    dt_mem_budget_t b;
    dt_mem_budget(&shared, np, &b);
    double all = (double)per_worker * b.workers;
    if (!b.bytes || all <= (double)b.bytes * (1.0 + DT_MEM_MARGIN))
        return 1;
    char need[32], have[32];
    char who[48] = "one worker";
    if (b.workers > 1)
        snprintf(who, sizeof who, "the %d workers together", b.workers);
    snprintf(buf, len, "%s needed by %s and %s available here (%s): the "
             "workers would refuse to start; lower [train] batch_size, run "
             "fewer workers here (-n) or use a smaller model",
             size_str((size_t)all, need, sizeof need), who,
             size_str((size_t)b.bytes, have, sizeof have), b.what);
    return 0;
}
