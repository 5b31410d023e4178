/* train_state.c — the trainer's checkpoints: what they hold and how a
 * resumed job gets it back on every rank.
 *
 * Sections: META (progress counters, see meta_t), PARAMS (float32 values),
 * OPT_STATE (the optimizer plugin's own bytes), OPT_NAME, BUFFERS (the
 * model's buffers, dt_model_buffers: batchnorm running statistics, float32
 * values, empty without batchnorm; absent from checkpoints written before
 * it existed, which a model with batchnorm refuses), MODEL (the layers
 * with their shapes: another model of as many parameters is refused),
 * LOSSES (rank 0's training loss at the last step and the first: which
 * checkpoints a rollback passes over as ruined, rollback_target.c). A
 * run's checkpoints are its lineage: pruning counts those and no file a
 * resume went past (see dt_ckpt_prune). With the same
 * number of workers a resumed job ends with exactly the parameters of an
 * uninterrupted one: same data order (sampler epoch and step), same RNG
 * counter, same optimizer state.
 *
 * At another world size (or batch_size) the position is translated by
 * samples (reshard()): the workers that wrote the checkpoint had seen the
 * first epoch_start + step_in_epoch x batch x world positions of the
 * epoch's order; the new workers shard the rest of that epoch among
 * themselves (data/sampler.h), so no sample of the epoch is skipped or
 * seen twice. The per-worker batch is the job's batch_size, so the global
 * batch follows the world size, and the lr follows lr_scaling; the
 * optimizer state is loaded unchanged. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dt/clock.h>
#include <dt/dt.h>
#include <dt/log.h>
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_format.h"
#include "nn/model.h"
#include "coll/coll.h"
#include "opt_call.h"
#include "train.h"
#include "ps_common.h"

enum { TAG_META = 1, TAG_PARAMS = 2, TAG_OPT_STATE = 3, TAG_OPT_NAME = 4 };
/* Its own section rather than a META version: META's layout is the
 * progress counters', BUFFERS grows with the model. */
enum { TAG_BUFFERS = 5 };
/* [cluster] work_load in force for the rest of the epoch: world
 * little-endian doubles, empty for equal shares. Resuming needs no more:
 * the global batches are the same whatever the split (data/sampler.h), so
 * other weights continue the same training to float rounding; auto takes
 * the saved weights back. */
enum { TAG_WORK_LOAD = 6 };
/* mode = async: OPT_STATE is the servers' shard states one after the
 * other; SHARDS says how: u64 number of servers S, then S u64 lengths,
 * then the optimizer steps the servers had applied (absent before it was
 * written: the job's step stands in). Only a job with as many servers
 * takes that state back. */
enum { TAG_SHARDS = 7 };
/* What the parameters mean (model_signature()): another model of the
 * same parameter count is refused. Absent before it existed: not checked
 * (said once). */
enum { TAG_MODEL = 8 };
/* Rank 0's training loss at the checkpoint's last step and at the job's
 * first (two little-endian doubles, NaN for none), by which a rollback
 * passes over a checkpoint of a state already blown up (rollback_target.c).
 * Its own section, not META: a dt without it resumes these files. */
enum { TAG_LOSSES = DT_TRAIN_TAG_LOSSES };

/* META: little-endian u64 fields in this order. */
enum {
    M_VERSION, M_EPOCH, M_STEP_IN_EPOCH, M_GLOBAL_STEP, M_WORLD, M_NPARAMS,
    M_SEED, M_BATCH, M_RNG_COUNTER, M_LOSS_SUM, M_LOSS_COUNT, M_TRAIN_N,
    M_V1_COUNT,
    /* version 2 */
    M_LR_SCALE = M_V1_COUNT, /* double: lr factor left by on_divergence */
    /* version 3 */
    M_BEST_ACC,              /* double: the best test accuracy so far    */
    M_BEST_EPOCH,            /* its epoch, 1-based (0: none yet)         */
    /* version 4 */
    M_EPOCH_START,           /* position of the epoch's order where the
                                shards of this world size begin (0)     */
    /* version 5 */
    M_LOSS_SCALE,            /* double: loss scaling's S (0: none)       */
    M_SCALE_GOOD,            /* finite steps since S last changed        */
    M_SCALE_SKIPPED,         /* steps skipped for overflow in the job    */
    /* version 6 */
    M_OPT_BASE,              /* job steps the optimizer's state did not
                                make (skipped, or before a fresh state)  */
    M_COUNT
};
#define META_VERSION 6

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* What a save is: a fixed name (NULL: the series), whether it is the
 * job's last, and where rank 0 says whether the file was written. */
typedef struct save_req {
    const char *name;
    bool last;
    bool *written;
} save_req_t;

static dt_status_t write_ckpt(dt_trainer_t *t, const save_req_t *req,
                              const double *sums, void *opt_in,
                              size_t opt_in_len, const unsigned char *shards,
                              size_t shards_len);
static dt_status_t save_async(dt_trainer_t *t, const save_req_t *req);

/* PARAMS from device memory, one chunk at a time. */
static dt_status_t fill_params(void *arg, size_t off, void *buf, size_t n)
{
    dt_trainer_t *t = arg;
    return dt_device_copy(t->dev, buf, DT_MEM_HOST,
                          (const char *)t->params + off, t->dev->mem, n);
}

/* BUFFERS from device memory. */
static dt_status_t fill_buffers(void *arg, size_t off, void *buf, size_t n)
{
    dt_trainer_t *t = arg;
    float *b = NULL;
    DT_CHECK(dt_model_buffers(t->model, &b, NULL));
    return dt_device_copy(t->dev, buf, DT_MEM_HOST, (const char *)b + off,
                          t->dev->mem, n);
}

/* The model as text: the [model] layers string, then per layer its
 * description, output shape and parameter count (malloc'd). */
static char *model_signature(const dt_trainer_t *t)
{
    const char *layers = dt_config_get(t->cfg, "model", "layers");
    size_t cap = strlen(layers ? layers : "") + 16 +
                 (size_t)t->model->nlayers * 128;
    char *sig = malloc(cap);
    if (!sig)
        return NULL;
    size_t n = (size_t)snprintf(sig, cap, "layers=%s\n", layers ? layers
                                                                : "");
    for (char *c = sig + strlen("layers="); *c && c < sig + n - 1; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' '; /* one line, whatever the job file did */
    for (int i = 0; i < t->model->nlayers && n < cap; i++) {
        const dt_layer_t *l = &t->model->layers[i];
        if (l->out_flat)
            n += (size_t)snprintf(sig + n, cap - n, "%s %d %zu\n", l->desc,
                                  l->out_c, l->nweights + l->nbias);
        else
            n += (size_t)snprintf(sig + n, cap - n, "%s %dx%dx%d %zu\n",
                                  l->desc, l->out_c, l->out_h, l->out_w,
                                  l->nweights + l->nbias);
    }
    return sig;
}

static dt_status_t save(dt_trainer_t *t, const save_req_t *req);

dt_status_t dt_trainer_save(dt_trainer_t *t)
{
    save_req_t req = {NULL, false, NULL};
    return save(t, &req);
}

dt_status_t dt_trainer_save_as(dt_trainer_t *t, const char *name,
                               bool *written)
{
    save_req_t req = {name, false, written};
    return save(t, &req);
}

dt_status_t dt_trainer_save_last(dt_trainer_t *t)
{
    bool written = false;
    save_req_t req = {NULL, true, &written};
    DT_CHECK(save(t, &req));
    /* async: rank 0 alone writes and alone knows */
    int32_t ok = written || (t->async && t->rank != 0);
    if (t->world > 1 && !t->async)
        DT_CHECK(dt_trainer_broadcast_host(&ok, sizeof ok));
    if (!ok)
        dt_worker_record_failure(0, "error"); /* rank 0 said why */
    return ok ? DT_OK : DT_ERR_IO;
}

static dt_status_t save(dt_trainer_t *t, const save_req_t *req)
{
    if (req->written)
        *req->written = false;
    t->last_ckpt_time = dt_clock_now();
    /* async: rank 0 alone, with the servers' shards and their optimizer
     * state; the other workers go on training. */
    if (t->async && t->rank != 0)
        return DT_OK;
    if (t->async)
        return save_async(t, req);
    /* Every rank holds what the checkpoint holds: rank 0's buffers. */
    DT_CHECK(dt_trainer_sync_buffers(t));
    /* The epoch's loss so far, summed over ranks, lives on in rank 0. */
    double sums[2] = {t->loss_sum, t->loss_count};
    if (t->world > 1)
        DT_CHECK(dt_allreduce(sums, sums, 2, DT_FLOAT64, DT_SUM));
    t->loss_sum = t->rank == 0 ? sums[0] : 0.0;
    t->loss_count = t->rank == 0 ? sums[1] : 0.0;
    if (t->rank != 0)
        return DT_OK;

    return write_ckpt(t, req, sums, NULL, 0, NULL, 0);
}

/* "DIR/ckpt-<step>.dtckpt", the newest checkpoint of this run. */
static void last_path(const dt_trainer_t *t, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" CKPT_PREFIX "%012llu" CKPT_SUFFIX, t->ckpt_dir,
             (unsigned long long)t->ckpt_last_step);
}

