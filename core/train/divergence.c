/* divergence.c — the per-step vote on finiteness and on_divergence. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "divergence.h"

dt_status_t dt_on_divergence_from_config(const dt_config_t *cfg,
                                         int has_ckpt_dir,
                                         dt_on_divergence_t *out)
{
    const char *text = "stop", *where = "default";
    DT_CHECK(dt_config_get_string(cfg, "train", "on_divergence", &text));
    dt_config_origin(cfg, "train", "on_divergence", NULL, &where);
    if (strcmp(text, "stop") == 0)
        *out = DT_DIVERGE_STOP;
    else if (strcmp(text, "halve_lr") == 0)
        *out = DT_DIVERGE_HALVE_LR;
    else {
        dt_error("%s: [train] on_divergence '%s' is not known: use stop or "
                 "halve_lr", where, text);
        return DT_ERR_CONFIG;
    }
    if (*out == DT_DIVERGE_HALVE_LR && !has_ckpt_dir) {
        dt_error("%s: [train] on_divergence = halve_lr restarts from the "
                 "last checkpoint: set [train] checkpoint_dir too", where);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t dt_divergence_vote(dt_bad_kind_t kind, double value, int rank,
                               int world, dt_sum_fn sum, void *arg,
                               dt_divergence_t *out)
{
    return dt_divergence_vote_flags(kind, value, rank, world, sum, arg, NULL,
                                    0, out);
}

dt_status_t dt_divergence_vote_flags(dt_bad_kind_t kind, double value,
                                     int rank, int world, dt_sum_fn sum,
                                     void *arg, double *flags, size_t nflags,
                                     dt_divergence_t *out)
{
    memset(out, 0, sizeof *out);
    out->first_rank = -1;
    if (nflags > DT_VOTE_MAX_FLAGS)
        return DT_ERR_INVALID;
    /* One allreduce: [bad, flags...]. */
    double head[1 + DT_VOTE_MAX_FLAGS];
    head[0] = kind != DT_BAD_NONE ? 1.0 : 0.0;
    for (size_t i = 0; i < nflags; i++)
        head[1 + i] = flags[i];
    if (world > 1)
        DT_CHECK(sum(head, 1 + nflags, arg));
    for (size_t i = 0; i < nflags; i++)
        flags[i] = head[1 + i];
    double bad = head[0];
    if (bad == 0.0)
        return DT_OK;
    /* Someone diverged (rare): slot r holds rank r's kind and value. */
    size_t n = 2 * (size_t)(world > 1 ? world : 1);
    double *v = calloc(n, sizeof *v);
    if (!v)
        return DT_ERR_NOMEM;
    if (kind != DT_BAD_NONE) {
        v[2 * rank] = (double)kind;
        v[2 * rank + 1] = value;
    }
    dt_status_t st = world > 1 ? sum(v, n, arg) : DT_OK;
    /* A non-finite loss says more than the gradient norm it led to (the
     * norm of the averaged gradient is the same on every rank): kinds in
     * the order of the enum. */
    for (int pass = 1; st == DT_OK && pass <= DT_BAD_TEST_LOSS && !out->nbad;
         pass++) {
        for (int r = 0; r < (world > 1 ? world : 1); r++) {
            if (v[2 * r] != (double)pass)
                continue;
            if (out->nbad++ == 0) {
                out->first_rank = r;
                out->kind = (dt_bad_kind_t)pass;
                out->value = v[2 * r + 1];
            }
        }
    }
    free(v);
    return st;
}
