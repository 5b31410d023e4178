/* run_checks.c — what dtctl run refuses at once, shared with dtctl check
 * (see run_checks.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "base/line_read.h"
#include "plugin/plugin_loader.h"
#include "run_checks.h"
#include "run_env.h"
#include "run_members.h"
#include "run_restart.h"

dt_status_t run_load_plugin(const dt_config_t *cfg, dt_kind_t kind,
                            const char *key, const dt_plugin_t **p)
{
    const char *name = NULL;
    DT_CHECK(dt_config_get_string(cfg, "cluster", key, &name));
    dt_status_t st = dt_plugin_load(kind, name, p, NULL);
    /* The loader's message names the plugin (escaped) and those there
     * are; this one where it was chosen, so a misspelling is found in the
     * right file. */
    const char *where = NULL;
    dt_config_source_t src = DT_SRC_DEFAULT;
    if (st != DT_OK &&
        dt_config_origin(cfg, "cluster", key, &src, &where) == DT_OK &&
        src != DT_SRC_DEFAULT && where)
        dt_error("%s: [cluster] %s is set here (the %s above); nothing was "
                 "started", where, key, dt_kind_name(kind));
    return st;
}

/* [cluster] timeout bounds every wait of the job (connections, silent
 * peers): 0 would fail the workers' first handshake with a message about
 * the store, not about the setting. */
dt_status_t run_check_cluster_keys(const dt_config_t *cfg)
{
    double t = 60.0;
    const char *where = NULL;
    DT_CHECK(dt_config_get_duration(cfg, "cluster", "timeout", &t));
    if (t <= 0) {
        dt_config_origin(cfg, "cluster", "timeout", NULL, &where);
        dt_error("%s: [cluster] timeout = 0: every wait of the job "
                 "(connecting, a silent peer) would fail at once; give a "
                 "duration above 0 (default 60s)",
                 where ? where : "[cluster] timeout");
        return DT_ERR_CONFIG;
    }
    long long port = DT_DEFAULT_MASTER_PORT;
    dt_status_t st = dt_config_get_int(cfg, "cluster", "master_port", &port);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    if (run_env_user(cfg, NULL) != DT_OK)
        return DT_ERR_CONFIG;
    if (port < 1 || port > 65535) {
        dt_config_origin(cfg, "cluster", "master_port", NULL, &where);
        dt_error("%s: [cluster] master_port = %lld is not a TCP port "
                 "(1-65535)",
                 where ? where : "[cluster] master_port", port);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t run_read_supervision(const dt_config_t *cfg, double *kill_grace,
                                 const char **workdir)
{
    *kill_grace = 5.0;
    *workdir = NULL;
    DT_CHECK(dt_config_get_duration(cfg, "cluster", "kill_grace",
                                    kill_grace));
    dt_status_t st = dt_config_get_string(cfg, "cluster", "workdir",
                                          workdir);
    if (st == DT_ERR_NOT_FOUND)
        *workdir = NULL;
    else if (st != DT_OK)
        return st;
    if (*workdir && !**workdir)
        *workdir = NULL;
    return DT_OK;
}

/* Read as run_restart_init and run_members_init read them for a run,
 * then dropped: one place decides what a valid setting is. */
dt_status_t run_check_restarts(const dt_config_t *cfg,
                               const dt_hostlist_t *hosts, int np,
                               int trainer)
{
    double kill_grace;
    const char *workdir;
    DT_CHECK(run_read_supervision(cfg, &kill_grace, &workdir));
    run_restart_t rs;
    run_members_t mb = {0};
    /* both zero their state first: freeing after a failure is safe */
    dt_status_t st = run_restart_init(cfg, trainer, workdir, &rs);
    if (st == DT_OK)
        st = run_members_init(cfg, hosts, np, rs.max, &mb);
    run_members_free(&mb);
    run_restart_free(&rs);
    return st;
}

/* The hostfile that [cluster] hostfile names, opened as dtctl read it (a
 * relative name set in an ini file is relative to that file); *path is
 * the name opened (malloc'd). */
static FILE *open_hostfile(const dt_config_t *cfg, char **path)
{
    const char *file = dt_config_get(cfg, "cluster", "hostfile");
    const char *where = "", *slash = NULL;
    dt_config_origin(cfg, "cluster", "hostfile", NULL, &where);
    *path = NULL;
    if (!file || !*file)
        return NULL;
    for (const char *c = where; *c && *c != ':'; c++)
        if (*c == '/')
            slash = c;
    FILE *f = NULL;
    size_t dir = slash ? (size_t)(slash - where) : 0;
    if (file[0] != '/' && slash &&
        (*path = malloc(dir + strlen(file) + 2))) {
        sprintf(*path, "%.*s/%s", (int)dir, where, file);
        f = fopen(*path, "r");
    }
    if (!f) {
        free(*path);
        *path = strdup(file);
        f = *path ? fopen(*path, "r") : NULL;
    }
    return f;
}

void run_weight_line(const dt_config_t *cfg, char *buf, size_t len)
{
    char *path = NULL, *line = NULL;
    size_t cap = 0;
    FILE *f = open_hostfile(cfg, &path);
    snprintf(buf, len, "the hostfile %s", path ? path : "");
    int nul;
    for (int n = 1; f && dt_line_read(f, &line, &cap, &nul) > 0; n++) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        if (strstr(line, "weight=")) {
            snprintf(buf, len, "%s:%d", path, n);
            break;
        }
    }
    if (f)
        fclose(f);
    free(line);
    free(path);
}

/* The first host with weight=, or NULL. */
static const dt_host_t *weighted_host(const dt_hostlist_t *hosts)
{
    for (size_t i = 0; hosts && i < hosts->n; i++)
        if (hosts->hosts[i].weight > 0)
            return &hosts->hosts[i];
    return NULL;
}

dt_status_t run_check_placed_by(const dt_config_t *cfg,
                                const dt_hostlist_t *hosts,
                                const dt_plugin_t *launcher)
{
    const dt_launcher_ops_t *ops = launcher->ops;
    if (!(DT_LAUNCHER_FLAGS(ops) & DT_LAUNCHER_PLACES_RANKS))
        return DT_OK;
    dt_status_t st = DT_OK;
    const dt_host_t *w = weighted_host(hosts);
    if (w) {
        char where[600];
        run_weight_line(cfg, where, sizeof where);
        dt_error("%s: weight=%g on host %s: the %s launcher's scheduler "
                 "places the ranks, so dtctl cannot tell which ranks run "
                 "there; drop weight= and give [cluster] work_load in the "
                 "scheduler's rank order, or use a launcher that starts "
                 "ranks where dtctl places them (ssh, mpi)",
                 where, w->weight, w->name, launcher->name);
        st = DT_ERR_CONFIG;
    }
    if (dt_config_get(cfg, "cluster", "min_np")) {
        const char *where = "[cluster] min_np";
        dt_config_origin(cfg, "cluster", "min_np", NULL, &where);
        dt_error("%s: [cluster] min_np (elastic membership) leaves failed "
                 "hosts out, but the %s launcher's scheduler places the "
                 "ranks: it would only run fewer workers, maybe on the same "
                 "host; drop min_np (max_restarts still restarts the job) "
                 "and exclude a bad node in the scheduler, or use ssh or mpi",
                 where, launcher->name);
        st = DT_ERR_CONFIG;
    }
    return st;
}