/* A write failed (the reason is logged above): a periodic one is a
 * warning, the job's last one an error. */
static void say_not_written(const dt_trainer_t *t, const save_req_t *req)
{
    char prev[4200] = "";
    unsigned long long step = (unsigned long long)t->global_step;
    if (t->ckpt_have)
        last_path(t, prev, sizeof prev);
    if (req->name)
        dt_warn("%s/%s was not written (see above); training goes on",
                t->ckpt_dir, req->name);
    else if (!req->last && t->ckpt_have)
        dt_warn("checkpoint at step %llu was not written (see above); the "
                "previous one, %s, stays valid; training goes on", step,
                prev);
    else if (!req->last)
        dt_warn("checkpoint at step %llu was not written (see above); this "
                "run has no checkpoint yet; training goes on", step);
    else if (t->ckpt_have)
        dt_error("the job's last checkpoint (step %llu) could not be "
                 "written to %s (see above), so the job fails: its newest "
                 "checkpoint is %s; free space or fix the directory, then "
                 "rerun with --resume to redo the steps after it", step,
                 t->ckpt_dir, prev);
    else
        dt_error("the job's last checkpoint (step %llu) could not be "
                 "written to %s (see above), so the job fails: it wrote no "
                 "checkpoint at all; free space or fix the directory and "
                 "run it again", step, t->ckpt_dir);
}

/* Written at `step`: this run's newest; a file of that step is this
 * run's now, no longer a foreign one; then the old ones go, but never
 * the newest sound one for a ruined one (a blow-up slower than
 * checkpoint_keep checkpoints would leave a rollback nothing sound). */
static void written_series(dt_trainer_t *t)
{
    uint64_t step = t->global_step;
    t->ckpt_have = true;
    t->ckpt_last_step = step;
    for (size_t i = 0; i < t->nforeign; i++)
        if (t->ckpt_foreign[i] == step)
            t->ckpt_foreign[i--] = t->ckpt_foreign[--t->nforeign];
    bool sound = !dt_loss_ruined(t->last_loss, t->first_loss);
    uint64_t *skip = !sound && t->ckpt_sound
                         ? malloc((t->nforeign + 1) * sizeof *skip)
                         : NULL;
    if (skip) {
        if (t->nforeign)
            memcpy(skip, t->ckpt_foreign, t->nforeign * sizeof *skip);
        skip[t->nforeign] = t->ckpt_sound_step;
    }
    dt_ckpt_prune(t->ckpt_dir, t->ckpt_keep, step,
                  skip ? skip : t->ckpt_foreign,
                  t->nforeign + (skip ? 1 : 0));
    free(skip);
    if (sound) {
        t->ckpt_sound = true;
        t->ckpt_sound_step = step;
    }
}

/* Rank 0 writes the file: META from t and sums (the epoch's loss so
 * far); OPT_STATE is opt (opt_len bytes), or the local optimizer's when
 * opt is NULL; SHARDS when shards is not NULL (async). */
static dt_status_t write_ckpt(dt_trainer_t *t, const save_req_t *req,
                              const double *sums, void *opt_in,
                              size_t opt_in_len, const unsigned char *shards,
                              size_t shards_len)
{
    uint64_t rng_seed, rng_counter;
    dt_model_get_rng(t->model, &rng_seed, &rng_counter);
    uint64_t m[M_COUNT] = {
        [M_VERSION] = META_VERSION, [M_EPOCH] = t->epoch,
        [M_STEP_IN_EPOCH] = t->step_in_epoch,
        [M_GLOBAL_STEP] = t->global_step, [M_WORLD] = (uint64_t)t->world,
        [M_NPARAMS] = t->nparams, [M_SEED] = t->seed, [M_BATCH] = t->batch,
        [M_RNG_COUNTER] = rng_counter, [M_LOSS_SUM] = dbits(sums[0]),
        [M_LOSS_COUNT] = dbits(sums[1]), [M_TRAIN_N] = t->train.n,
        [M_LR_SCALE] = dbits(t->lr.scale),
        [M_BEST_ACC] = dbits(t->best_acc), [M_BEST_EPOCH] = t->best_epoch,
        [M_EPOCH_START] = t->epoch_start,
        [M_LOSS_SCALE] = t->ls.enabled ? dbits(t->ls.scale) : 0,
        [M_SCALE_GOOD] = t->ls.good, [M_SCALE_SKIPPED] = t->ls.skipped,
        [M_OPT_BASE] = t->opt_base};
    unsigned char meta[8 * M_COUNT];
    for (int i = 0; i < M_COUNT; i++)
        ckpt_put64(meta + 8 * i, m[i]);
    size_t opt_len = opt_in ? opt_in_len
                            : dt_opt_state_size(t->opt_plugin, t->opt,
                                                t->opt_state);
    void *opt = malloc(opt_len ? opt_len : 1);
    if (!opt)
        return DT_ERR_NOMEM;
    dt_status_t st = DT_OK;
    if (opt_in)
        memcpy(opt, opt_in, opt_len);
    else
        st = dt_opt_save(t->opt_plugin, t->opt, t->opt_state, opt, opt_len);
    if (st != DT_OK) {
        dt_error("optimizer '%s' could not save its state (%s)",
                 t->opt_plugin->name, dt_status_str(st));
        free(opt);
        return st;
    }
    float *bufs = NULL;
    size_t nbufs = 0;
    st = dt_model_buffers(t->model, &bufs, &nbufs);
    if (st != DT_OK) {
        free(opt);
        return st;
    }
    size_t nwl = t->work_load ? (size_t)t->world : 0;
    unsigned char *wl = malloc(8 * nwl + 1);
    char *sig = model_signature(t);
    if (!wl || !sig) {
        free(opt);
        free(wl);
        free(sig);
        return DT_ERR_NOMEM;
    }
    for (size_t i = 0; i < nwl; i++)
        ckpt_put64(wl + 8 * i, dbits(t->work_load[i]));
    unsigned char losses[16];
    ckpt_put64(losses, dbits(t->last_loss));
    ckpt_put64(losses + 8, dbits(t->first_loss));
    /* SHARDS last: only async writes it */
    dt_ckpt_section_t secs[9] = {
        {.tag = TAG_META, .len = sizeof meta, .data = meta},
        {.tag = TAG_PARAMS, .len = t->nparams * sizeof(float)},
        {.tag = TAG_OPT_STATE, .len = opt_len, .data = opt},
        {.tag = TAG_OPT_NAME, .len = strlen(t->opt_plugin->name),
         .data = t->opt_plugin->name},
        {.tag = TAG_BUFFERS, .len = nbufs * sizeof(float), .data = ""},
        {.tag = TAG_WORK_LOAD, .len = 8 * nwl, .data = wl},
        {.tag = TAG_MODEL, .len = strlen(sig), .data = sig},
        {.tag = TAG_LOSSES, .len = sizeof losses, .data = losses},
        {.tag = TAG_SHARDS, .len = shards_len, .data = shards},
    };
    if (t->dev->mem == DT_MEM_HOST)
        secs[1].data = t->params;
    else {
        secs[1].fill = fill_params;
        secs[1].arg = t;
    }
    if (nbufs && t->dev->mem == DT_MEM_HOST)
        secs[4].data = bufs;
    else if (nbufs) {
        secs[4].data = NULL;
        secs[4].fill = fill_buffers;
        secs[4].arg = t;
    }
    char *path = NULL;
    /* pruned below, by this run's lineage */
    st = dt_ckpt_write_named(t->ckpt_dir, req->name, t->global_step, secs,
                             shards ? 9 : 8, 0, &path);
    free(opt);
    free(wl);
    free(sig);
    if (req->written)
        *req->written = st == DT_OK;
    if (st == DT_OK && !req->name)
        written_series(t);
    if (st == DT_OK)
        dt_debug("checkpoint %s (%llu epochs and %llu steps done)", path,
                 (unsigned long long)t->epoch,
                 (unsigned long long)t->global_step);
    else
        say_not_written(t, req);
    free(path);
    return DT_OK;
}

