/* train_memory_check.c — a model or batch too large for the host refused
 * before it is allocated (dt_trainer_check_memory): without it the
 * worker allocated lazily, touched its pages in the first steps, and the
 * kernel's out-of-memory killer ended it (or a neighbour) with no word of
 * what was too large. The estimate is a lower bound and the comparison
 * leaves a margin: a job is refused only when it clearly cannot fit.
 * What the host's workers share is measured earlier, before any of them
 * allocates its model (dt_trainer_measure_memory).
 *
 * The CPU only: a GPU's budget is its free memory, which this does not
 * read (no GPU to test it on here); CUDA's own allocation failure names
 * the model (model_init.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <dt/dt.h>
#include <dt/log.h>
#include <dt/train.h>
#include "mem_budget.h"
#include "train.h"

#define GIB(x) ((double)(x) / (1ull << 30))

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

/* The host's workers: async's parameter servers among the host's
 * processes hold a shard each, not a model: counted out (where they run
 * is not known here, so all of them), which can only raise each worker's
 * share. */
static int local_workers(const dt_trainer_t *t)
{
    int local = dt_local_size() - (t->async ? t->nservers : 0);
    return local < 1 ? 1 : local;
}

/* The test hooks' signal: a file, waited for up to a minute. */
static void create_file(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

static void wait_for_file(const char *path)
{
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
        nanosleep(&tick, NULL);
}

/* Test hook (tests/train_memory.sh, async): DT_TEST_MEMORY_LATE_MEASURE=
 * FILE, rank 1 creates FILE once it has allocated its model or waits for
 * the other workers' measures to do so, and the last worker waits for
 * FILE before it measures: the latest its measure can come. */
void dt_trainer_memory_test_held(const dt_trainer_t *t)
{
    const char *late = getenv("DT_TEST_MEMORY_LATE_MEASURE");
    if (late && *late && t->rank == 1)
        create_file(late);
}

static void wait_for_rank1_model(const dt_trainer_t *t)
{
    const char *late = getenv("DT_TEST_MEMORY_LATE_MEASURE");
    if (!late || !*late || t->world < 3 || t->rank != t->world - 1)
        return;
    dt_warn("rank %d: DT_TEST_MEMORY_LATE_MEASURE: its memory measure "
            "waits for rank 1's model (a test hook)", t->rank);
    wait_for_file(late);
}

void dt_trainer_measure_memory(dt_trainer_t *t)
{
    if (t->dev->mem != DT_MEM_HOST)
        return;
    wait_for_rank1_model(t);
    dt_mem_measure_shared(local_workers(t), &t->mem_shared);
    dt_debug("rank %d: memory its host's workers share, measured before "
             "any allocates its model: %.2f GiB MemAvailable + SwapFree, "
             "%.2f GiB under the cgroup limit for %d worker%s",
             t->rank, GIB(t->mem_shared.host), GIB(t->mem_shared.cgroup),
             t->mem_shared.cgroup_workers,
             t->mem_shared.cgroup_workers == 1 ? "" : "s");
}

/* Test hook (tests/train_memory.sh): DT_TEST_MEMORY_LATE=FILE, rank 0
 * creates FILE once it has allocated its model and the other ranks wait
 * for it (up to a minute) before their memory check: the latest a
 * neighbour's model can be in the host's numbers. */
void dt_trainer_memory_test_allocated(const dt_trainer_t *t)
{
    const char *late = getenv("DT_TEST_MEMORY_LATE");
    if (late && *late && t->rank == 0)
        create_file(late);
    dt_trainer_memory_test_held(t); /* DT_TEST_MEMORY_LATE_MEASURE */
}

static void wait_for_rank0_model(const dt_trainer_t *t)
{
    const char *late = getenv("DT_TEST_MEMORY_LATE");
    if (!late || !*late || t->rank == 0)
        return;
    dt_warn("rank %d: DT_TEST_MEMORY_LATE: its memory check waits for rank "
            "0's model (a test hook)", t->rank);
    wait_for_file(late);
}

/* The batch the model's buffers grow to: the rank's training share (the
 * least under work_load) or the evaluation's batch, batch_size samples of
 * the rank's test shard, whichever is larger (ensure_capacity grows the
 * buffers, activations and their gradients both, to the largest batch
 * seen). */
static int largest_batch(const dt_config_t *cfg, const dt_trainer_t *t)
{
    long long least = (long long)t->batch;
    int who;
    if (dt_train_least_share(cfg, t->world, (long long)t->batch, &least,
                             &who) != DT_OK || least < 1)
        least = 1; /* work_load's error is said elsewhere */
    size_t eval = t->test_sampler.count < t->batch ? t->test_sampler.count
                                                   : t->batch;
    return (size_t)least > eval ? (int)least : (int)eval;
}

dt_status_t dt_trainer_check_memory(const dt_config_t *cfg,
                                    const dt_trainer_t *t)
{
    if (t->dev->mem != DT_MEM_HOST)
        return DT_OK;
    wait_for_rank0_model(t);
    dt_train_memory_t need;
    if (dt_train_memory_estimate(cfg, t->model, largest_batch(cfg, t), 0,
                                 &need) != DT_OK)
        return DT_OK; /* nothing to say: init meets it, if anything */
    int local = local_workers(t);
    dt_mem_budget_t budget;
    dt_mem_budget(&t->mem_shared, local, &budget);
    double all = (double)need.total * budget.workers;
    if (!budget.bytes ||
        all <= (double)budget.bytes * (1.0 + DT_MEM_MARGIN))
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
