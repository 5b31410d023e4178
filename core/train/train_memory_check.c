/* train_memory_check.c — a model or batch too large for the host refused
 * before it is allocated (dt_trainer_check_memory): without it the
 * worker allocated lazily, touched its pages in the first steps, and the
 * kernel's out-of-memory killer ended it (or a neighbour) with no word of
 * what was too large. The estimate is a lower bound and the comparison
 * leaves a margin: a job is refused only when it clearly cannot fit.
 *
 * The CPU only: a GPU's budget is its free memory, which this does not
 * read (no GPU to test it on here); CUDA's own allocation failure names
 * the model (model_init.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <dt/dt.h>
#include <dt/log.h>
#include <dt/train.h>
#include "mem_budget.h"
#include "train.h"

#define GIB(x) ((double)(x) / (1ull << 30))
/* Refused only above the budget by this fraction: MemAvailable is the
 * kernel's own estimate, and pages allocated are not all touched. */
#define MARGIN 0.10

static void host_name(char *buf, size_t len)
{
    const char *h = getenv("DT_HOST");
    if (h && *h)
        snprintf(buf, len, "%s", h);
    else if (gethostname(buf, len) != 0)
        snprintf(buf, len, "this host");
    buf[len - 1] = '\0';
}

/* What helps, by the limit that binds (dt_mem_budget_t.kind). */
static const char *const advice[] = {
    [DT_MEM_HOST_AVAILABLE] = "lower [train] batch_size, run fewer workers "
                              "per host (-n, or fewer slots per host), use "
                              "a smaller model or a host with more memory",
    [DT_MEM_ADDRESS_SPACE] = "raise the limit (ulimit -v), lower [train] "
                             "batch_size or use a smaller model",
    [DT_MEM_CGROUP] = "raise the cgroup's limit (the scheduler's memory "
                      "request), lower [train] batch_size, run fewer "
                      "workers per host or use a smaller model",
};

dt_status_t dt_trainer_check_memory(const dt_config_t *cfg,
                                    const dt_trainer_t *t)
{
    if (t->dev->mem != DT_MEM_HOST)
        return DT_OK;
    long long least = (long long)t->batch;
    int who;
    if (dt_train_least_share(cfg, t->world, (long long)t->batch, &least,
                             &who) != DT_OK || least < 1)
        least = 1; /* work_load's error is said elsewhere */
    dt_train_memory_t need;
    if (dt_train_memory_estimate(cfg, t->model, (int)least, 0, &need) !=
        DT_OK)
        return DT_OK; /* nothing to say: init meets it, if anything */
    /* async: the parameter servers among the host's processes hold a
     * shard each, not a model: counted out (where they run is not known
     * here, so all of them), which can only raise each worker's share */
    int local = dt_local_size() - (t->async ? t->nservers : 0);
    if (local < 1)
        local = 1;
    dt_mem_budget_t budget;
    dt_mem_budget(local, &budget);
    double all = (double)need.total * budget.workers;
    if (!budget.bytes || all <= (double)budget.bytes * (1.0 + MARGIN))
        return DT_OK;
    size_t grads = dt_model_nparams(t->model) * sizeof(float);
    char host[256], workers[400];
    host_name(host, sizeof host);
    if (budget.workers > 1)
        snprintf(workers, sizeof workers, "%d workers on %s need about "
                 "%.2f GiB together", budget.workers, host, GIB(all));
    else
        snprintf(workers, sizeof workers, "this worker on %s needs about "
                 "%.2f GiB", host, GIB(all));
    dt_error("rank %d on %s: the model needs about %.2f GiB per worker (an "
             "estimate, at least: parameters %.2f, gradients %.2f, "
             "optimizer state %.2f, activations %.2f and their gradients "
             "%.2f at batch %d); %s, and %.2f GiB are available (%s): "
             "%s; refused before allocating it, so that the out-of-memory "
             "killer does not end the job later",
             t->rank, host, GIB(need.total),
             GIB(need.model.params - grads), GIB(grads),
             GIB(need.optimizer),
             GIB(need.model.activations + need.model.act_copies +
                 need.model.scratch),
             GIB(need.model.act_grads), need.batch, workers,
             GIB(budget.bytes), budget.what, advice[budget.kind]);
    return DT_ERR_CONFIG;
}
