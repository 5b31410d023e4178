/* run_checks.c — what dtctl run refuses at once, shared with dtctl check
 * (see run_checks.h). */
#include <dt/log.h>
#include "plugin/plugin_loader.h"
#include "run_checks.h"
#include "run_members.h"
#include "run_restart.h"

dt_status_t run_load_plugin(const dt_config_t *cfg, dt_kind_t kind,
                            const char *key, const dt_plugin_t **p)
{
    const char *name = NULL;
    DT_CHECK(dt_config_get_string(cfg, "cluster", key, &name));
    return dt_plugin_load(kind, name, p, NULL);
}

/* [cluster] timeout bounds every wait of the job (connections, silent
 * peers): 0 would fail the workers' first handshake with a message about
 * the store, not about the setting. */
dt_status_t run_check_timeout(const dt_config_t *cfg)
{
    double t = 60.0;
    DT_CHECK(dt_config_get_duration(cfg, "cluster", "timeout", &t));
    if (t > 0)
        return DT_OK;
    const char *where = NULL;
    dt_config_origin(cfg, "cluster", "timeout", NULL, &where);
    dt_error("%s: [cluster] timeout = 0: every wait of the job (connecting, "
             "a silent peer) would fail at once; give a duration above 0 "
             "(default 60s)", where ? where : "[cluster] timeout");
    return DT_ERR_CONFIG;
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