/* async, rank 0: the servers' shards into t->params and their optimizer
 * states, one after the other, described by SHARDS. */
static dt_status_t save_async(dt_trainer_t *t, const save_req_t *req)
{
    int S = t->nservers;
    void **opt = calloc((size_t)S, sizeof *opt);
    size_t *len = calloc((size_t)S, sizeof *len);
    unsigned char *shards = calloc((size_t)S + 2, 8);
    uint64_t steps = 0;
    dt_status_t st = opt && len && shards ? DT_OK : DT_ERR_NOMEM;
    if (st == DT_OK)
        st = dt_ps_save(t->ps, t->params, opt, len, &steps);
    size_t total = 0;
    for (int s = 0; st == DT_OK && s < S; s++)
        total += len[s];
    unsigned char *all = st == DT_OK ? malloc(total ? total : 1) : NULL;
    if (st == DT_OK && !all)
        st = DT_ERR_NOMEM;
    if (st == DT_OK) {
        size_t at = 0;
        ckpt_put64(shards, (uint64_t)S);
        for (int s = 0; s < S; s++) {
            memcpy(all + at, opt[s], len[s]);
            at += len[s];
            ckpt_put64(shards + 8 * (s + 1), len[s]);
        }
        ckpt_put64(shards + 8 * ((size_t)S + 1), steps);
        double sums[2] = {t->loss_sum, t->loss_count};
        dt_debug("async checkpoint: %d shard%s, the servers applied %llu "
                 "pushes", S, S == 1 ? "" : "s", (unsigned long long)steps);
        st = write_ckpt(t, req, sums, all, total, shards,
                        8 * ((size_t)S + 2));
    }
    for (int s = 0; opt && s < S; s++)
        free(opt[s]);
    free(opt);
    free(len);
    free(shards);
    free(all);
    return st;
}

/* "ckpt-1.dtckpt, ckpt-2.dtckpt and 3 more" for messages: the names of
 * v[from..n). */
static void name_list(const dt_ckpt_entry_t *v, size_t from, size_t n,
                      char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = from; i < n && at < len; i++) {
        if (i - from == 4 && n - i > 1) {
            snprintf(buf + at, len - at, " and %zu more", n - i);
            return;
        }
        at += (size_t)snprintf(buf + at, len - at, "%s%s",
                               i > from ? ", " : "", v[i].name);
    }
}

/* The files of steps above `step`: not this run's from here on. */
static dt_status_t set_foreign(dt_trainer_t *t, const dt_ckpt_entry_t *v,
                               size_t n, uint64_t step)
{
    size_t k = 0;
    while (k < n && v[k].step > step) /* v is newest first */
        k++;
    free(t->ckpt_foreign);
    t->ckpt_foreign = NULL;
    t->nforeign = 0;
    if (!k)
        return DT_OK;
    if (!(t->ckpt_foreign = malloc(k * sizeof *t->ckpt_foreign)))
        return DT_ERR_NOMEM;
    for (size_t i = 0; i < k; i++)
        t->ckpt_foreign[i] = v[i].step;
    t->nforeign = k;
    return DT_OK;
}

/* Rank 0 (load_on_root), --resume: the files v[0..*n) of steps above
 * `step` did not verify (each named above). Each is set aside as
 * NAME.corrupt (.corrupt.1... beside an earlier one), which no scan
 * picks: this run's own checkpoint of that step would be renamed over it,
 * and it may be what a user recovers by hand or shows in a storage bug
 * report. One that cannot be moved (said) stays, foreign: v[0..*n) on
 * return. */
static dt_status_t set_aside_unverified(dt_trainer_t *t, dt_ckpt_entry_t *v,
                                        size_t *n, uint64_t step)
{
    size_t kept = 0;
    char to[4200];
    for (size_t i = 0; i < *n && v[i].step > step; i++) { /* newest first */
        dt_status_t st = dt_ckpt_set_aside(t->ckpt_dir, v[i].name,
                                           DT_TRAIN_CORRUPT_SUFFIX, to,
                                           sizeof to);
        if (st == DT_OK)
            dt_warn("%s/%s did not verify (see above): set aside as %s, "
                    "which --resume never picks (inspect it, then remove "
                    "it)", t->ckpt_dir, v[i].name, to);
        else if (st != DT_ERR_NOT_FOUND)
            v[kept++] = v[i];
    }
    *n = kept;
    return set_foreign(t, v, kept, step);
}

/* --resume took the checkpoint of `step`: newer files (they failed
 * verification, each named above) are set aside; any left are said once
 * and left alone. */
static dt_status_t note_newer(dt_trainer_t *t, uint64_t step)
{
    dt_ckpt_entry_t *v = NULL;
    size_t n = 0;
    DT_CHECK(dt_ckpt_list(t->ckpt_dir, &v, &n));
    dt_status_t st = set_aside_unverified(t, v, &n, step);
    if (st == DT_OK && t->nforeign) {
        char names[600];
        name_list(v, 0, t->nforeign, names, sizeof names);
        dt_warn("%s: %s, newer than the checkpoint resumed from, did not "
                "verify: not this run's from here on; checkpoint_keep "
                "neither counts nor deletes them (remove them once "
                "inspected)", t->ckpt_dir, names);
    }
    free(v);
    return st;
}

/* --resume found checkpoints but none verifies (each named above): an
 * error, as starting over would hide them; dtctl's automatic restart
 * (DT_RESTART_COUNT > 0) starts over instead, setting them aside first
 * (its own checkpoints would be renamed over them). */
