/* grad_clip.c — value and global-norm clipping of the averaged gradient. */
#include <math.h>

#include <dt/log.h>
#include "grad_clip.h"

static dt_status_t get_limit(const dt_config_t *cfg, const char *key,
                             double *out)
{
    DT_CHECK(dt_config_get_double(cfg, "train", key, out));
    if (*out < 0) {
        const char *where = "default";
        dt_config_origin(cfg, "train", key, NULL, &where);
        dt_error("%s: [train] %s must be 0 (off) or more, not %g", where, key,
                 *out);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t dt_grad_clip_from_config(const dt_config_t *cfg,
                                     dt_grad_clip_t *out)
{
    out->max_value = out->max_norm = 0.0;
    DT_CHECK(get_limit(cfg, "clip_grad_value", &out->max_value));
    return get_limit(cfg, "clip_grad_norm", &out->max_norm);
}

double dt_grad_norm(const float *g, size_t n)
{
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += (double)g[i + j] * (double)g[i + j];
    for (int j = 0; i < n; i++, j++)
        acc[j] += (double)g[i] * (double)g[i];
    double sum = 0.0;
    for (int j = 0; j < 8; j++)
        sum += acc[j];
    return sqrt(sum);
}

double dt_grad_clip_apply(const dt_grad_clip_t *c, float *g, size_t n)
{
    if (c->max_value > 0) {
        float v = (float)c->max_value;
        for (size_t i = 0; i < n; i++) {
            if (g[i] > v)
                g[i] = v;
            else if (g[i] < -v)
                g[i] = -v;
        }
    }
    double norm = dt_grad_norm(g, n);
    if (c->max_norm > 0 && isfinite(norm) && norm > c->max_norm) {
        float f = (float)(c->max_norm / (norm + 1e-6));
        for (size_t i = 0; i < n; i++)
            g[i] *= f;
    }
    return norm;
}
