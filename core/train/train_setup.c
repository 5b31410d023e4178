/* train_setup.c — everything the loop needs, from the configuration:
 * settings, device, data, model (parameters broadcast from rank 0),
 * optimizer plugin, gradient buckets, and rank 0's outputs. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "ckpt/ckpt.h"
#include "coll/coll.h"
#include "cuda/backend.h"
#include "plugin/plugin_loader.h"
#include "plugin/plugin_crash.h"
#include "nn/model.h"
#include "opt_call.h"
#include "opt_probe.h"
#include "train.h"

extern char **environ;

static const char *origin(const dt_config_t *cfg, const char *sec,
                          const char *key)
{
    const char *where = "default";
    dt_config_origin(cfg, sec, key, NULL, &where);
    return where;
}

static dt_status_t get_positive(const dt_config_t *cfg, const char *key,
                                long long *out)
{
    DT_CHECK(dt_config_get_int(cfg, "train", key, out));
    if (*out < 1) {
        dt_error("%s: [train] %s must be at least 1, not %lld",
                 origin(cfg, "train", key), key, *out);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* "2", "2 epochs", "1 epoch", "500 steps", "500steps". */
static dt_status_t parse_every(const dt_config_t *cfg, dt_trainer_t *t)
{
    const char *text = NULL;
    DT_CHECK(dt_config_get_string(cfg, "train", "checkpoint_every", &text));
    char *end;
    const char *digits = text;
    while (isspace((unsigned char)*digits))
        digits++;
    /* strtoull takes "-3" as 2^64 - 3: a checkpoint never, said nowhere */
    errno = 0;
    unsigned long long n = strtoull(digits, &end, 10);
    /* a leading + as strtoull takes it ("-3" it would wrap) */
    bool number = isdigit((unsigned char)digits[*digits == '+']) &&
                  errno == 0;
    while (isspace((unsigned char)*end))
        end++;
    int steps = strcmp(end, "step") == 0 || strcmp(end, "steps") == 0;
    int epochs = !*end || strcmp(end, "epoch") == 0 ||
                 strcmp(end, "epochs") == 0;
    if (!number || n == 0 || (!steps && !epochs)) {
        dt_error("%s: [train] checkpoint_every = '%s': write 'N epochs' or "
                 "'N steps' with N >= 1", origin(cfg, "train",
                                                  "checkpoint_every"), text);
        return DT_ERR_CONFIG;
    }
    t->ckpt_every = n;
    t->ckpt_unit_steps = steps;
    return DT_OK;
}

/* [train] mode and max_staleness; async's limits. */
static dt_status_t read_mode(const dt_config_t *cfg, dt_trainer_t *t)
{
    const char *mode = "sync";
    long long k = 0;
    DT_CHECK(dt_config_get_string(cfg, "train", "mode", &mode));
    if (strcmp(mode, "sync") != 0 && strcmp(mode, "async") != 0) {
        dt_error("%s: [train] mode = '%s': use sync or async",
                 origin(cfg, "train", "mode"), mode);
        return DT_ERR_CONFIG;
    }
    t->async = strcmp(mode, "async") == 0;
    DT_CHECK(dt_config_get_int(cfg, "train", "max_staleness", &k));
    if (k < 0 || k > 1000000) {
        dt_error("%s: [train] max_staleness = %lld: use 0 (unbounded) or a "
                 "number of pushes from 1 to 1000000",
                 origin(cfg, "train", "max_staleness"), k);
        return DT_ERR_CONFIG;
    }
    t->max_staleness = (int)k;
    return dt_config_get_bool(cfg, "train", "push_overlap", &t->push_overlap);
}

/* One setting async mode refuses: its key, where it was set, and why. */
typedef struct async_refusal {
    const char *setting; /* "[model] sync_bn" */
    const char *where;   /* its origin: file:line, --set, DT_..., default */
    const char *why;
} async_refusal_t;

#define ASYNC_REFUSALS 6 /* every check below at once */

/* The settings async mode does not do (yet), each with its own reason,
 * into r[ASYNC_REFUSALS]; returns how many. */
static int async_refusals(const dt_config_t *cfg, const dt_trainer_t *t,
                          bool sync_bn, async_refusal_t *r)
{
    int n = 0;
    static const char step_sum[] = "it acts on one step's gradient summed "
                                   "over every worker, which async never "
                                   "forms (each push is one worker's)";
    if (t->clip.max_norm > 0)
        r[n++] = (async_refusal_t){"[train] clip_grad_norm",
                                   origin(cfg, "train", "clip_grad_norm"),
                                   step_sum};
    if (t->clip.max_value > 0)
        r[n++] = (async_refusal_t){"[train] clip_grad_value",
                                   origin(cfg, "train", "clip_grad_value"),
                                   step_sum};
    if (t->on_divergence == DT_DIVERGE_HALVE_LR)
        r[n++] = (async_refusal_t){
            "[train] on_divergence = halve_lr",
            origin(cfg, "train", "on_divergence"),
            "it rolls every worker back to one checkpoint together, and "
            "async workers are not in step"};
    if (sync_bn)
        r[n++] = (async_refusal_t){
            "[model] sync_bn", origin(cfg, "model", "sync_bn"),
            "it normalizes with statistics gathered from every worker's "
            "batch in one step, and async workers are not in step"};
    if (t->work_load || t->work_load_auto)
        r[n++] = (async_refusal_t){
            "[cluster] work_load", origin(cfg, "cluster", "work_load"),
            "it shares a global batch out among the workers, and in async "
            "every push is one worker's whole batch"};
    if (t->ls.enabled) {
        /* Unset, loss_scale follows precision = fp16: name that. */
        int by_precision = !dt_config_get(cfg, "train", "loss_scale");
        r[n++] = (async_refusal_t){
            by_precision ? "[train] precision = fp16 (its default "
                           "loss_scale = dynamic)"
                         : "[train] loss_scale",
            origin(cfg, "train", by_precision ? "precision" : "loss_scale"),
            "a step is skipped when the gradients summed over every worker "
            "overflow, and async never sums them"};
    }
    return n;
}

/* What async mode does not do (yet): each setting refused by name, with
 * where it and mode were set, before any worker starts (dtctl runs this
 * check too). */