static dt_status_t none_valid(dt_trainer_t *t)
{
    dt_ckpt_entry_t *v = NULL;
    size_t n = 0;
    DT_CHECK(dt_ckpt_list(t->ckpt_dir, &v, &n));
    char names[600];
    name_list(v, 0, n, names, sizeof names);
    const char *rc = getenv("DT_RESTART_COUNT");
    dt_status_t st = DT_ERR_INVALID;
    if (rc && atoi(rc) > 0) {
        dt_warn("restart: no checkpoint in %s verifies (%s, each named "
                "above): training starts from the beginning; they are kept "
                "for inspection", t->ckpt_dir, names);
        st = set_aside_unverified(t, v, &n, 0);
    } else {
        dt_error("--resume: no checkpoint in %s verifies (%s, each named "
                 "above); they are left for inspection: restore a good copy "
                 "there, or move them away and run without --resume to "
                 "start over", t->ckpt_dir, names);
    }
    free(v);
    return st;
}

/* Line i (0-based) of a signature, without its newline, into buf. */
static bool sig_line(const char *sig, size_t len, int i, char *buf,
                     size_t blen)
{
    const char *p = sig, *end = sig + len;
    for (; i > 0 && p < end; i--) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    if (p >= end)
        return false;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);
    snprintf(buf, blen, "%.*s", (int)n, p);
    return true;
}

/* Two layer lines "desc shape params" alike: the same kind of layer (a
 * dropout rate is no other model), shape and parameter count. */
static bool same_layer(const char *a, const char *b)
{
    size_t ka = strcspn(a, "( "), kb = strcspn(b, "( ");
    const char *ra = strchr(a, ' '), *rb = strchr(b, ' ');
    return ka == kb && strncmp(a, b, ka) == 0 && ra && rb &&
           strcmp(ra, rb) == 0;
}

/* "linear(256), output 256, 200960 parameters" from a layer line. */
static void layer_text(const char *line, char *buf, size_t len)
{
    char desc[80] = "?", shape[48] = "?";
    unsigned long long params = 0;
    sscanf(line, "%79s %47s %llu", desc, shape, &params);
    snprintf(buf, len, "%s (output %s, %llu parameters)", desc, shape,
             params);
}

/* MODEL against this job's model: the first layer that differs, with
 * both [model] layers strings. */
static dt_status_t check_model(const dt_trainer_t *t, const dt_ckpt_t *c,
                               const dt_ckpt_section_t *ms)
{
    char *sig = model_signature(t);
    if (!sig)
        return DT_ERR_NOMEM;
    size_t len = strlen(sig);
    char a[4200], b[4200], la[4200] = "layers=", lb[4200] = "layers=";
    int i = 1;
    for (;; i++) {
        bool ha = sig_line(ms->data, ms->len, i, a, sizeof a),
             hb = sig_line(sig, len, i, b, sizeof b);
        if (!ha && !hb) {
            free(sig);
            return DT_OK;
        }
        if (!ha || !hb || !same_layer(a, b))
            break;
    }
    sig_line(ms->data, ms->len, 0, la, sizeof la);
    sig_line(sig, len, 0, lb, sizeof lb);
    char ta[200] = "no such layer", tb[200] = "no such layer";
    if (sig_line(ms->data, ms->len, i, a, sizeof a))
        layer_text(a, ta, sizeof ta);
    if (sig_line(sig, len, i, b, sizeof b))
        layer_text(b, tb, sizeof tb);
    /* line 0 is "layers=<the [model] layers string>" */
    dt_error("%s was written by another model: its layer %d is %s, this "
             "job's %s (the checkpoint's [model] layers = '%s', this job's "
             "'%s'); resume with the checkpoint's layers or start a new "
             "checkpoint_dir", c->path, i - 1, ta, tb, la + strlen("layers="),
             lb + strlen("layers="));
    free(sig);
    return DT_ERR_CONFIG;
}

/* The model: its signature when the checkpoint has one, and always the
 * parameter count. */
