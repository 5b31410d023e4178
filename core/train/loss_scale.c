/* loss_scale.c — [train] precision and the loss scaler (loss_scale.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <dt/log.h>
#include "cuda/backend.h"
#include "loss_scale.h"

static const char *where(const dt_config_t *cfg, const char *key)
{
    const char *w = "default";
    dt_config_origin(cfg, "train", key, NULL, &w);
    return w;
}

const char *dt_precision_name(int precision)
{
    return precision == DT_PRECISION_BF16   ? "bf16"
           : precision == DT_PRECISION_FP16 ? "fp16"
           : precision == DT_PRECISION_TF32 ? "tf32"
                                            : "fp32";
}

static bool power_of_two(double x)
{
    int e;
    return x > 0 && isfinite(x) && frexp(x, &e) == 0.5;
}

dt_status_t dt_loss_scale_setup(dt_loss_scale_t *ls, const dt_config_t *cfg)
{
    memset(ls, 0, sizeof *ls);
    ls->scale = 1.0;
    const char *p = dt_config_get(cfg, "train", "precision");
    if (!p || strcasecmp(p, "fp32") == 0)
        ls->precision = DT_PRECISION_FP32;
    else if (strcasecmp(p, "bf16") == 0)
        ls->precision = DT_PRECISION_BF16;
    else if (strcasecmp(p, "fp16") == 0)
        ls->precision = DT_PRECISION_FP16;
    else if (strcasecmp(p, "tf32") == 0)
        ls->precision = DT_PRECISION_TF32;
    else {
        dt_error("%s: [train] precision = '%s': use fp32, tf32, bf16 or "
                 "fp16",
                 where(cfg, "precision"), p);
        return DT_ERR_CONFIG;
    }
    const char *s = dt_config_get(cfg, "train", "loss_scale");
    if (!s)
        s = ls->precision == DT_PRECISION_FP16 ? "dynamic" : "none";
    double init = 65536.0;
    if (strcasecmp(s, "none") == 0) {
        return DT_OK;
    } else if (strcasecmp(s, "dynamic") == 0) {
        ls->dynamic = true;
        DT_CHECK(dt_config_get_double(cfg, "train", "loss_scale_init",
                                      &init));
        if (!power_of_two(init)) {
            dt_error("%s: [train] loss_scale_init = %g: must be a power of "
                     "two (e.g. 65536), so that scaling is exact",
                     where(cfg, "loss_scale_init"), init);
            return DT_ERR_CONFIG;
        }
        long long n = 0;
        DT_CHECK(dt_config_get_int(cfg, "train",
                                   "loss_scale_growth_interval", &n));
        if (n < 1) {
            dt_error("%s: [train] loss_scale_growth_interval = %lld: must "
                     "be at least 1", where(cfg,
                                            "loss_scale_growth_interval"),
                     n);
            return DT_ERR_CONFIG;
        }
        ls->interval = (uint64_t)n;
    } else {
        char *end = NULL;
        init = strtod(s, &end);
        if (end == s || *end || !power_of_two(init)) {
            dt_error("%s: [train] loss_scale = '%s': use none, dynamic or a "
                     "power of two (e.g. 1024)", where(cfg, "loss_scale"), s);
            return DT_ERR_CONFIG;
        }
    }
    ls->enabled = true;
    ls->scale = init;
    return DT_OK;
}

bool dt_loss_scale_update(dt_loss_scale_t *ls, bool finite)
{
    if (!ls->enabled)
        return finite;
    if (!finite) {
        ls->skipped++;
        ls->skipped_epoch++;
        ls->good = 0;
        if (ls->dynamic && ls->scale > DT_LOSS_SCALE_MIN)
            ls->scale *= 0.5;
        return false;
    }
    /* Unbounded growth, as PyTorch's GradScaler: the next overflow
     * brings it back. */
    if (ls->dynamic && ++ls->good >= ls->interval) {
        ls->good = 0;
        if (ls->scale < 0x1p127)
            ls->scale *= 2.0;
    }
    return true;
}
