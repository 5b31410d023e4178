/* worker_env.c — rank and size from dtctl's variables, or from the
 * launcher plugin that recognises the scheduler's (see worker_env.h). The
 * core names no scheduler variable: each launcher owns its own through
 * the `identify` op of dt_launcher_ops_t. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/env.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include "plugin/plugin_loader.h"
#include "worker_env.h"

const char *dt_worker_env_get(char *const *envp, const char *name)
{
    return dt_env_value((const char *const *)envp, name);
}

/* A non-negative int from variable name; def when unset (-1: required). */
static dt_status_t get_int(char *const *envp, const char *name, int def,
                           int *out)
{
    const char *v = dt_worker_env_get(envp, name);
    if (!v || !*v) {
        if (def < 0) {
            dt_error("%s is not set (or empty) although DT_RANK is: dtctl "
                     "run sets DT_RANK, DT_WORLD_SIZE, DT_LOCAL_RANK and "
                     "DT_LOCAL_SIZE for each worker",
                     name);
            return DT_ERR_CONFIG;
        }
        *out = def;
        return DT_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < 0 || x > 1 << 24) {
        dt_error("%s='%s' is not a worker number", name, v);
        return DT_ERR_CONFIG;
    }
    *out = (int)x;
    return DT_OK;
}

static int consistent(const dt_worker_env_t *w)
{
    return w->size >= 1 && w->rank >= 0 && w->rank < w->size &&
           w->local_size >= 1 && w->local_rank >= 0 &&
           w->local_rank < w->local_size && w->local_size <= w->size;
}

/* ---- the launchers' identify ------------------------------------------- */

typedef struct ask {
    char *const *envp;
    dt_worker_identity_t best;
    const char *best_name;     /* the launcher plugin's name            */
    int found;
    dt_status_t err;           /* a launcher's refusal, kept until the  */
    int err_precedence;        /*   end: a higher claim overrides it    */
    char why[512];
    const char *err_name;
} ask_t;

static int ask_one(const dt_plugin_t *p, void *arg)
{
    ask_t *a = arg;
    const dt_launcher_ops_t *ops = p->ops;
    if (!DT_OPS_HAS(ops, dt_launcher_ops_t, identify))
        return 0;
    dt_worker_identity_t id = {0, 1, 0, 1, -1, -1, 0, ""};
    char why[512] = "";
    dt_status_t st = ops->identify(a->envp, &id, why, sizeof why);
    if (st == DT_ERR_NOT_FOUND)
        return 0;
    if (!id.source[0] || memchr(id.source, '\0', sizeof id.source) == NULL)
        snprintf(id.source, sizeof id.source, "%s", p->name);
    if (st != DT_OK) {
        dt_debug("launcher %s refuses the environment: %s", p->name, why);
        if (!a->err || id.precedence > a->err_precedence) {
            a->err = st;
            a->err_precedence = id.precedence;
            a->err_name = p->name;
            snprintf(a->why, sizeof a->why, "%s",
                     why[0] ? why : dt_status_str(st));
        }
        return 0;
    }
    dt_debug("launcher %s recognises the environment: %s rank %d of %d",
             p->name, id.source, id.rank, id.size);
    if (!a->found || id.precedence > a->best.precedence) {
        a->best = id;
        a->best_name = p->name;
        a->found = 1;
    } else if (id.precedence == a->best.precedence &&
               (id.rank != a->best.rank || id.size != a->best.size)) {
        dt_error("the environment is both %s's (launcher %s: rank %d of %d) "
                 "and %s's (launcher %s: rank %d of %d); set DT_RANK, "
                 "DT_WORLD_SIZE, DT_LOCAL_RANK and DT_LOCAL_SIZE, or start "
                 "the workers with dtctl run",
                 a->best.source, a->best_name, a->best.rank, a->best.size,
                 id.source, p->name, id.rank, id.size);
        a->err = DT_ERR_CONFIG;
        a->err_precedence = id.precedence + 1; /* nothing overrides this */
        a->why[0] = '\0';
        a->err_name = NULL;
        return 1;
    }
    return 0;
}

static dt_status_t from_launchers(char *const *envp, dt_worker_env_t *w)
{
    ask_t a = {.envp = envp};
    dt_plugin_each(DT_KIND_LAUNCHER, ask_one, &a);
    if (a.err && (!a.found || a.err_precedence >= a.best.precedence)) {
        if (a.err_name)
            dt_error("%s (launcher %s)", a.why, a.err_name);
        return a.err;
    }
    if (!a.found)
        return DT_OK; /* nobody's: a job of one */
    w->rank = a.best.rank;
    w->size = a.best.size;
    w->local_rank = a.best.local_rank;
    w->local_size = a.best.local_size;
    snprintf(w->source, sizeof w->source, "%s", a.best.source);
    if (!consistent(w)) {
        dt_error("inconsistent worker numbers from %s (launcher %s): rank %d "
                 "of %d, local rank %d of %d",
                 w->source, a.best_name, w->rank, w->size, w->local_rank,
                 w->local_size);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t dt_worker_env_read(char *const *envp, dt_worker_env_t *w)
{
    *w = (dt_worker_env_t){0, 1, 0, 1, "none"};
    /* Workers of dtctl: no plugin is loaded to learn who they are. */
    if (!dt_worker_env_get(envp, "DT_RANK"))
        return from_launchers(envp, w);
    snprintf(w->source, sizeof w->source, "dtctl");
    DT_CHECK(get_int(envp, "DT_RANK", -1, &w->rank));
    DT_CHECK(get_int(envp, "DT_WORLD_SIZE", -1, &w->size));
    DT_CHECK(get_int(envp, "DT_LOCAL_RANK", 0, &w->local_rank));
    DT_CHECK(get_int(envp, "DT_LOCAL_SIZE", 1, &w->local_size));
    if (!consistent(w)) {
        dt_error("inconsistent worker numbers from dtctl (DT_RANK, "
                 "DT_WORLD_SIZE, DT_LOCAL_RANK, DT_LOCAL_SIZE): rank %d of "
                 "%d, local rank %d of %d",
                 w->rank, w->size, w->local_rank, w->local_size);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}
