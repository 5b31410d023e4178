/* lr_schedule.c — warmup, scaling and decay of the learning rate. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "lr_schedule.h"

dt_status_t dt_config_get_real(const dt_config_t *cfg, const char *section,
                               const char *key, double *out)
{
    const char *text = NULL, *where = "default";
    DT_CHECK(dt_config_get_string(cfg, section, key, &text));
    dt_config_origin(cfg, section, key, NULL, &where);
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    while (end && (*end == ' ' || *end == '\t'))
        end++;
    if (errno || end == text || *end || !isfinite(v)) {
        dt_error("%s: [%s] %s = '%s' is not a number", where, section, key,
                 text);
        return DT_ERR_CONFIG;
    }
    *out = v;
    return DT_OK;
}

static dt_status_t get_nonneg(const dt_config_t *cfg, const char *key,
                              double *out, int positive)
{
    DT_CHECK(dt_config_get_real(cfg, "train", key, out));
    if (*out < 0 || (positive && *out == 0)) {
        const char *where = "default";
        dt_config_origin(cfg, "train", key, NULL, &where);
        dt_error("%s: [train] %s must be %s, not %g", where, key,
                 positive ? "greater than 0" : "0 or more", *out);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t dt_lr_schedule_from_config(const dt_config_t *cfg, int world,
                                       dt_lr_schedule_t *out)
{
    const char *scaling = "none", *kind = "constant", *where = "default";
    double lr;
    long long warm = 0, epochs = 1, step_epochs = 10;
    memset(out, 0, sizeof *out);
    DT_CHECK(get_nonneg(cfg, "lr", &lr, 1));
    DT_CHECK(dt_config_get_string(cfg, "train", "lr_scaling", &scaling));
    if (strcmp(scaling, "linear") == 0)
        out->target = lr * world;
    else if (strcmp(scaling, "none") == 0)
        out->target = lr;
    else {
        dt_config_origin(cfg, "train", "lr_scaling", NULL, &where);
        dt_error("%s: [train] lr_scaling '%s' is not known: use linear or "
                 "none", where, scaling);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_int(cfg, "train", "warmup_epochs", &warm));
    DT_CHECK(dt_config_get_int(cfg, "train", "epochs", &epochs));
    DT_CHECK(dt_config_get_int(cfg, "train", "lr_step_epochs", &step_epochs));
    if (warm < 0 || epochs < 1 || step_epochs < 1) {
        dt_error("[train] warmup_epochs must be >= 0, epochs and "
                 "lr_step_epochs >= 1 (got %lld, %lld, %lld)", warm, epochs,
                 step_epochs);
        return DT_ERR_CONFIG;
    }
    out->warmup_epochs = (double)warm;
    out->epochs = (double)epochs;
    out->step_epochs = (double)step_epochs;
    out->start = out->target / (world > 0 ? world : 1);
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
        dt_config_origin(cfg, "train", "schedule", NULL, &where);
        dt_error("%s: [train] schedule '%s' is not known: use constant, "
                 "step or cosine", where, kind);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

double dt_lr_at(const dt_lr_schedule_t *s, double e)
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