static dt_status_t check_params(const dt_trainer_t *t, const dt_ckpt_t *c,
                                const uint64_t *meta,
                                const dt_ckpt_section_t *ps)
{
    const dt_ckpt_section_t *ms = dt_ckpt_find(c, TAG_MODEL);
    if (ms)
        DT_CHECK(check_model(t, c, ms));
    else
        dt_info("%s has no model description (written by an older dt): "
                "only its parameter count is checked against [model] "
                "layers", c->path);
    if (meta[M_NPARAMS] != t->nparams ||
        ps->len != t->nparams * sizeof(float)) {
        dt_error("%s holds %llu parameters but [model] layers gives %zu: "
                 "the model changed since the checkpoint; resume with the "
                 "same layers or start a new checkpoint_dir",
                 c->path, (unsigned long long)meta[M_NPARAMS], t->nparams);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* BUFFERS: the batchnorm running statistics. Without them a model with
 * batchnorm would evaluate with fresh ones (mean 0, variance 1) and
 * resume would not be exact: refused, not guessed. */
static dt_status_t check_buffers(const dt_ckpt_t *c,
                                 const dt_ckpt_section_t *bs, size_t nbufs)
{
    if (!bs && nbufs) {
        dt_error("checkpoint %s has no batchnorm running statistics (written "
                 "by an older dt): the model's %zu buffer floats cannot be "
                 "restored; start without --resume or with a new "
                 "checkpoint_dir", c->path, nbufs);
        return DT_ERR_CONFIG;
    }
    if (bs && bs->len != nbufs * sizeof(float)) {
        dt_error("%s holds %zu buffer floats (batchnorm running statistics) "
                 "but [model] layers gives %zu: the model changed since the "
                 "checkpoint; resume with the same layers or start a new "
                 "checkpoint_dir", c->path, bs->len / sizeof(float), nbufs);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* Error feedback's residuals (compression_feedback) are each rank's own
 * and live in its communicator, not in the checkpoint (gathering every
 * rank's would write N gradients more): a resume starts them at zero. */
static void say_feedback_restarts(const dt_trainer_t *t)
{
    const char *comp = dt_config_get(t->cfg, "collectives", "compression");
    bool fb = false;
    if (!comp || strcmp(comp, "none") == 0 || t->async ||
        dt_config_get_bool(t->cfg, "collectives", "compression_feedback",
                           &fb) != DT_OK || !fb)
        return;
    dt_info("compression_feedback: the ranks' residuals are not in the "
            "checkpoint and start at zero: the resumed run converges as "
            "the uninterrupted one, not to the same bits");
}

/* Everything the job must agree with before anything is copied. A
 * checkpoint this job's configuration cannot take is DT_ERR_CONFIG:
 * dt-train exits 65 and dtctl --max-restarts does not retry what every
 * attempt would refuse alike. */
static dt_status_t check_ckpt(const dt_trainer_t *t, const dt_ckpt_t *c,
                              const uint64_t *meta)
{
    const dt_ckpt_section_t *ps = dt_ckpt_find(c, TAG_PARAMS),
                            *ns = dt_ckpt_find(c, TAG_OPT_NAME);
    DT_CHECK(check_params(t, c, meta, ps));
    if (ns->len != strlen(t->opt_plugin->name) ||
        memcmp(ns->data, t->opt_plugin->name, ns->len) != 0) {
        dt_error("%s was written with optimizer '%.*s', this job uses '%s': "
                 "resume with the same [train] optimizer", c->path,
                 (int)ns->len, (const char *)ns->data, t->opt_plugin->name);
        return DT_ERR_CONFIG;
    }
    if (meta[M_TRAIN_N] != t->train.n || meta[M_SEED] != t->seed)
        dt_warn("%s: written for %llu training samples with seed %llu; this "
                "job has %zu with seed %llu: the data order will differ",
                c->path, (unsigned long long)meta[M_TRAIN_N],
                (unsigned long long)meta[M_SEED], t->train.n,
                (unsigned long long)t->seed);
    float *bufs = NULL;
    size_t nbufs = 0;
    DT_CHECK(dt_model_buffers(t->model, &bufs, &nbufs));
    return check_buffers(c, dt_ckpt_find(c, TAG_BUFFERS), nbufs);
}

/* META's fields of a later version than this dt's may change what the
 * known ones mean (as version 6's optimizer base did): a newer dt's
 * checkpoint is refused rather than half read. */
static dt_status_t check_meta_version(const dt_ckpt_t *c, uint64_t version)
{
    if (version > META_VERSION) {
        dt_error("%s was written by a newer dt (its progress record is "
                 "version %llu; this dt reads versions 1 to %d): resume it "
                 "with that dt version or a later one; this one can only "
                 "start afresh (without --resume, or with another "
                 "checkpoint_dir)", c->path, (unsigned long long)version,
                 META_VERSION);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* The newest checkpoint below `before` that verifies; sound_only: and
 * whose recorded loss is not ruined (a rollback's: it chose the file by
 * its LOSSES section alone, unverified; should that file not verify, the
 * next sound one takes its place, not a ruined one in between). */
static dt_status_t load_before(const dt_trainer_t *t, uint64_t before,
                               bool sound_only, dt_ckpt_t *c)
{
    for (;;) {
        dt_status_t st = dt_ckpt_load_before(t->ckpt_dir, before, c);
        double last, first;
        if (st != DT_OK || !sound_only)
            return st;
        dt_trainer_ckpt_losses(c, &last, &first);
        if (!dt_loss_ruined(last, first))
            return DT_OK;
        dt_warn("%s: passed over: its training loss (%.4g) is more than "
                "%gx the job's first step's (%.4g)", c->path, last,
                DT_RUINED_LOSS_FACTOR, first);
        before = c->step;
        dt_ckpt_free(c);
    }
}

/* Rank 0: read the newest valid checkpoint of a step below `before` into
 * meta/opt; *found 0 when there is none (a warning for --resume, quiet).
 * --resume (not quiet) also notes the newer files it went past. */
static dt_status_t load_on_root(dt_trainer_t *t, uint64_t before,
                                bool quiet, bool sound_only, dt_ckpt_t *c,
                                uint64_t *meta, int *found)
{
    *found = 0;
    dt_status_t st = load_before(t, before, sound_only, c);
    if (st == DT_ERR_NOT_FOUND || (st == DT_ERR_INVALID && quiet)) {
        if (!quiet)
            dt_warn("--resume: no checkpoint in %s; starting from the "
                    "beginning", t->ckpt_dir);
        return DT_OK;
    }
    if (st == DT_ERR_INVALID)
        return none_valid(t);
    if (st == DT_ERR_UNSUPPORTED) /* a newer dt's: said; every try alike */
        return DT_ERR_CONFIG;
    DT_CHECK(st);
    const dt_ckpt_section_t *ms = dt_ckpt_find(c, TAG_META),
                            *ps = dt_ckpt_find(c, TAG_PARAMS),
                            *os = dt_ckpt_find(c, TAG_OPT_STATE),
                            *ns = dt_ckpt_find(c, TAG_OPT_NAME);
    if (!ms || ms->len < 8 * M_V1_COUNT || !ps || !os || !ns) {
        dt_error("%s: not a trainer checkpoint (sections missing)", c->path);
        return DT_ERR_INVALID;
    }
    meta[M_LR_SCALE] = dbits(1.0); /* version 1 */
    for (int i = 0; i < M_COUNT && 8 * (size_t)i + 8 <= ms->len; i++)
        meta[i] = ckpt_get64((const unsigned char *)ms->data + 8 * i);
    DT_CHECK(check_meta_version(c, meta[M_VERSION]));
    DT_CHECK(check_ckpt(t, c, meta));
    if (!quiet)
        DT_CHECK(note_newer(t, c->step));
    float *bufs = NULL;
    size_t nbufs = 0;
    const dt_ckpt_section_t *bs = dt_ckpt_find(c, TAG_BUFFERS);
    DT_CHECK(dt_model_buffers(t->model, &bufs, &nbufs));
    DT_CHECK(dt_device_copy(t->dev, t->params, t->dev->mem, ps->data,
                            DT_MEM_HOST, ps->len));
    if (nbufs)
        DT_CHECK(dt_device_copy(t->dev, bufs, t->dev->mem, bs->data,
                                DT_MEM_HOST, bs->len));
    *found = 1;
    if (!quiet) {
        t->ckpt_have = true;
        t->ckpt_last_step = c->step;
    }
    if (meta[M_EPOCH] >= t->epochs)
        dt_info("resuming from %s: written at the end of training (%llu "
                "epochs done, step %llu of the job)",
                c->path, (unsigned long long)meta[M_EPOCH],
                (unsigned long long)meta[M_GLOBAL_STEP]);
    else
        dt_info("resuming from %s: epoch %llu, step %llu of the job",
                c->path, (unsigned long long)meta[M_EPOCH] + 1,
                (unsigned long long)meta[M_GLOBAL_STEP]);
    say_feedback_restarts(t);
    return DT_OK;
}

/* A checkpoint of old_world workers with batch old_batch each, resumed by
 * t->world workers of t->batch: the epoch goes on where the old workers
 * stopped, by samples. Every rank computes the same from the same META;
 * rank 0 says what changed. */
static void reshard(dt_trainer_t *t, uint64_t old_world, uint64_t old_batch)
{
    uint64_t n = t->train.n;
    uint64_t seen = t->epoch_start + t->step_in_epoch * old_batch * old_world;
    uint64_t per = (uint64_t)t->batch * (uint64_t)t->world;
    char where[200];
    if (seen >= n) {
        /* Its steps were all done (the end of the epoch, evaluation and
         * the epoch's checkpoint are still to come). */
        t->epoch_start = 0;
        t->step_in_epoch = dt_trainer_steps_per_epoch(t);
        snprintf(where, sizeof where, "epoch %llu: all %llu samples seen",
                 (unsigned long long)t->epoch + 1, (unsigned long long)n);
    } else if (seen % per == 0) {
        /* On this world's step grid: an ordinary position. */
        t->epoch_start = 0;
        t->step_in_epoch = seen / per;
        snprintf(where, sizeof where, "epoch %llu goes on at step %llu of "
                 "%llu (%llu of %llu samples seen)",
                 (unsigned long long)t->epoch + 1,
                 (unsigned long long)t->step_in_epoch + 1,
                 (unsigned long long)dt_trainer_steps_per_epoch(t),
                 (unsigned long long)seen, (unsigned long long)n);
    } else {
        t->epoch_start = seen;
        t->step_in_epoch = 0;
        snprintf(where, sizeof where, "epoch %llu: the remaining %llu of "
                 "%llu samples resharded (%llu steps)",
                 (unsigned long long)t->epoch + 1,
                 (unsigned long long)(n - seen), (unsigned long long)n,
                 (unsigned long long)dt_trainer_epoch_steps(t));
    }
    if (t->epoch >= t->epochs) /* the end of training: no epoch goes on */
        snprintf(where, sizeof where, "training complete (%llu of %llu "
                 "epochs)", (unsigned long long)t->epoch,
                 (unsigned long long)t->epochs);
    if (t->rank != 0)
        return;
    double before = dt_lr_target_for(&t->lr, (int)old_world,
                                     (long long)old_batch);
    double now = dt_lr_target_for(&t->lr, t->world, (long long)t->batch);
    dt_info("resuming a checkpoint of %llu worker%s on %d: global batch "
            "%llu -> %llu, lr %g -> %g (%s); %s",
            (unsigned long long)old_world, old_world == 1 ? "" : "s",
            t->world, (unsigned long long)(old_world * old_batch),
            (unsigned long long)per, before, now,
            dt_lr_scaling_name(&t->lr), where);
}

static bool same_weights(const double *a, const double *b, int n)
{
    if (!a || !b) { /* NULL: equal shares */
        const double *w = a ? a : b;
        for (int r = 1; w && r < n; r++)
            if (w[r] != w[0])
                return false;
        return true;
    }
    for (int r = 0; r < n; r++)
        if (a[r] / a[0] != b[r] / b[0])
            return false;
    return true;
}

/* Collective: the checkpoint's work_load (rank 0 read it). auto takes it
 * back (when the world size is the same); fixed weights that differ are
 * said once: the same global batches, split otherwise. */
static dt_status_t restore_work_load(dt_trainer_t *t, const dt_ckpt_t *c)
{
    uint64_t n = 0;
    const dt_ckpt_section_t *ws = t->rank == 0
                                      ? dt_ckpt_find(c, TAG_WORK_LOAD)
                                      : NULL;
    if (ws)
        n = ws->len / 8;
    DT_CHECK(dt_trainer_broadcast_host(&n, sizeof n));
    if (n > 1u << 20)
        return DT_ERR_INVALID;
    double *w = n ? malloc(n * sizeof *w) : NULL;
    if (n && !w)
        return DT_ERR_NOMEM;
    for (uint64_t i = 0; ws && i < n; i++)
        w[i] = bitsd(ckpt_get64((const unsigned char *)ws->data + 8 * i));
    dt_status_t st = n ? dt_trainer_broadcast_host(w, n * sizeof *w) : DT_OK;
    char was[4096] = "equal", now[4096] = "equal";
    if (w)
        dt_work_load_format(w, (int)n, was, sizeof was);
    if (st == DT_OK && t->work_load_auto) {
        /* Another world size: the measured weights mean nothing there. */
        bool keep = n == (uint64_t)t->world;
        free(t->work_load);
        t->work_load = keep ? w : NULL;
        if (keep)
            w = NULL;
        st = dt_pipeline_set_shares(t->pipe, t->work_load);
        bool refused = st == DT_ERR_INVALID && t->work_load;
        if (refused) {
            /* written by fixed weights beyond auto's 1/20 floor: the
             * loaders' buffers are sized for auto's */
            if (t->rank == 0)
                dt_warn("work_load = auto: the checkpoint's %s give a rank "
                        "a larger share than auto ever does; equal shares "
                        "until the next rebalancing", was);
            free(t->work_load);
            t->work_load = NULL;
            st = dt_pipeline_set_shares(t->pipe, NULL);
        }
        if (st == DT_OK && t->rank == 0 && n && !refused)
            dt_info("work_load = auto: %s from the checkpoint%s", was,
                    keep ? "" : " is for another number of workers; equal "
                                "shares until the next rebalancing");
    } else if (st == DT_OK && t->rank == 0 &&
               (n ? (int)n != t->world ||
                        !same_weights(w, t->work_load, t->world)
                  : !same_weights(NULL, t->work_load, t->world))) {
        if (t->work_load)
            dt_work_load_format(t->work_load, t->world, now, sizeof now);
        dt_info("the checkpoint was written with work_load %s, this run "
                "has %s: the same global batches, split otherwise (the "
                "weighted gradient average is the same to float rounding)",
                was, now);
    }
    free(w);
    return st;
}

/* Rank 0, before anything is broadcast: the optimizer state's size is
 * what this job's optimizer keeps (its settings decide: sgd with
 * momentum = 0 keeps none). */
static dt_status_t check_opt_size(const dt_trainer_t *t, const dt_ckpt_t *c,
                                  const dt_ckpt_section_t *os)
{
    size_t want = dt_opt_state_size(t->opt_plugin, t->opt, t->opt_state);
    if (os->len == want)
        return DT_OK;
    const char *name = t->opt_plugin->name;
    dt_error("%s: its optimizer state is %zu bytes, optimizer '%s' with this "
             "job's [optimizer.%s] settings keeps %zu: a setting that "
             "changes what it keeps differs from the run that wrote it "
             "(e.g. sgd momentum = 0 keeps no velocity), or another dt "
             "version wrote it; resume with that run's settings or start a "
             "new checkpoint_dir", c->path, os->len, name, name, want);
    return DT_ERR_CONFIG;
}

void dt_trainer_ckpt_losses(const dt_ckpt_t *c, double *last,
                            double *first)
{
    const dt_ckpt_section_t *ls = dt_ckpt_find(c, TAG_LOSSES);
    *last = *first = NAN;
    if (ls && ls->len >= 16)
        dt_trainer_losses_decode(ls->data, last, first);
}

void dt_trainer_losses_decode(const unsigned char *b, double *last,
                              double *first)
{
    *last = bitsd(ckpt_get64(b));
    *first = bitsd(ckpt_get64(b + 8));
}

/* Rank 0: the losses go on from the checkpoint's (a checkpoint written
 * before the next step records the same); the job's first step's stays
 * when the file has none. */
static void restore_losses(dt_trainer_t *t, const dt_ckpt_t *c)
{
    double last, first;
    dt_trainer_ckpt_losses(c, &last, &first);
    t->last_loss = last;
    if (!isnan(first))
        t->first_loss = first;
    if (!dt_loss_ruined(last, t->first_loss)) {
        t->ckpt_sound = true;
        t->ckpt_sound_step = c->step;
    } else if (t->ckpt_sound_step > c->step) {
        t->ckpt_sound = false; /* a rollback set that one aside */
    }
}

static dt_status_t restore(dt_trainer_t *t, uint64_t before,
                           bool sound_only, bool *found_out)
{
    dt_ckpt_t c;
    memset(&c, 0, sizeof c);
    /* head: found flag, optimizer state length, then the META fields */
    uint64_t head[2 + M_COUNT];
    memset(head, 0, sizeof head);
    dt_status_t st = DT_OK;
    if (found_out)
        *found_out = false;
    if (t->rank == 0) {
        int found = 0;
        st = load_on_root(t, before, found_out != NULL, sound_only, &c,
                          head + 2, &found);
        const dt_ckpt_section_t *os = found ? dt_ckpt_find(&c, TAG_OPT_STATE)
                                            : NULL;
        /* Written in async mode: the state of the servers' shards, which
         * the one optimizer of a sync worker cannot take. */
        if (os && dt_ckpt_find(&c, TAG_SHARDS)) {
            dt_warn("%s was written in [train] mode = async: its optimizer "
                    "state belongs to the parameter servers' shards; this "
                    "job starts with a fresh optimizer state (momentum)",
                    c.path);
            os = NULL;
            found = 3; /* found, without optimizer state */
        }
        if (st == DT_OK && os)
            st = check_opt_size(t, &c, os);
        head[0] = st != DT_OK ? 2 : (uint64_t)found; /* 2: failed */
        /* failed: the status, so that every rank fails alike (a refused
         * checkpoint is DT_ERR_CONFIG everywhere: no rank exits 1 and
         * invites a restart the others know is pointless) */
        head[1] = st != DT_OK ? (uint64_t)(int64_t)st : os ? os->len : 0;
    }
    /* Everyone learns the outcome, so a failure stops every rank. */
    dt_status_t bst = dt_trainer_broadcast_host(head, sizeof head);
    if (bst != DT_OK || head[0] == 2) {
        dt_ckpt_free(&c);
        if (bst != DT_OK)
            return bst;
        dt_worker_record_failure(0, "error"); /* rank 0 said why */
        st = (dt_status_t)(int64_t)head[1];
        return st < 0 ? st : DT_ERR_INVALID;
    }
    if (head[0] == 0)
        return DT_OK;
    bool no_opt = head[0] == 3;
    const uint64_t *meta = head + 2;
    size_t opt_len = (size_t)head[1];
    void *opt = NULL;
    if (t->rank == 0 && !no_opt)
        opt = (void *)dt_ckpt_find(&c, TAG_OPT_STATE)->data;
    else if (!(opt = malloc(opt_len ? opt_len : 1)))
        st = DT_ERR_NOMEM;
    if (st == DT_OK)
        st = dt_trainer_broadcast(t, t->params, t->nparams * sizeof(float));
    float *bufs = NULL;
    size_t nbufs = 0;
    if (st == DT_OK)
        st = dt_model_buffers(t->model, &bufs, &nbufs);
    if (st == DT_OK && nbufs)
        st = dt_trainer_broadcast(t, bufs, nbufs * sizeof(float));
    if (st == DT_OK)
        st = dt_trainer_broadcast_host(opt, opt_len);
    size_t want = st == DT_OK && !no_opt
                      ? dt_opt_state_size(t->opt_plugin, t->opt,
                                          t->opt_state)
                      : opt_len;
    if (want != opt_len) {
        dt_error("checkpoint optimizer state is %zu bytes, optimizer '%s' "
                 "expects %zu: different optimizer settings or version",
                 opt_len, t->opt_plugin->name, want);
        st = DT_ERR_INVALID;
    }
    if (st == DT_OK && !no_opt)
        st = dt_opt_load(t->opt_plugin, t->opt, t->opt_state, opt, opt_len);
    if (t->rank != 0 || no_opt)
        free(opt);
    if (st == DT_OK)
        st = restore_work_load(t, &c);
    if (st == DT_OK && t->rank == 0)
        restore_losses(t, &c);
    dt_ckpt_free(&c);
    DT_CHECK(st);
    t->epoch = meta[M_EPOCH];
    t->step_in_epoch = meta[M_STEP_IN_EPOCH];
    t->global_step = meta[M_GLOBAL_STEP];
    uint64_t rng_seed, counter;
    dt_model_get_rng(t->model, &rng_seed, &counter);
    dt_model_set_rng(t->model, rng_seed, meta[M_RNG_COUNTER]);
    t->loss_sum = t->rank == 0 ? bitsd(meta[M_LOSS_SUM]) : 0.0;
    t->loss_count = t->rank == 0 ? bitsd(meta[M_LOSS_COUNT]) : 0.0;
    double scale = bitsd(meta[M_LR_SCALE]);
    t->lr.scale = isfinite(scale) && scale > 0 ? scale : 1.0;
    double best = bitsd(meta[M_BEST_ACC]); /* 0 before version 3 */
    t->best_acc = isfinite(best) ? best : 0.0;
    t->best_epoch = meta[M_BEST_EPOCH];
    t->epoch_start = meta[M_EPOCH_START]; /* 0 before version 4 */
    /* Loss scaling goes on where it was (0 before version 5, or written
     * without it: this job's loss_scale_init stands). */
    double ls_scale = bitsd(meta[M_LOSS_SCALE]);
    if (t->ls.dynamic && isfinite(ls_scale) && ls_scale > 0) {
        t->ls.scale = ls_scale;
        t->ls.good = meta[M_SCALE_GOOD];
    }
    if (t->ls.enabled)
        t->ls.skipped = meta[M_SCALE_SKIPPED];
    /* The optimizer's own step number goes on from the state it got: the
     * checkpoint's steps less those its state did not make (skipped for
     * overflow; before version 6 the skipped count, which a run without
     * loss scaling wrote as 0), or 0 for a fresh state (bias correction at
     * the checkpoint's step count with zero moments made Adam's first
     * updates several times lr). */
    uint64_t base = meta[M_VERSION] >= 6 ? meta[M_OPT_BASE]
                                         : meta[M_SCALE_SKIPPED];
    t->opt_base = no_opt ? t->global_step
                         : base <= t->global_step ? base : 0;
    if (t->rank == 0 && !no_opt)
        dt_debug("the optimizer's state goes on from its step %llu (step "
                 "%llu of the job)",
                 (unsigned long long)(t->global_step - t->opt_base),
                 (unsigned long long)t->global_step);
    if (t->epoch_start >= t->train.n)
        t->epoch_start = 0;
    uint64_t old_world = meta[M_WORLD] ? meta[M_WORLD] : 1;
    uint64_t old_batch = meta[M_BATCH] ? meta[M_BATCH] : t->batch;
    if (old_world != (uint64_t)t->world || old_batch != t->batch)
        reshard(t, old_world, old_batch);
    uint64_t steps = dt_trainer_epoch_steps(t);
    if (t->step_in_epoch > steps)
        t->step_in_epoch = steps;
    if (found_out)
        *found_out = true;
    return DT_OK;
}

dt_status_t dt_trainer_restore(dt_trainer_t *t, uint64_t before,
                               bool *found)
{
    return restore(t, before, false, found);
}

dt_status_t dt_trainer_restore_sound(dt_trainer_t *t, uint64_t before,
                                     bool *found)
{
    return restore(t, before, true, found);
}

dt_status_t dt_trainer_restore_async(dt_trainer_t *t, void **opt,
                                     size_t *opt_len, dt_ps_pos_t *pos,
                                     uint64_t *opt_steps, bool *found_out)
{
    dt_ckpt_t c;
    memset(&c, 0, sizeof c);
    uint64_t meta[M_COUNT];
    memset(meta, 0, sizeof meta);
    int found = 0;
    *found_out = false;
    dt_status_t st = load_on_root(t, UINT64_MAX, false, false, &c, meta,
                                  &found);
    if (st != DT_OK || !found) {
        dt_ckpt_free(&c);
        return st;
    }
    const dt_ckpt_section_t *os = dt_ckpt_find(&c, TAG_OPT_STATE),
                            *ss = dt_ckpt_find(&c, TAG_SHARDS);
    uint64_t nshards = ss && ss->len >= 8 ? ckpt_get64(ss->data) : 0;
    int usable = nshards == (uint64_t)t->nservers &&
                 (ss->len == 8 * ((size_t)nshards + 1) ||
                  ss->len == 8 * ((size_t)nshards + 2));
    /* The servers' own step count: every worker's pushes, not rank 0's
     * steps (Adam's bias correction goes on from it). */
    *opt_steps = usable && ss->len == 8 * ((size_t)nshards + 2)
                     ? ckpt_get64((const unsigned char *)ss->data +
                                  8 * ((size_t)nshards + 1))
                     : meta[M_GLOBAL_STEP];
    /* Each length within what is left of OPT_STATE (a sum alone can wrap
     * to the section's length in a crafted file). */
    size_t have = os ? os->len : 0, total = 0;
    for (int s = 0; usable && s < t->nservers; s++) {
        uint64_t len = ckpt_get64((const unsigned char *)ss->data + 8 * (s + 1));
        if (len > have - total)
            usable = 0;
        else
            total += (size_t)len;
    }
    if (usable && total == have) {
        size_t at = 0;
        for (int s = 0; st == DT_OK && s < t->nservers; s++) {
            opt_len[s] = ckpt_get64((const unsigned char *)ss->data +
                                    8 * (s + 1));
            if (!(opt[s] = malloc(opt_len[s] ? opt_len[s] : 1)))
                st = DT_ERR_NOMEM;
            else if (opt_len[s])
                memcpy(opt[s], (const char *)os->data + at, opt_len[s]);
            at += opt_len[s];
        }
    } else {
        dt_warn("%s %s: the parameter servers start with a fresh optimizer "
                "state (momentum)", c.path,
                !ss ? "was written in [train] mode = sync"
                : nshards != (uint64_t)t->nservers
                    ? "was written by another number of parameter servers"
                    : "has shard lengths that do not add up to its optimizer "
                      "state");
    }
    dt_ckpt_free(&c);
    DT_CHECK(st);
    t->epoch = meta[M_EPOCH];
    t->step_in_epoch = meta[M_STEP_IN_EPOCH];
    t->global_step = meta[M_GLOBAL_STEP];
    t->epoch_start = meta[M_EPOCH_START];
    if (t->epoch_start >= t->train.n)
        t->epoch_start = 0;
    uint64_t rng_seed, counter;
    dt_model_get_rng(t->model, &rng_seed, &counter);
    dt_model_set_rng(t->model, rng_seed, meta[M_RNG_COUNTER]);
    t->loss_sum = bitsd(meta[M_LOSS_SUM]);
    t->loss_count = bitsd(meta[M_LOSS_COUNT]);
    double best = bitsd(meta[M_BEST_ACC]);
    t->best_acc = isfinite(best) ? best : 0.0;
    t->best_epoch = meta[M_BEST_EPOCH];
    uint64_t old_world = meta[M_WORLD] ? meta[M_WORLD] : 1;
    uint64_t old_batch = meta[M_BATCH] ? meta[M_BATCH] : t->batch;
    if (old_world != (uint64_t)t->world || old_batch != t->batch)
        reshard(t, old_world, old_batch);
    *pos = (dt_ps_pos_t){t->epoch, t->step_in_epoch, t->epoch_start,
                         t->global_step};
    *found_out = true;
    return DT_OK;
}

/* The trust checks rank 0 makes at a job's start, for a directory this
 * process has not checked yet (dtctl asks again at every restart: said
 * once, not at each). */
static void trusted_once(const char *dir, const char *path)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char checked[PATH_MAX];
    pthread_mutex_lock(&lock);
    if (strcmp(checked, path) != 0) {
        snprintf(checked, sizeof checked, "%s", path);
        dt_ckpt_dir_trusted(dir, path);
    }
    pthread_mutex_unlock(&lock);
}

dt_status_t dt_train_latest_checkpoint(const char *dir,
                                       dt_train_checkpoint_t *out)
{
    memset(out, 0, sizeof *out);
    if (!dir || !*dir)
        return DT_ERR_NOT_FOUND;
    /* Followed once, so that the files listed are the files read; a
     * directory not there (another host's, seen from dtctl's) is none. */
    struct stat sb;
    char *path = NULL;
    if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        DT_CHECK(dt_ckpt_dir_resolve(dir, &path));
        trusted_once(dir, path);
    }
    dt_ckpt_t c;
    dt_status_t found = dt_ckpt_load_latest(path ? path : dir, &c);
    free(path);
    /* dt/train.h: none valid is "not found", as it has always been */
    DT_CHECK(found == DT_ERR_INVALID ? DT_ERR_NOT_FOUND : found);
    const dt_ckpt_section_t *ms = dt_ckpt_find(&c, TAG_META);
    dt_status_t st = DT_OK;
    if (!ms || ms->len < 8 * M_V1_COUNT) {
        dt_error("%s: not a trainer checkpoint (sections missing)", c.path);
        st = DT_ERR_INVALID;
    } else {
        const unsigned char *m = ms->data;
        snprintf(out->path, sizeof out->path, "%s", c.path);
        out->epoch = ckpt_get64(m + 8 * M_EPOCH) + 1;
        out->step_in_epoch = ckpt_get64(m + 8 * M_STEP_IN_EPOCH);
        out->global_step = ckpt_get64(m + 8 * M_GLOBAL_STEP);
    }
    dt_ckpt_free(&c);
    return st;
}

/* A fresh run into a directory of checkpoints would prune them by step
 * (its own new ones too, as theirs are newer) and a later --resume would
 * continue the old run. */
static dt_status_t check_fresh(const dt_trainer_t *t)
{
    dt_ckpt_entry_t *v = NULL;
    size_t n = 0;
    dt_status_t st = dt_ckpt_list(t->ckpt_dir, &v, &n);
    if (st == DT_ERR_NOT_FOUND)
        return DT_OK;
    DT_CHECK(st);
    if (n)
        dt_error("[train] checkpoint_dir %s already holds checkpoints (the "
                 "newest: %s/%s): a fresh run would mix its own with them; "
                 "rerun with --resume ([train] resume = yes) to continue "
                 "that run, or give an empty or another checkpoint_dir",
                 t->ckpt_dir, t->ckpt_dir, v[0].name);
    free(v);
    return n ? DT_ERR_CONFIG : DT_OK;
}

/* Rank 0: what checkpoint_dir must be before training; then it is this
 * job's alone until teardown (a second job is refused, naming us). In
 * dtctl's restart (DT_RESTART_COUNT > 0) the holder is most likely the
 * previous attempt's rank 0, still ending on a host dtctl lost (it ends
 * at its transport timeout): wait for it, not fail with the "not
 * restarted" status at once. Half the [cluster] timeout at most: the
 * other ranks wait on rank 0's word that long, and at the whole timeout
 * they would take it for hung. */
static dt_status_t check_ckpt_dir(dt_trainer_t *t)
{
    if (!t->ckpt_dir)
        return DT_OK;
    /* Followed once: every checkpoint operation of this job (the lock,
     * writes, pruning, setting aside, reading back) goes through the
     * resolved path, where the checks looked (only rank 0 makes any). */
    char *path = NULL;
    DT_CHECK(dt_ckpt_check_dir(t->ckpt_dir, &path));
    free(t->ckpt_dir);
    t->ckpt_dir = path;
    const char *rc = getenv("DT_RESTART_COUNT");
    double wait_s = rc && atoi(rc) > 0 ? ps_live_from(t->cfg).timeout / 2
                                        : 0;
    DT_CHECK(dt_ckpt_lock(t->ckpt_dir, wait_s, &t->ckpt_lock));
    return t->resume ? DT_OK : check_fresh(t);
}

dt_status_t dt_trainer_prepare_outputs(dt_trainer_t *t)
{
    if (t->ckpt_keep < 0) { /* every rank reads the same setting */
        const char *where = "default";
        dt_config_origin(t->cfg, "train", "checkpoint_keep", NULL, &where);
        if (t->rank == 0)
            dt_error("%s: [train] checkpoint_keep = %d: the number of newest "
                     "checkpoints to keep, 0 (all) or more", where,
                     t->ckpt_keep);
        return DT_ERR_CONFIG;
    }
    int32_t ok = t->rank != 0 || check_ckpt_dir(t) == DT_OK;
    /* async: the other workers wait on the servers rank 0 sets up */
    if (t->world > 1 && !t->async)
        DT_CHECK(dt_trainer_broadcast_host(&ok, sizeof ok));
    if (!ok) {
        dt_worker_record_failure(0, "error");
        return DT_ERR_CONFIG;
    }
    if (t->rank == 0 && t->jsonl && !t->resume)
        DT_CHECK(dt_jsonl_truncate(t->jsonl));
    return DT_OK;
}