static dt_status_t check_async(const dt_config_t *cfg, const dt_trainer_t *t)
{
    bool sync_bn = false;
    DT_CHECK(dt_config_get_bool(cfg, "model", "sync_bn", &sync_bn));
    async_refusal_t r[ASYNC_REFUSALS];
    int n = async_refusals(cfg, t, sync_bn, r);
    for (int i = 0; i < n; i++)
        dt_error("%s: %s is not supported with [train] mode = async (%s): "
                 "%s; drop it or use mode = sync", r[i].where, r[i].setting,
                 origin(cfg, "train", "mode"), r[i].why);
    if (n > 0)
        return DT_ERR_CONFIG;
    /* The servers' protocol keeps a receive of each kind posted and matches
     * messages by tag; nccl matches point-to-point messages by posting
     * order only, so replies would land in the wrong buffers. */
    const char *transport = "tcp";
    DT_CHECK(dt_config_get_string(cfg, "cluster", "transport", &transport));
    if (strcmp(transport, "nccl") == 0) {
        dt_error("%s: [train] mode = async does not run over transport nccl "
                 "(%s): the parameter servers' messages are matched by tag, "
                 "which nccl does not do; use transport tcp or ucx",
                 origin(cfg, "train", "mode"),
                 origin(cfg, "cluster", "transport"));
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

static dt_status_t read_settings(const dt_config_t *cfg, dt_trainer_t *t)
{
    long long seed = 0, epochs, batch, keep = 3;
    uint64_t bucket = 0;
    DT_CHECK(read_mode(cfg, t));
    DT_CHECK(dt_config_get_int(cfg, "train", "seed", &seed));
    DT_CHECK(get_positive(cfg, "epochs", &epochs));
    DT_CHECK(get_positive(cfg, "batch_size", &batch));
    DT_CHECK(dt_config_get_size(cfg, "train", "bucket", &bucket));
    DT_CHECK(dt_lr_schedule_from_config(cfg, t->world, &t->lr));
    t->seed = (uint64_t)seed;
    t->epochs = (uint64_t)epochs;
    t->batch = (size_t)batch;
    t->bucket_bytes = bucket ? (size_t)bucket : sizeof(float);
    /* A copy: config strings move when plugin schemas are added later. */
    const char *dir = dt_config_get(cfg, "train", "checkpoint_dir");
    if (dir && *dir && !(t->ckpt_dir = strdup(dir)))
        return DT_ERR_NOMEM;
    DT_CHECK(parse_every(cfg, t));
    DT_CHECK(dt_config_get_int(cfg, "train", "checkpoint_keep", &keep));
    if (keep < 0) { /* said by dtctl too, with the job file's line */
        dt_error("%s: [train] checkpoint_keep = %lld: the number of newest "
                 "checkpoints to keep, 0 (all) or more",
                 origin(cfg, "train", "checkpoint_keep"), keep);
        return DT_ERR_CONFIG;
    }
    t->ckpt_keep = (int)keep;
    long long steps = 0;
    DT_CHECK(dt_config_get_int(cfg, "train", "checkpoint_steps", &steps));
    if (steps < 0) {
        dt_error("%s: [train] checkpoint_steps must be 0 (off) or more, not "
                 "%lld", origin(cfg, "train", "checkpoint_steps"), steps);
        return DT_ERR_CONFIG;
    }
    t->ckpt_steps = (uint64_t)steps;
    DT_CHECK(dt_config_get_int(cfg, "train", "eval_steps", &steps));
    if (steps < 0) {
        dt_error("%s: [train] eval_steps = %lld: evaluate every N optimizer "
                 "steps, or 0 for the epochs' ends only",
                 origin(cfg, "train", "eval_steps"), steps);
        return DT_ERR_CONFIG;
    }
    t->eval_steps = (uint64_t)steps;
    DT_CHECK(dt_config_get_duration(cfg, "train", "checkpoint_interval",
                                    &t->ckpt_interval));
    DT_CHECK(dt_config_get_bool(cfg, "train", "checkpoint_best",
                                &t->ckpt_best));
    if (t->ckpt_best && !t->ckpt_dir) {
        dt_error("%s: [train] checkpoint_best = yes needs [train] "
                 "checkpoint_dir: the directory for best.dtckpt",
                 origin(cfg, "train", "checkpoint_best"));
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_bool(cfg, "train", "resume", &t->resume));
    if (t->resume && !t->ckpt_dir) {
        dt_error("--resume needs [train] checkpoint_dir: the directory to "
                 "resume from");
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_grad_clip_from_config(cfg, &t->clip));
    DT_CHECK(dt_work_load_from_config(cfg, t->world, &t->work_load,
                                      &t->work_load_auto));
    DT_CHECK(dt_on_divergence_from_config(cfg, t->ckpt_dir != NULL,
                                          &t->on_divergence));
    DT_CHECK(dt_loss_scale_setup(&t->ls, cfg));
    return t->async ? check_async(cfg, t) : DT_OK;
}

static dt_status_t read_activations(const dt_config_t *cfg, int gpu,
                                    const char *dev_name, int *out);
static dt_status_t read_cuda_graphs(const dt_config_t *cfg,
                                    dt_cuda_graphs_t *mode);
static dt_status_t check_cuda_graphs_device(const dt_config_t *cfg,
                                            dt_cuda_graphs_t mode);

static dt_status_t check_model_keys(const dt_config_t *cfg,
                                    dt_conv_algo_t *conv_algo,
                                    dt_layout_t *layout, long long *threads,
                                    double *smoothing);

/* The fewest and the most samples a step gives one rank under work_load
 * (weights, or is_auto; batch each without either): fixed weights' own
 * shares; auto keeps every weight within DT_WORK_LOAD_MIN_WEIGHT of the
 * largest, so at worst one rank at the floor among the rest at 1 (the
 * least) or one at 1 among the rest at the floor (the most).
 * *least_rank: which rank gets the least. */
static dt_status_t share_bounds(const double *weights, bool is_auto,
                                int world, size_t batch, size_t *least,
                                int *least_rank, size_t *largest)
{
    *least = *largest = batch;
    *least_rank = 0;
    if (world < 2 || (!weights && !is_auto))
        return DT_OK;
    double *w = malloc((size_t)world * sizeof *w);
    size_t *share = malloc((size_t)world * sizeof *share);
    if (!w || !share) {
        free(w);
        free(share);
        return DT_ERR_NOMEM;
    }
    for (int pass = 0; pass < (weights ? 1 : 2); pass++) {
        for (int r = 0; r < world; r++) /* auto: rank 0 the odd one */
            w[r] = weights ? weights[r]
                   : (r == 0) == (pass == 0) ? DT_WORK_LOAD_MIN_WEIGHT
                                             : 1.0;
        dt_split_shares(batch * (size_t)world, w, world, share);
        for (int r = 0; r < world; r++) {
            if ((weights || pass == 0) && share[r] < *least) {
                *least = share[r];
                *least_rank = r;
            }
            if ((weights || pass == 1) && share[r] > *largest)
                *largest = share[r];
        }
    }
    free(w);
    free(share);
    return DT_OK;
}

dt_status_t dt_train_least_share(const dt_config_t *cfg, int world,
                                 long long batch, long long *least,
                                 int *rank)
{
    double *w = NULL;
    bool is_auto = false;
    size_t lo = (size_t)batch, hi;
    *least = batch;
    *rank = 0;
    if (world < 2)
        return DT_OK;
    DT_CHECK(dt_work_load_from_config(cfg, world, &w, &is_auto));
    dt_status_t st = share_bounds(w, is_auto, world, (size_t)batch, &lo,
                                  rank, &hi);
    free(w);
    *least = (long long)lo;
    return st;
}

/* [model] layout = nhwc on a model with a layer that has no NHWC form:
 * refused with the key's line, before the workers load the data (their
 * dt_model_init would refuse it after). CUDA runs NCHW whatever layout
 * says; device = auto may land on a CPU, and auto or nchw cost a GPU
 * nothing. */
static dt_status_t check_layout(const dt_config_t *cfg, const dt_model_t *m)
{
    const char *name = dt_config_get(cfg, "model", "layout");
    const char *device = dt_config_get(cfg, "train", "device");
    dt_layout_t layout;
    /* a misspelt layout: dt_train_check_config names it */
    if (!name || dt_layout_parse(name, &layout) != DT_OK ||
        layout != DT_LAYOUT_NHWC || (device && strcmp(device, "cuda") == 0))
        return DT_OK;
    return dt_model_check_nhwc(m, origin(cfg, "model", "layout")) == DT_OK
               ? DT_OK
               : DT_ERR_CONFIG;
}

/* [model] sync_bn = yes with [cluster] work_load (unequal shares) on a
 * model with batchnorm: its backward sums the ranks' dy, each scaled by
 * its own 1 / b_r, not the global batch's gradient. */
static dt_status_t check_sync_bn(const dt_config_t *cfg, const dt_model_t *m,
                                 int world)
{
    bool sync_bn = false, is_auto = false;
    double *w = NULL;
    DT_CHECK(dt_config_get_bool(cfg, "model", "sync_bn", &sync_bn));
    if (!sync_bn || world < 2 || !dt_model_batchnorm_plane(m, NULL))
        return DT_OK;
    DT_CHECK(dt_work_load_from_config(cfg, world, &w, &is_auto));
    bool unequal = w || is_auto;
    free(w);
    if (!unequal)
        return DT_OK;
    dt_error("%s: [model] sync_bn = yes does not work with [cluster] "
             "work_load (unequal shares, %s) yet; drop one of them",
             origin(cfg, "model", "sync_bn"),
             origin(cfg, "cluster", "work_load"));
    return DT_ERR_CONFIG;
}

dt_status_t dt_train_check_model(const dt_config_t *cfg, const dt_model_t *m,
                                 int world)
{
    long long batch = 0, least = 0;
    bool sync_bn = false; /* statistics over every rank's batch */
    int rank = 0;
    DT_CHECK(check_layout(cfg, m));
    DT_CHECK(check_sync_bn(cfg, m, world));
    DT_CHECK(dt_config_get_int(cfg, "train", "batch_size", &batch));
    DT_CHECK(dt_config_get_bool(cfg, "model", "sync_bn", &sync_bn));
    int layer = 0, plane = dt_model_batchnorm_plane(m, &layer);
    if (!plane)
        return DT_OK;
    DT_CHECK(dt_train_least_share(cfg, world, batch, &least, &rank));
    long long values = plane * (sync_bn ? batch * world : least);
    if (values >= 2)
        return DT_OK;
    if (least < batch && !sync_bn)
        dt_error("%s: [cluster] work_load gives rank %d %lld sample%s a step "
                 "(batch_size %lld x %d ranks): layer %d '%s' "
                 "sees %lld value per channel there, and normalizing one "
                 "value leaves nothing to learn (its running statistics "
                 "never move): a larger batch_size",
                 origin(cfg, "cluster", "work_load"), rank, least,
                 least == 1 ? "" : "s", batch, world, layer,
                 m->layers[layer].desc, values);
    else
        dt_error("%s: [train] batch_size = %lld: layer %d '%s' "
                 "sees %lld value per channel in a batch, and normalizing "
                 "one value leaves nothing to learn: batch_size >= 2",
                 origin(cfg, "train", "batch_size"), batch, layer,
                 m->layers[layer].desc, values);
    return DT_ERR_CONFIG;
}

/* [collectives] compression's value, refused here with its line rather
 * than by every worker; feedback without compression does nothing. */
static dt_status_t check_compression(const dt_config_t *cfg, bool async)
{
    const char *comp = "none";
    bool fb = false;
    dt_dtype_t wire = DT_FLOAT32;
    DT_CHECK(dt_config_get_string(cfg, "collectives", "compression", &comp));
    if (dt_coll_parse_compression(comp, &wire) != DT_OK) {
        dt_error("[collectives] compression is set by %s; no worker was "
                 "started", origin(cfg, "collectives", "compression"));
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_bool(cfg, "collectives", "compression_feedback",
                                &fb));
    if (fb && wire == DT_FLOAT32)
        dt_warn("%s: [collectives] compression_feedback = yes does nothing "
                "without compression (now %s): set compression = bf16 or "
                "fp16, or drop it",
                origin(cfg, "collectives", "compression_feedback"), comp);
    /* The scaler skips a step when the averaged gradients are not finite;
     * the fp16 wire saturates instead of overflowing, so the loss-scaled
     * gradients it clips would never lower the scale. */
    const char *precision = dt_config_get(cfg, "train", "precision");
    if (wire == DT_FLOAT16 && precision && !strcasecmp(precision, "fp16"))
        dt_warn("%s: [collectives] compression = fp16 with [train] precision "
                "= fp16: the wire saturates at +-65504 instead of "
                "overflowing, so the loss scaler never sees an overflowed "
                "sum (those gradients are clipped, the scale stays high): "
                "use compression = bf16",
                origin(cfg, "collectives", "compression"));
    if (async && wire != DT_FLOAT32)
        dt_warn("%s: [collectives] compression = %s does not apply to "
                "[train] mode = async: the parameter servers' pushes and "
                "answers travel in float32 (only allreduce is compressed, "
                "and async does none)",
                origin(cfg, "collectives", "compression"), comp);
    return DT_OK;
}

/* The optimizer's momentum as the job sets it, else its plugin's default
 * (0 without such a key). */
static double momentum_of(const dt_config_t *cfg, const dt_plugin_t *p)
{
    char section[160];
    snprintf(section, sizeof section, "optimizer.%s", p->name);
    const char *v = dt_config_get(cfg, section, "momentum");
    for (const dt_key_spec_t *k = p->keys; !v && k && k->name; k++)
        if (strcmp(k->name, "momentum") == 0)
            v = k->default_value;
    return v ? strtod(v, NULL) : 0.0;
}

/* Async applies every push at lr / W alone, to parameters other workers
 * moved since its gradient was computed, and momentum carries each stale
 * step on: with 0.9, more than 2 workers and lr_scaling's full lr per
 * push that diverges where sync trains (docs/TRAINING.md, "Asynchronous
 * training", Momentum). */
static void warn_async_momentum(const dt_config_t *cfg, const dt_trainer_t *t,
                                const dt_plugin_t *p)
{
    double m = momentum_of(cfg, p);
    if (!t->async || t->world <= 2 || m < 0.9 || t->lr.factor <= 1.0)
        return;
    dt_warn("%s: [train] mode = async with %d workers and momentum %g "
            "([optimizer.%s]): every push applies lr %g (lr %g x%g "
            "lr_scaling / %d workers) to a gradient several pushes stale, "
            "and momentum keeps each step going; this often diverges "
            "where sync trains: set lr_scaling = none for async, or lower "
            "the lr or the momentum (e.g. 0.5)",
            origin(cfg, "train", "mode"), t->world, m, p->name,
            t->lr.target / t->world, t->lr.base, t->lr.factor, t->world);
}

dt_status_t dt_train_check_config(const dt_config_t *cfg, int world)
{
    dt_trainer_t t;
    memset(&t, 0, sizeof t);
    t.world = world;
    dt_status_t st = read_settings(cfg, &t);
    long long n = 0;
    /* async's own keys do nothing in sync mode: said, not failed. */
    dt_config_source_t src = DT_SRC_DEFAULT;
    if (st == DT_OK && !t.async &&
        dt_config_origin(cfg, "train", "max_staleness", &src, NULL) ==
            DT_OK &&
        src != DT_SRC_DEFAULT)
        dt_warn("%s: [train] max_staleness bounds [train] mode = async "
                "only: it does nothing in this job (mode = sync)",
                origin(cfg, "train", "max_staleness"));
    if (st == DT_OK)
        st = dt_config_get_int(cfg, "train", "log_every", &n);
    if (st == DT_OK && n < 0) {
        dt_error("%s: [train] log_every = %lld: a progress line every N "
                 "steps, or 0 for none (the epoch lines stay)",
                 origin(cfg, "train", "log_every"), n);
        st = DT_ERR_CONFIG;
    }
    if (st == DT_OK)
        st = dt_config_get_int(cfg, "train", "max_steps", &n);
    if (st == DT_OK && n < 0) {
        dt_error("%s: [train] max_steps = %lld: 0 (run all epochs) or a "
                 "positive number of optimizer steps",
                 origin(cfg, "train", "max_steps"), n);
        st = DT_ERR_CONFIG;
    }
    dt_pipeline_opts_t po;
    int shape[3]; /* random_crop against it, where the job file says it */
    if (st == DT_OK)
        st = dt_dataset_check_config(cfg);
    if (st == DT_OK)
        st = dt_pipeline_opts_from_config(cfg, &po);
    if (st == DT_OK)
        st = dt_augment_check_config(
            cfg, dt_dataset_config_shape(cfg, shape) == DT_OK ? shape : NULL);
    const char *device = dt_config_get(cfg, "train", "device");
    int act;
    if (st == DT_OK)
        st = read_activations(cfg, !device || strcmp(device, "cpu") != 0,
                              NULL, &act);
    dt_cuda_graphs_t graphs;
    if (st == DT_OK)
        st = read_cuda_graphs(cfg, &graphs);
    if (st == DT_OK)
        st = check_cuda_graphs_device(cfg, graphs);
    dt_conv_algo_t conv_algo;
    dt_layout_t layout;
    long long threads;
    double smoothing;
    if (st == DT_OK)
        st = check_model_keys(cfg, &conv_algo, &layout, &threads,
                              &smoothing);
    /* A misspelt optimizer fails here, before any worker starts (the
     * loader's message lists the optimizers it found). */
    const char *opt = dt_config_get(cfg, "train", "optimizer");
    const dt_plugin_t *plugin = NULL;
    if (st == DT_OK && opt &&
        dt_plugin_load(DT_KIND_OPTIMIZER, opt, &plugin, NULL) != DT_OK) {
        const char *where = "default";
        dt_config_origin(cfg, "train", "optimizer", NULL, &where);
        dt_error("%s: [train] optimizer = %s cannot be used; no worker was "
                 "started", where, opt);
        st = DT_ERR_CONFIG;
    }
    /* Said once, by dtctl, before any worker starts. */
    if (st == DT_OK)
        st = check_compression(cfg, t.async);
    if (st == DT_OK) /* after compression's own message */
        st = dt_coll_check_config(cfg);
    if (st == DT_OK && !plugin) /* [train] optimizer unset: sgd */
        dt_plugin_load(DT_KIND_OPTIMIZER, "sgd", &plugin, NULL);
    /* Its own settings, checked as the workers will (made once for one
     * parameter): a momentum of 1.5 was refused by every worker after
     * launch, named by its environment variable. */
    if (st == DT_OK && plugin) {
        dt_status_t made = dt_opt_probe(cfg, plugin, NULL);
        if (made != DT_OK) /* a crash is the plugin's, not a setting's */
            st = made == DT_ERR_PLUGIN ? made : DT_ERR_CONFIG;
    }
    if (st == DT_OK && plugin)
        warn_async_momentum(cfg, &t, plugin);
    char note[512];
    const char *key = st == DT_OK ? dt_lr_schedule_warmup_note(
                                        &t.lr, note, sizeof note)
                                  : NULL;
    if (key) /* once, with the key's line; warmup_steps' length: rank 0 */
        dt_warn("%s: %s", origin(cfg, "train", key), note);
    free(t.ckpt_dir);
    free(t.work_load);
    return st;
}

/* [train] cudnn_benchmark on a GPU (ignored on the CPU: nothing to pick). */
static dt_status_t setup_conv_benchmark(const dt_config_t *cfg,
                                        dt_trainer_t *t)
{
    bool on = false;
    DT_CHECK(dt_config_get_bool(cfg, "train", "cudnn_benchmark", &on));
    if (!on || t->dev->kind != DT_DEVICE_CUDA)
        return DT_OK;
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    if (!cu->set_conv_benchmark) {
        dt_warn("%s: [train] cudnn_benchmark = yes: this dt was built "
                "without cuDNN, nothing to pick",
                origin(cfg, "train", "cudnn_benchmark"));
        return DT_OK;
    }
    DT_CHECK(cu->set_conv_benchmark(t->dev, 1));
    if (t->rank == 0)
        dt_info("cudnn_benchmark: convolution algorithms picked by timing, "
                "once per shape");
    return DT_OK;
}

/* [train] precision on the device just opened: tf32/bf16/fp16 are
 * tensor-core math on a GPU; the CPU computes in fp32 (device = cpu:
 * refused; auto that found no GPU: said, and fp32). */
static dt_status_t setup_precision(const dt_config_t *cfg, dt_trainer_t *t)
{
    DT_CHECK(setup_conv_benchmark(cfg, t));
    int p = t->ls.precision;
    if (p == DT_PRECISION_FP32)
        return DT_OK;
    if (t->dev->kind != DT_DEVICE_CUDA) {
        const char *device = dt_config_get(cfg, "train", "device");
        if (device && strcmp(device, "cpu") == 0) {
            dt_error("%s: [train] precision = %s is tensor-core math on a "
                     "GPU ([train] device = cuda); the CPU computes in "
                     "fp32: set precision = fp32", origin(cfg, "train",
                                                           "precision"),
                     dt_precision_name(p));
            return DT_ERR_CONFIG;
        }
        if (t->rank == 0)
            dt_warn("[train] precision = %s: no GPU here (device = auto), "
                    "so fp32 on the CPU", dt_precision_name(p));
        t->ls.precision = DT_PRECISION_FP32;
        return DT_OK;
    }
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    DT_CHECK(cu->set_precision(t->dev, p));
    if (t->rank == 0)
        dt_info("precision %s: float32 parameters, gradients and optimizer "
                "state; tensor-core math with %s inputs%s",
                dt_precision_name(p), dt_precision_name(p),
                t->ls.dynamic ? "; dynamic loss scaling" : "");
    return DT_OK;
}

/* [train] activations: auto (-1), float32 or bf16; bf16 refused on a
 * device that is not a GPU (dev_name: a device; NULL: [train] device =
 * cpu, dtctl's check before any worker starts). */
static dt_status_t read_activations(const dt_config_t *cfg, int gpu,
                                    const char *dev_name, int *out)
{
    const char *name = "auto";
    dt_activations_t a = DT_ACTIVATIONS_FLOAT32;
    DT_CHECK(dt_config_get_string(cfg, "train", "activations", &name));
    *out = -1;
    if (strcmp(name, "auto") == 0)
        return DT_OK;
    if (dt_activations_parse(name, &a) != DT_OK) {
        dt_error("%s: [train] activations = '%s': use auto, float32 or "
                 "bf16", origin(cfg, "train", "activations"), name);
        return DT_ERR_CONFIG;
    }
    if (a == DT_ACTIVATIONS_BF16 && !gpu) {
        dt_error("%s: [train] activations = bf16 stores a GPU's "
                 "activations in 16 bits; on %s they stay float32: set "
                 "activations = auto or float32",
                 origin(cfg, "train", "activations"),
                 dev_name ? dev_name : "the CPU ([train] device = cpu)");
        return DT_ERR_CONFIG;
    }
    *out = (int)a;
    return DT_OK;
}

/* [train] activations: bf16 storage on a GPU (auto: with precision =
 * bf16, as PyTorch's autocast keeps bf16 outputs); the CPU keeps
 * float32 (bf16 asked for there: refused). */
static dt_status_t setup_activations(const dt_config_t *cfg, dt_trainer_t *t)
{
    int gpu = t->dev->kind == DT_DEVICE_CUDA, asked;
    /* device = auto that found no GPU: bf16 is said and dropped, as
     * precision's is; device = cpu: refused */
    const char *device = dt_config_get(cfg, "train", "device");
    int auto_cpu = !gpu && !(device && strcmp(device, "cpu") == 0);
    DT_CHECK(read_activations(cfg, gpu || auto_cpu, t->dev->name, &asked));
    if (auto_cpu && asked == DT_ACTIVATIONS_BF16) {
        if (t->rank == 0)
            dt_warn("[train] activations = bf16: no GPU here (device = "
                    "auto), so float32 on the CPU");
        asked = DT_ACTIVATIONS_FLOAT32;
    }
    /* auto: where it saves memory (a small model's float32 copies cost
     * more than its activations save, and the conversions cost time) */
    dt_activations_t a = asked >= 0 ? (dt_activations_t)asked
                         : gpu && t->ls.precision == DT_PRECISION_BF16 &&
                                   dt_model_bf16_saving(t->model,
                                                        (int)t->batch) > 0
                             ? DT_ACTIVATIONS_BF16
                             : DT_ACTIVATIONS_FLOAT32;
    if (a == DT_ACTIVATIONS_BF16 && t->rank == 0)
        dt_info("activations: stored in bf16 (half the memory); layers "
                "compute in float32");
    return dt_model_set_activations(t->model, a);
}

/* The most samples a step gives one rank under work_load (share_bounds). */
static dt_status_t largest_share(const dt_trainer_t *t, size_t *out)
{
    size_t least;
    int rank;
    return share_bounds(t->work_load, t->work_load_auto, t->world, t->batch,
                        &least, &rank, out);
}

/* A split of the data set. Data found but wrong (a format, a layout, an
 * image that does not decode, one in a format dt was built without:
 * DT_ERR_UNSUPPORTED) fails every attempt alike: DT_ERR_CONFIG,
 * for which dt-train exits DT_TRAIN_EXIT_FINAL and dtctl does not
 * restart. Data missing or unreadable may come (storage not mounted
 * yet, a passing I/O error): left to --max-restarts, and said so. */
static dt_status_t load_split(const dt_config_t *cfg, const dt_trainer_t *t,
                              dt_split_t split, dt_dataset_t *ds)
{
    dt_status_t st = dt_dataset_load(cfg, split, ds);
    if (st == DT_ERR_INVALID || st == DT_ERR_UNSUPPORTED)
        return DT_ERR_CONFIG;
    if (st == DT_ERR_NOT_FOUND || st == DT_ERR_IO)
        dt_trainer_say_data_may_pass(t);
    return st;
}

static dt_status_t setup_data(const dt_config_t *cfg, dt_trainer_t *t)
{
    DT_CHECK(load_split(cfg, t, DT_SPLIT_TRAIN, &t->train));
    DT_CHECK(load_split(cfg, t, DT_SPLIT_TEST, &t->test));
    /* One model reads both: the test set must be the training set's
     * shape (its samples go through the training set's buffers). */
    if (t->test.channels != t->train.channels ||
        t->test.height != t->train.height ||
        t->test.width != t->train.width ||
        t->test.nclasses != t->train.nclasses) {
        const char *path = dt_config_get(cfg, "data", "path");
        dt_error("[data] path = %s: the training samples are %dx%dx%d of %d "
                 "classes, the test samples %dx%dx%d of %d: the two splits "
                 "must have one shape (images of one size, the same "
                 "classes)", path ? path : "(default)", t->train.channels,
                 t->train.height, t->train.width, t->train.nclasses,
                 t->test.channels, t->test.height, t->test.width,
                 t->test.nclasses);
        return DT_ERR_CONFIG; /* a restart loads the same */
    }
    /* Before a collective every rank passes before any allocates its
     * model: no rank's measure holds a neighbour's parameters. */
    dt_trainer_measure_memory(t);
    /* Before anything depends on the counts (shards, steps per epoch). */
    DT_CHECK(dt_trainer_agree_data(cfg, t));
    DT_CHECK(dt_sampler_init(&t->train_sampler, t->train.n, t->rank,
                             t->world, t->seed, true, true));
    /* async: rank 0 evaluates the whole test set alone. */
    DT_CHECK(dt_sampler_init(&t->test_sampler, t->test.n,
                             t->async ? 0 : t->rank, t->async ? 1 : t->world,
                             t->seed, false, false));
    DT_CHECK(dt_sampler_set_epoch(&t->test_sampler, 0));
    /* Training batches: the loader threads' own sampler, the same order. */
    dt_pipeline_opts_t po = {.batch = t->batch, .rank = t->rank,
                             .world = t->world, .seed = t->seed,
                             .end_epoch = t->epochs,
                             .weights = t->work_load};
    /* Unequal shares: the ring's slots hold the largest share a rank can
     * get (not the whole global batch: 16 ranks held 16 batches a slot). */
    if (t->work_load || t->work_load_auto)
        DT_CHECK(largest_share(t, &po.max_batch));
    DT_CHECK(dt_pipeline_opts_from_config(cfg, &po));
    DT_CHECK(dt_augment_from_config(cfg, &t->train, t->seed, &po.aug));
    DT_CHECK(dt_pipeline_new(&t->train, &po, &t->pipe));
    if (po.max_batch > t->batch && t->rank == 0)
        dt_debug("work_load: the loaders' batch slots hold up to %zu "
                 "samples (the largest share a rank can get)", po.max_batch);
    t->x = malloc(t->batch * t->train.sample_len * sizeof *t->x);
    t->y = malloc(t->batch * sizeof *t->y);
    if (!t->x || !t->y)
        return DT_ERR_NOMEM;
    dt_lr_schedule_set_steps(&t->lr,
                             (double)dt_trainer_steps_per_epoch(t));
    if (t->rank == 0) {
        char lr[512];
        dt_info("data: %zu training and %zu test samples (%dx%dx%d, %d "
                "classes); %zu per rank per epoch", t->train.n, t->test.n,
                t->train.channels, t->train.height, t->train.width,
                t->train.nclasses, t->train_sampler.count);
        char *classes = dt_dataset_class_list(&t->train, &t->test);
        if (classes) /* a folder: which label is which class folder */
            dt_info("data: %s", classes);
        free(classes);
        if (t->work_load) {
            char w[4096];
            size_t *share = malloc((size_t)t->world * sizeof *share);
            if (!share)
                return DT_ERR_NOMEM;
            dt_split_shares(t->batch * (size_t)t->world, t->work_load,
                            t->world, share);
            dt_work_load_format(t->work_load, t->world, w, sizeof w);
            char sh[4096];
            size_t at = 0;
            sh[0] = '\0';
            for (int r = 0; r < t->world && at < sizeof sh; r++)
                at += (size_t)snprintf(sh + at, sizeof sh - at, "%s%zu",
                                       r ? "," : "", share[r]);
            free(share);
            dt_info("work_load %s: each global batch of %zu split %s (the "
                    "gradients weighted by share)", w,
                    t->batch * (size_t)t->world, sh);
        } else if (t->work_load_auto && t->world > 1) {
            dt_info("work_load = auto: equal shares in the first epoch, then "
                    "rebalanced every epoch from the measured step times");
        }
        if (po.aug.crop_pad > 0 || po.aug.hflip)
            dt_info("augmentation of the training images: random crop with "
                    "%d px padding %s, horizontal flip %s", po.aug.crop_pad,
                    po.aug.crop_pad ? "on" : "off",
                    po.aug.hflip ? "on" : "off");
        dt_debug("input pipeline: %d loader thread%s, %d batch%s ahead",
                 po.threads, po.threads == 1 ? "" : "s", po.prefetch,
                 po.prefetch == 1 ? "" : "es");
        dt_lr_schedule_describe(&t->lr, lr, sizeof lr);
        dt_debug("%s", lr);
        /* dtctl said the rest; warmup_steps' length needs the data */
        const char *key = t->lr.warmup_steps > 0 &&
                                  t->lr.start < t->lr.target
                              ? dt_lr_schedule_warmup_note(&t->lr, lr,
                                                           sizeof lr)
                              : NULL;
        if (key)
            dt_warn("%s: %s", origin(cfg, "train", key), lr);
        if (dt_grad_clip_enabled(&t->clip))
            dt_debug("gradients clipped after the allreduce: each value to "
                     "%g, the global norm to %g (0: off)", t->clip.max_value,
                     t->clip.max_norm);
    }
    return DT_OK;
}

dt_status_t dt_trainer_broadcast_host(void *buf, size_t bytes)
{
    /* Broadcast copies bits: any 4-byte type carries bytes; a tail of 1-3
     * bytes travels padded in one more word. */
    size_t words = bytes / 4, rest = bytes % 4;
    if (words)
        DT_CHECK(dt_broadcast(buf, words, DT_INT32, 0));
    if (rest) {
        unsigned char tail[4] = {0};
        memcpy(tail, (unsigned char *)buf + 4 * words, rest);
        DT_CHECK(dt_broadcast(tail, 1, DT_INT32, 0));
        memcpy((unsigned char *)buf + 4 * words, tail, rest);
    }
    return DT_OK;
}

dt_status_t dt_trainer_broadcast(dt_trainer_t *t, void *dev_ptr,
                                 size_t bytes)
{
    /* async: workers share parameters through the servers, never by a
     * collective (the servers do not take part in collectives). */
    if (t->world <= 1 || t->async || bytes == 0)
        return DT_OK;
    if (t->dev->mem == DT_MEM_HOST)
        return dt_trainer_broadcast_host(dev_ptr, bytes);
    void *host = NULL;
    DT_CHECK(dt_device_host_alloc(t->dev, bytes, &host));
    dt_status_t st = dt_device_copy(t->dev, host, DT_MEM_HOST, dev_ptr,
                                    t->dev->mem, bytes);
    if (st == DT_OK)
        st = dt_trainer_broadcast_host(host, bytes);
    if (st == DT_OK)
        st = dt_device_copy(t->dev, dev_ptr, t->dev->mem, host, DT_MEM_HOST,
                            bytes);
    dt_device_host_free(t->dev, host);
    return st;
}

/* On a GPU: the training batches (the pipeline's buffers) and the
 * evaluation batch in pinned host memory, so every step's input copy is a
 * DMA, not a copy out of pageable memory. */
static dt_status_t pin_batches(dt_trainer_t *t)
{
    if (t->dev->mem == DT_MEM_HOST)
        return DT_OK;
    DT_CHECK(dt_pipeline_pin(t->pipe, t->dev));
    float *x;
    int *y;
    DT_CHECK(dt_device_host_alloc(t->dev, t->batch * t->train.sample_len *
                                              sizeof *t->x,
                                  (void **)&x));
    if (dt_device_host_alloc(t->dev, t->batch * sizeof *t->y,
                             (void **)&y) != DT_OK) {
        dt_device_host_free(t->dev, x);
        return DT_ERR_NOMEM;
    }
    free(t->x);
    free(t->y);
    t->x = x;
    t->y = y;
    t->xy_pinned = 1;
    return DT_OK;
}

/* The model's and the step's keys that need no data or device: checked
 * by dtctl before any worker starts (dt_train_check_config: the errors
 * name the job file's line) and again by each worker. */
static dt_status_t check_model_keys(const dt_config_t *cfg,
                                    dt_conv_algo_t *conv_algo,
                                    dt_layout_t *layout, long long *threads,
                                    double *smoothing)
{
    const char *device = "auto", *conv = "auto", *layout_name = "auto";
    DT_CHECK(dt_config_get_string(cfg, "train", "device", &device));
    if (strcmp(device, "auto") && strcmp(device, "cpu") &&
        strcmp(device, "cuda")) {
        dt_error("%s: [train] device = '%s': use auto, cpu or cuda",
                 origin(cfg, "train", "device"), device);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_int(cfg, "train", "threads", threads));
    if (*threads < 1) {
        dt_error("%s: [train] threads = %lld: must be at least 1",
                 origin(cfg, "train", "threads"), *threads);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_string(cfg, "model", "conv_algo", &conv));
    if (dt_conv_algo_parse(conv, conv_algo) != DT_OK) {
        dt_error("%s: [model] conv_algo = '%s': use auto, im2col, winograd "
                 "or winograd4",
                 origin(cfg, "model", "conv_algo"), conv);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_string(cfg, "model", "layout", &layout_name));
    if (dt_layout_parse(layout_name, layout) != DT_OK) {
        dt_error("%s: [model] layout = '%s': use auto, nchw or nhwc",
                 origin(cfg, "model", "layout"), layout_name);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_double(cfg, "train", "label_smoothing",
                                  smoothing));
    if (!(*smoothing >= 0.0 && *smoothing < 1.0)) {
        dt_error("%s: [train] label_smoothing = %g must be in [0, 1)",
                 origin(cfg, "train", "label_smoothing"), *smoothing);
        return DT_ERR_CONFIG;
    }
    const char *prec = dt_config_get(cfg, "train", "precision");
    if (!strcmp(device, "cpu") && prec && strcasecmp(prec, "fp32")) {
        dt_error("%s: [train] precision = %s is tensor-core math on a GPU "
                 "([train] device = cuda); the CPU computes in fp32: set "
                 "precision = fp32", origin(cfg, "train", "precision"), prec);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* The device first, before setup_data starts the loader threads: a cpu
 * device loads OpenBLAS, setting OPENBLAS_NUM_THREADS around its dlopen
 * (nn/blas_load.c), which wants no other thread reading the environment. */
static dt_status_t setup_device(const dt_config_t *cfg, dt_trainer_t *t)
{
    const char *device = "auto";
    long long threads = 1;
    dt_conv_algo_t conv_algo;
    dt_layout_t layout;
    double smoothing = 0.0;
    DT_CHECK(check_model_keys(cfg, &conv_algo, &layout, &threads,
                              &smoothing));
    DT_CHECK(dt_config_get_string(cfg, "train", "device", &device));
    return dt_device_open(device, t->local_rank, (int)threads, &t->dev);
}

/* A training set so small that each rank's epoch is one sample (3
 * samples over 7 workers: dtctl judged batch_size, not this): every batch
 * gives a batchnorm on a flat input one value per channel, normalized to
 * 0 whatever it was, so the loss stays at log(classes) and nothing
 * learns. PyTorch raises "Expected more than 1 value per channel". */
static dt_status_t check_bn_shard(const dt_config_t *cfg,
                                  const dt_trainer_t *t)
{
    bool sync_bn = false;
    int layer = 0, plane = dt_model_batchnorm_plane(t->model, &layer);
    size_t per_rank = t->train_sampler.count;
    DT_CHECK(dt_config_get_bool(cfg, "model", "sync_bn", &sync_bn));
    size_t values = (size_t)plane * per_rank *
                    (sync_bn ? (size_t)t->world : 1);
    if (!plane || values >= 2 || t->work_load || t->work_load_auto)
        return DT_OK;
    dt_error("rank %d: %zu training sample%s over %d worker%s give each "
             "%zu sample an epoch, so layer %d '%s' sees 1 value per "
             "channel in every batch, and normalizing one value leaves "
             "nothing to learn: train on at least %d samples ([data] "
             "train_samples)%s", t->rank, t->train.n,
             t->train.n == 1 ? "" : "s", t->world,
             t->world == 1 ? "" : "s", per_rank, layer,
             t->model->layers[layer].desc, 2 * t->world,
             t->world > 1 ? ", run fewer workers, or set [model] sync_bn = "
                            "yes"
                          : "");
    return DT_ERR_CONFIG;
}

static dt_status_t setup_model(const dt_config_t *cfg, dt_trainer_t *t)
{
    const char *layers = NULL;
    long long threads = 1;
    dt_conv_algo_t conv_algo;
    dt_layout_t layout;
    double smoothing = 0.0;
    /* checked once already by setup_device: only the values here */
    DT_CHECK(check_model_keys(cfg, &conv_algo, &layout, &threads,
                              &smoothing));
    if (dt_config_get_string(cfg, "model", "layers", &layers) != DT_OK ||
        !*layers) {
        dt_error("[model] layers is not set: describe the network in the "
                 "job file, e.g. layers = linear(256) relu linear(10)");
        return DT_ERR_CONFIG;
    }
    DT_CHECK(setup_precision(cfg, t));
    DT_CHECK(dt_model_parse(layers, origin(cfg, "model", "layers"),
                            t->train.channels, t->train.height,
                            t->train.width, t->train.nclasses, &t->model,
                            NULL));
    DT_CHECK(dt_train_check_model(cfg, t->model, t->world));
    DT_CHECK(check_bn_shard(cfg, t));
    DT_CHECK(dt_model_set_conv_algo(t->model, conv_algo));
    DT_CHECK(dt_model_set_layout(t->model, layout));
    DT_CHECK(setup_activations(cfg, t));
    if (dt_model_set_label_smoothing(t->model, (float)smoothing) != DT_OK)
        return DT_ERR_CONFIG;
    DT_CHECK(dt_trainer_check_memory(cfg, t));
    DT_CHECK(dt_model_init(t->model, t->dev, t->seed));
    dt_trainer_memory_test_allocated(t);
    /* Dropout: each rank its own stream, reproducible from the seed. */
    dt_model_set_rng(t->model, t->seed + 0x9e3779b9ull * (uint64_t)t->rank,
                     0);
    DT_CHECK(dt_model_params(t->model, &t->params, &t->grads, &t->nparams));
    if (t->rank == 0) {
        dt_info("device: %s", t->dev->name);
        dt_model_log_summary(t->model);
    }
    /* Everyone starts from rank 0's parameters. */
    return dt_trainer_broadcast(t, t->params, t->nparams * sizeof(float));
}

/* [train] cuda_graphs: the mode as written, refused when misspelt. */
static dt_status_t read_cuda_graphs(const dt_config_t *cfg,
                                    dt_cuda_graphs_t *mode)
{
    const char *name = "auto";
    DT_CHECK(dt_config_get_string(cfg, "train", "cuda_graphs", &name));
    if (dt_cuda_graphs_parse(name, mode) != DT_OK) {
        dt_error("%s: [train] cuda_graphs = '%s': use auto, on or off",
                 origin(cfg, "train", "cuda_graphs"), name);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* cuda_graphs = on with device = cpu: nothing to capture, refused (by
 * dtctl before launch, with the key's line; it was the workers', naming
 * their DT_TRAIN_CUDA_GRAPHS). */
static dt_status_t check_cuda_graphs_device(const dt_config_t *cfg,
                                            dt_cuda_graphs_t mode)
{
    const char *device = dt_config_get(cfg, "train", "device");
    if (mode != DT_CUDA_GRAPHS_ON || !device || strcmp(device, "cpu") != 0)
        return DT_OK;
    dt_error("%s: [train] cuda_graphs = on captures a GPU's step; [train] "
             "device = cpu has none: set cuda_graphs = auto or off",
             origin(cfg, "train", "cuda_graphs"));
    return DT_ERR_CONFIG;
}

/* [train] cuda_graphs on the model (after sync_bn, which rules graphs
 * out). auto times whole steps, the gradient sync included: with more
 * than one rank a captured step hands its buckets to the sync after its
 * whole backward, not under it, and graphs are kept only where they win
 * all the same. */
static dt_status_t setup_cuda_graphs(const dt_config_t *cfg, dt_trainer_t *t)
{
    dt_cuda_graphs_t mode;
    DT_CHECK(read_cuda_graphs(cfg, &mode));
    if (t->dev->kind != DT_DEVICE_CUDA) {
        DT_CHECK(check_cuda_graphs_device(cfg, mode));
        if (mode == DT_CUDA_GRAPHS_ON && t->rank == 0)
            dt_warn("[train] cuda_graphs = on: no GPU here (device = auto), "
                    "nothing to capture");
        return DT_OK;
    }
    DT_CHECK(dt_model_set_cuda_graphs(t->model, mode));
    dt_model_graph_external_timing(t->model);
    return DT_OK;
}

/* [model] sync_bn: the batchnorm layers sum their statistics over the
 * ranks through the gradient communication thread (grad_sync.h), which
 * keeps those sums in order with the gradient buckets of backward. */
static dt_status_t setup_sync_bn(const dt_config_t *cfg, dt_trainer_t *t)
{
    bool sync_bn = false;
    DT_CHECK(dt_config_get_bool(cfg, "model", "sync_bn", &sync_bn));
    if (!sync_bn)
        return DT_OK;
    if (dt_model_nbuffers(t->model) == 0) {
        if (t->rank == 0)
            dt_info("%s: [model] sync_bn = yes does nothing: the model has "
                    "no batchnorm", origin(cfg, "model", "sync_bn"));
        return DT_OK;
    }
    /* with work_load: refused by dt_train_check_model (check_sync_bn) */
    if (t->world > 1 && !t->async)
        dt_model_set_sync_bn(t->model, dt_grad_sync_sum, t->sync);
    if (t->rank == 0)
        dt_info("sync_bn: batchnorm statistics over the global batch of %d "
                "worker%s", t->world, t->world == 1 ? "" : "s");
    return DT_OK;
}

/* After set_tensors: which tensors are biases and batchnorm's, so that
 * lars and lamb can leave them out of the trust ratio and weight decay. */
static dt_status_t opt_tensor_kinds(const dt_plugin_t *plugin,
                                    const dt_optimizer_ops_t *ops,
                                    void *state, const dt_model_t *m,
                                    const char *name)
{
    if (!DT_OPS_HAS(ops, dt_optimizer_ops_t, set_tensor_kinds))
        return DT_OK;
    unsigned char *kinds = NULL;
    size_t n = 0;
    dt_status_t st = dt_model_param_kinds(m, &kinds, &n);
    if (st == DT_OK)
        st = dt_opt_set_tensor_kinds(plugin, ops, state, kinds, n);
    free(kinds);
    if (st != DT_OK)
        dt_error("optimizer '%s' refused the kinds of the model's %zu "
                 "parameter tensors (%s)", name, n, dt_status_str(st));
    return st;
}

dt_status_t dt_trainer_opt_tensors(const dt_plugin_t *plugin,
                                   const dt_optimizer_ops_t *ops,
                                   void *state, const dt_model_t *m,
                                   const char *name)
{
    /* Layer-wise optimizers (lars, lamb) step each tensor on its own. */
    if (!DT_OPS_HAS(ops, dt_optimizer_ops_t, set_tensors))
        return DT_OK;
    size_t *off = NULL, n = 0;
    dt_status_t st = dt_model_param_tensors(m, &off, &n);
    if (st == DT_OK && n > 0)
        st = dt_opt_set_tensors(plugin, ops, state, off, n);
    free(off);
    if (st != DT_OK) {
        dt_error("optimizer '%s' refused the model's %zu parameter "
                 "tensors (%s)", name, n, dt_status_str(st));
        return st;
    }
    return n > 0 ? opt_tensor_kinds(plugin, ops, state, m, name) : DT_OK;
}

static dt_status_t setup_optimizer(dt_config_t *cfg, dt_trainer_t *t)
{
    const char *name = "sgd";
    char section[160];
    DT_CHECK(dt_config_get_string(cfg, "train", "optimizer", &name));
    DT_CHECK(dt_plugin_load(DT_KIND_OPTIMIZER, name, &t->opt_plugin, NULL));
    /* The loader refused an optimizer without its six required ops. */
    const dt_optimizer_ops_t *ops = t->opt_plugin->ops;
    t->opt = ops;
    /* From here on the plugin's own name: the schema and the environment
     * loaded below replace the configuration's strings, so the value
     * `name` points into is freed (and its memory reused for other
     * names, such as DT_TRAIN_DEVICE). */
    name = t->opt_plugin->name;
    /* Its [optimizer.NAME] keys reach the workers as DT_OPTIMIZER_NAME_*. */
    snprintf(section, sizeof section, "optimizer.%s", name);
    if (t->opt_plugin->keys) {
        DT_CHECK(dt_config_add_schema(cfg, section, t->opt_plugin->keys));
        DT_CHECK(dt_config_load_env(cfg, environ));
    }
    dt_plugin_call_t was = dt_plugin_call_begin(t->opt_plugin, "create");
    dt_status_t st = ops->create(cfg, t->nparams, t->dev->mem, &t->opt_state);
    dt_plugin_call_end(was);
    if (st != DT_OK) {
        t->opt_state = NULL;
        dt_error("optimizer '%s' could not be created for %zu parameters "
                 "(%s)", name, t->nparams, dt_status_str(st));
        return st;
    }
    return dt_trainer_opt_tensors(t->opt_plugin, ops, t->opt_state, t->model,
                                  name);
}

static dt_status_t setup_outputs(const dt_config_t *cfg, dt_trainer_t *t)
{
    long long every = 100;
    DT_CHECK(dt_config_get_int(cfg, "train", "log_every", &every));
    if (t->rank != 0)
        return DT_OK;
    dt_progress_init(&t->progress, stdout, t->epochs);
    /* 0: no step lines; below 0 dtctl refuses (dt-train alone: none) */
    t->progress.every = every > 0 ? (uint64_t)every : 0;
    const char *metrics = dt_config_get(cfg, "train", "metrics");
    if (metrics && *metrics)
        DT_CHECK(dt_jsonl_open(metrics, &t->jsonl));
    const char *log_dir = dt_config_get(cfg, "train", "log_dir");
    if (log_dir && *log_dir)
        DT_CHECK(dt_tb_open(log_dir, &t->tb));
    return DT_OK;
}

dt_status_t dt_trainer_setup(dt_trainer_t *t, dt_config_t *cfg)
{
    memset(t, 0, sizeof *t);
    t->ckpt_lock = -1;
    t->last_loss = t->first_loss = NAN; /* no step yet */
    t->cfg = cfg;
    /* Without dt_init a process started as one of N workers would train
     * alone as rank 0 of 1: N jobs writing rank 0's checkpoints and
     * metrics over each other. One process on its own may. */
    const char *ws = getenv("DT_WORLD_SIZE");
    if (dt_rank() < 0 && ws && atoi(ws) > 1) {
        dt_error("dt_train_run before dt_init: this process is one of %d "
                 "workers (DT_WORLD_SIZE), and would train alone as rank 0 "
                 "of 1; call dt_init() first (and dt_finalize() after)",
                 atoi(ws));
        return DT_ERR_INVALID;
    }
    t->rank = dt_rank() < 0 ? 0 : dt_rank();
    t->world = dt_size() < 1 ? 1 : dt_size();
    t->local_rank = dt_local_rank() < 0 ? 0 : dt_local_rank();
    DT_CHECK(read_mode(cfg, t));
    if (t->async) {
        t->nservers = dt_train_async_servers();
        if (t->nservers < 1 || t->nservers >= t->world) {
            dt_error("[train] mode = async: this job of %d rank%s has no "
                     "parameter servers (DT_NUM_SERVERS=%d); start it with "
                     "dtctl run, which starts them", t->world,
                     t->world == 1 ? "" : "s", t->nservers);
            return DT_ERR_CONFIG;
        }
        t->world -= t->nservers; /* the workers */
    }
    DT_CHECK(read_settings(cfg, t));
    /* Test hook (tests/, bench/work-load-auto.sh): one rank computes
     * DT_TEST_SLOW_FACTOR times slower (it sleeps after each step's
     * forward and backward in proportion to their time). */
    const char *sr = getenv("DT_TEST_SLOW_RANK");
    const char *sf = getenv("DT_TEST_SLOW_FACTOR");
    t->slow_rank = sr && *sr ? atoi(sr) : -1;
    t->slow_factor = sf && *sf ? atof(sf) : 2.0;
    if (t->slow_rank == t->rank && t->slow_factor > 1.0)
        dt_warn("rank %d: DT_TEST_SLOW_RANK: computing %.1fx slower (a "
                "test hook)", t->rank, t->slow_factor);
    /* Test hook (tests/train_scaling.sh): DT_TEST_NAN_AT=25,35,33 makes
     * rank 0's loss NaN at job step 25, then at the next step 35 reached
     * (after any rollback), then 33: divergences where a test wants them. */
    const char *na = getenv("DT_TEST_NAN_AT");
    for (char *e; na && *na && t->nan_n < 8; na = *e ? e + 1 : e) {
        unsigned long long v = strtoull(na, &e, 10);
        if (e == na || (*e && *e != ','))
            break;
        t->nan_at[t->nan_n++] = v;
    }
    if (t->nan_n && t->rank == 0)
        dt_warn("DT_TEST_NAN_AT: rank 0's loss is NaN at %d chosen steps (a "
                "test hook)", t->nan_n);
    /* Test hooks (tests/train_edges.sh): DT_TEST_PREEMPT_AT=S, rank 0
     * raises SIGTERM before step S's vote; DT_TEST_INF_PARAM_AT=S, step S's
     * update overflows a parameter (its loss was finite). */
    const char *pa = getenv("DT_TEST_PREEMPT_AT");
    const char *ia = getenv("DT_TEST_INF_PARAM_AT");
    t->preempt_at = pa && *pa ? strtoull(pa, NULL, 10) : 0;
    t->inf_param_at = ia && *ia ? strtoull(ia, NULL, 10) : 0;
    if ((t->preempt_at || t->inf_param_at) && t->rank == 0)
        dt_warn("DT_TEST_PREEMPT_AT/DT_TEST_INF_PARAM_AT: a preemption or "
                "an overflowing update at a chosen step (a test hook)");
    DT_CHECK(setup_device(cfg, t));
    DT_CHECK(setup_data(cfg, t));
    DT_CHECK(setup_model(cfg, t));
    DT_CHECK(pin_batches(t));
    if (t->async && t->dev->mem != DT_MEM_HOST) {
        dt_error("[train] mode = async runs on the CPU for now ([train] "
                 "device = cpu): the servers' shards travel from host "
                 "memory");
        return DT_ERR_UNSUPPORTED;
    }
    DT_CHECK(setup_optimizer(cfg, t));
    /* async: nothing is averaged (grad_sync of one worker does nothing);
     * the gradients go to the servers after backward. */
    DT_CHECK(dt_grad_sync_new(t->grads, t->nparams, t->dev, t->bucket_bytes,
                              t->async ? 1 : t->world, &t->sync));
    if (t->async)
        DT_CHECK(dt_ps_client_new(t->world, t->nservers, t->nparams,
                                  &t->ps));
    DT_CHECK(setup_sync_bn(cfg, t));
    DT_CHECK(setup_cuda_graphs(cfg, t));
    if (t->rank == 0) {
        const char *lt = dt_config_get(cfg, "train", "layer_times");
        DT_CHECK(dt_layer_timer_new(lt, t->dev, t->batch, &t->layer_timer));
    }
    return setup_outputs(cfg, t);
}

int dt_train_async_servers(void)
{
    const char *s = getenv("DT_NUM_SERVERS");
    return s && *s ? atoi(s) : 0;
}

uint64_t dt_trainer_epoch_steps(const dt_trainer_t *t)
{
    if (t->epoch_start == 0)
        return dt_trainer_steps_per_epoch(t);
    return dt_pipeline_steps_from(t->pipe, (size_t)t->epoch_start);
}

uint64_t dt_trainer_steps_per_epoch(const dt_trainer_t *t)
{
    return dt_sampler_steps_from(t->train.n, t->world, t->batch, 0);
}

void dt_trainer_teardown(dt_trainer_t *t)
{
    dt_pipeline_free(t->pipe); /* first: its threads read t->train */
    dt_grad_sync_free(t->sync);
    dt_layer_timer_free(t->layer_timer);
    dt_ps_client_free(t->ps);
    if (t->clip_host)
        dt_device_host_free(t->dev, t->clip_host);
    if (t->opt_state)
        dt_opt_destroy(t->opt_plugin, t->opt, t->opt_state);
    dt_model_free(t->model);
    if (t->xy_pinned) {
        dt_device_host_free(t->dev, t->x);
        dt_device_host_free(t->dev, t->y);
        t->x = NULL;
        t->y = NULL;
    }
    dt_device_close(t->dev);
    free(t->x);
    free(t->y);
    dt_sampler_free(&t->train_sampler);
    dt_sampler_free(&t->test_sampler);
    dt_dataset_free(&t->train);
    dt_dataset_free(&t->test);
    dt_jsonl_close(t->jsonl);
    dt_tb_close(t->tb);
    dt_ckpt_unlock(&t->ckpt_lock);
    free(t->ckpt_dir);
    free(t->work_load);
    memset(t, 0, sizeof *t);
}
