/* lr_schedule.c — warmup, scaling and decay of the learning rate. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "lr_schedule.h"

static const char *origin(const dt_config_t *cfg, const char *key)
{
    const char *where = "default";
    dt_config_origin(cfg, "train", key, NULL, &where);
    return where;
}

static dt_status_t get_nonneg(const dt_config_t *cfg, const char *key,
                              double *out, int positive)
{
    DT_CHECK(dt_config_get_double(cfg, "train", key, out));
    if (*out < 0 || (positive && *out == 0)) {
        dt_error("%s: [train] %s must be %s, not %g", origin(cfg, key), key,
                 positive ? "greater than 0" : "0 or more", *out);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

static dt_status_t get_int_min(const dt_config_t *cfg, const char *key,
                               long long min, long long *out)
{
    DT_CHECK(dt_config_get_int(cfg, "train", key, out));
    if (*out < min) {
        dt_error("%s: [train] %s must be %lld or more, not %lld",
                 origin(cfg, key), key, min, *out);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* lr_scaling and its caps: target and factor. */
static dt_status_t read_scaling(const dt_config_t *cfg, int world,
                                dt_lr_schedule_t *out)
{
    const char *scaling = "none";
    DT_CHECK(dt_config_get_string(cfg, "train", "lr_scaling", &scaling));
    if (strcmp(scaling, "linear") == 0)
        out->scaling = DT_LR_SCALE_LINEAR;
    else if (strcmp(scaling, "sqrt") == 0)
        out->scaling = DT_LR_SCALE_SQRT;
    else if (strcmp(scaling, "none") == 0)
        out->scaling = DT_LR_SCALE_NONE;
    else {
        dt_error("%s: [train] lr_scaling '%s' is not known: use linear, "
                 "sqrt or none", origin(cfg, "lr_scaling"), scaling);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(get_nonneg(cfg, "lr_scaling_max_lr", &out->max_lr, 0));
    if (out->max_lr > 0 && out->max_lr < out->base) {
        dt_error("%s: [train] lr_scaling_max_lr %g is below lr %g: it caps "
                 "how far lr_scaling raises lr; set it to lr or more (0: no "
                 "cap)", origin(cfg, "lr_scaling_max_lr"), out->max_lr,
                 out->base);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(get_int_min(cfg, "lr_scaling_max_batch", 0, &out->max_batch));
    out->world = world > 0 ? world : 1;
    out->workers = out->world;
    if (out->max_batch > 0 &&
        (double)out->max_batch < (double)out->world * (double)out->batch) {
        out->workers = (double)out->max_batch / (double)out->batch;
        if (out->workers < 1.0)
            out->workers = 1.0;
        out->capped = DT_LR_CAP_BATCH;
    }
    switch (out->scaling) {
    case DT_LR_SCALE_LINEAR: out->factor = out->workers; break;
    case DT_LR_SCALE_SQRT: out->factor = sqrt(out->workers); break;
    default:
        out->factor = 1.0;
        out->capped = DT_LR_CAP_NONE;
        break;
    }
    out->target = out->base * out->factor;
    if (out->max_lr > 0 && out->target > out->max_lr) {
        out->target = out->max_lr;
        out->factor = out->target / out->base;
        out->capped = DT_LR_CAP_LR;
    }
    return DT_OK;
}

/* warmup_epochs (a number or auto) and warmup_steps. */
static dt_status_t read_warmup(const dt_config_t *cfg, dt_lr_schedule_t *out)
{
    const char *text = "auto";
    DT_CHECK(dt_config_get_string(cfg, "train", "warmup_epochs", &text));
    DT_CHECK(get_int_min(cfg, "warmup_steps", 0, &out->warmup_steps));
    if (strcmp(text, "auto") == 0) {
        out->warmup_auto = 1;
        double w = out->factor > 1.0 ? log2(out->factor) : 0.0;
        out->warmup_epochs = w > out->epochs / 4 ? out->epochs / 4 : w;
    } else {
        double w;
        if (dt_parse_double(text, &w) != DT_OK || w < 0) {
            dt_error("%s: [train] warmup_epochs = '%s': write a number of "
                     "epochs (0 or more, e.g. 2 or 0.5) or auto",
                     origin(cfg, "warmup_epochs"), text);
            return DT_ERR_CONFIG;
        }
        out->warmup_epochs = w;
    }
    if (out->warmup_steps > 0) {
        out->warmup_auto = 0;
        out->warmup_epochs = 0.0; /* until the steps per epoch are known */
    }
    return DT_OK;
}

dt_status_t dt_lr_schedule_from_config(const dt_config_t *cfg, int world,
                                       dt_lr_schedule_t *out)
{
    const char *kind = "constant";
    long long epochs = 1, step_epochs = 10;
    memset(out, 0, sizeof *out);
    out->scale = 1.0;
    DT_CHECK(get_nonneg(cfg, "lr", &out->base, 1));
    DT_CHECK(get_int_min(cfg, "batch_size", 1, &out->batch));
    DT_CHECK(get_int_min(cfg, "epochs", 1, &epochs));
    DT_CHECK(get_int_min(cfg, "lr_step_epochs", 1, &step_epochs));
    out->epochs = (double)epochs;
    out->step_epochs = (double)step_epochs;
    DT_CHECK(read_scaling(cfg, world, out));
    DT_CHECK(read_warmup(cfg, out));
    out->start = out->target / out->world;
    DT_CHECK(get_nonneg(cfg, "lr_gamma", &out->gamma, 1));
    DT_CHECK(get_nonneg(cfg, "lr_min", &out->lr_min, 0));
    DT_CHECK(dt_config_get_string(cfg, "train", "schedule", &kind));
    if (strcmp(kind, "constant") == 0)
        out->kind = DT_LR_CONSTANT;
    else if (strcmp(kind, "step") == 0)
        out->kind = DT_LR_STEP;
    else if (strcmp(kind, "cosine") == 0)
        out->kind = DT_LR_COSINE;
    else {
        dt_error("%s: [train] schedule '%s' is not known: use constant, "
                 "step or cosine", origin(cfg, "schedule"), kind);
        return DT_ERR_CONFIG;
    }
    if (out->kind == DT_LR_COSINE && out->lr_min > out->target) {
        dt_error("%s: [train] lr_min = %g is above the lr it decays from "
                 "(%g, after lr_scaling): the cosine would climb to it",
                 origin(cfg, "lr_min"), out->lr_min, out->target);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

void dt_lr_schedule_set_steps(dt_lr_schedule_t *s, double steps_per_epoch)
{
    s->steps_per_epoch = steps_per_epoch;
    if (s->warmup_steps > 0 && steps_per_epoch > 0)
        s->warmup_epochs = (double)s->warmup_steps / steps_per_epoch;
}

static double lr_unscaled(const dt_lr_schedule_t *s, double e)
{
    if (e < s->warmup_epochs)
        return s->start + (s->target - s->start) * (e / s->warmup_epochs);
    switch (s->kind) {
    case DT_LR_STEP:
        return s->target * pow(s->gamma, floor(e / s->step_epochs));
    case DT_LR_COSINE: {
        double span = s->epochs - s->warmup_epochs;
        double p = span > 0 ? (e - s->warmup_epochs) / span : 1.0;
        if (p > 1.0)
            p = 1.0;
        return s->lr_min +
               (s->target - s->lr_min) * 0.5 * (1.0 + cos(M_PI * p));
    }
    default:
        return s->target;
    }
}

double dt_lr_at(const dt_lr_schedule_t *s, double e)
{
    return lr_unscaled(s, e) * s->scale;
}

double dt_lr_target_for(const dt_lr_schedule_t *s, int world,
                        long long batch)
{
    double workers = world > 0 ? world : 1;
    if (batch < 1)
        batch = 1;
    if (s->max_batch > 0 &&
        (double)s->max_batch < workers * (double)batch) {
        workers = (double)s->max_batch / (double)batch;
        if (workers < 1.0)
            workers = 1.0;
    }
    double factor = s->scaling == DT_LR_SCALE_LINEAR ? workers
                    : s->scaling == DT_LR_SCALE_SQRT ? sqrt(workers)
                                                     : 1.0;
    double target = s->base * factor;
    if (s->max_lr > 0 && target > s->max_lr)
        target = s->max_lr;
    return target * s->scale;
}

const char *dt_lr_schedule_warmup_note(const dt_lr_schedule_t *s,
                                       char *buf, size_t len)
{
    int asked = s->warmup_steps > 0 ||
                (!s->warmup_auto && s->warmup_epochs > 0);
    const char *key = s->warmup_steps > 0 ? "warmup_steps" : "warmup_epochs";
    char value[64];
    if (!asked || len == 0)
        return NULL;
    if (s->warmup_steps > 0)
        snprintf(value, sizeof value, "%lld", s->warmup_steps);
    else
        snprintf(value, sizeof value, "%g", s->warmup_epochs);
    if (s->start >= s->target) {
        /* world 1: Horovod's warmup starts at the lr it ends at */
        snprintf(buf, len, "[train] %s = %s does nothing here: a warmup "
                 "climbs from the scaled lr / N workers to the scaled lr "
                 "(Horovod's rule, warming up what lr_scaling adds, not "
                 "from 0), and %d worker%s at lr %g start%s where %s end%s",
                 key, value, s->world, s->world == 1 ? "" : "s", s->target,
                 s->world == 1 ? "s" : "", s->world == 1 ? "it" : "they",
                 s->world == 1 ? "s" : "");
        return key;
    }
    if (s->warmup_steps > 0 && s->steps_per_epoch <= 0)
        return NULL; /* its length in epochs is not known yet */
    if (s->warmup_epochs <= s->epochs)
        return NULL;
    /* longer than the training: the lr never gets where it climbs to */
    double reached = s->start + (s->target - s->start) *
                                    (s->epochs / s->warmup_epochs);
    if (s->warmup_steps > 0) /* its length in epochs beside the steps */
        snprintf(value, sizeof value, "%lld (%.3g epochs)", s->warmup_steps,
                 s->warmup_epochs);
    snprintf(buf, len, "[train] %s = %s is longer than the training (%g "
             "epoch%s): the lr climbs from %g to %.4g and never reaches "
             "%g%s", key, value, s->epochs, s->epochs == 1.0 ? "" : "s",
             s->start, reached, s->target,
             s->kind == DT_LR_COSINE ? ", and the cosine schedule never starts"
             : s->kind == DT_LR_STEP ? ", and the step schedule never starts"
                                     : "");
    return key;
}

static const char *scaling_name(dt_lr_scaling_t k);

const char *dt_lr_scaling_name(const dt_lr_schedule_t *s)
{
    return scaling_name(s->scaling);
}

static const char *scaling_name(dt_lr_scaling_t k)
{
    return k == DT_LR_SCALE_LINEAR ? "linear"
           : k == DT_LR_SCALE_SQRT ? "sqrt" : "none";
}

void dt_lr_schedule_describe(const dt_lr_schedule_t *s, char *buf,
                             size_t len)
{
    size_t at = 0;
#define ADD(...)                                                             \
    do {                                                                     \
        if (at < len)                                                        \
            at += (size_t)snprintf(buf + at, len - at, __VA_ARGS__);         \
    } while (0)
    const char *w = s->world == 1 ? "worker" : "workers";
    int sq = s->scaling == DT_LR_SCALE_SQRT;
    char k[64];
    if (s->capped == DT_LR_CAP_BATCH)
        snprintf(k, sizeof k, "%g", s->workers);
    else
        snprintf(k, sizeof k, "%d %s", s->world, w);
    ADD("global batch %lld (%d x %lld): ", (long long)s->world * s->batch,
        s->world, s->batch);
    if (s->scaling == DT_LR_SCALE_NONE)
        ADD("lr %g, not scaled (lr_scaling = none)", s->base);
    else
        ADD("lr %g x %s%s%s (%s) = %g", s->base, sq ? "sqrt(" : "", k,
            sq ? ")" : "", scaling_name(s->scaling),
            s->base * (sq ? sqrt(s->workers) : s->workers));
    if (s->capped == DT_LR_CAP_BATCH)
        ADD(" (%d workers counted as %g: lr_scaling_max_batch %lld / "
            "batch_size %lld)", s->world, s->workers, s->max_batch,
            s->batch);
    if (s->capped == DT_LR_CAP_LR)
        ADD(", capped at lr_scaling_max_lr = %g", s->target);
    if (s->warmup_steps > 0) {
        ADD(", warmup %lld step%s", s->warmup_steps,
            s->warmup_steps == 1 ? "" : "s");
        if (s->steps_per_epoch > 0)
            ADD(" (%.3g epochs)", s->warmup_epochs);
        ADD(" from %g", s->start);
    } else if (s->warmup_epochs > 0) {
        int paren = s->steps_per_epoch > 0 || s->warmup_auto;
        ADD(", warmup %g epoch%s%s", s->warmup_epochs,
            s->warmup_epochs == 1.0 ? "" : "s", paren ? " (" : "");
        if (s->steps_per_epoch > 0)
            ADD("%.0f steps%s", s->warmup_epochs * s->steps_per_epoch,
                s->warmup_auto ? "; " : "");
        if (s->warmup_auto)
            ADD("auto: log2 of x%g%s", s->factor,
                log2(s->factor) > s->epochs / 4 ? ", at most epochs / 4"
                                                : "");
        ADD("%s from %g", paren ? ")" : "", s->start);
    } else {
        ADD(", no warmup");
    }
    switch (s->kind) {
    case DT_LR_STEP:
        ADD(", then x%g every %g epochs", s->gamma, s->step_epochs);
        break;
    case DT_LR_COSINE:
        ADD(", then cosine to %g at epoch %g", s->lr_min, s->epochs);
        break;
    default: ADD(", then constant"); break;
    }
    if (s->scale != 1.0)
        ADD(" (all x%g after divergence)", s->scale);
#undef ADD
}
