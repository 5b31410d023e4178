/* local.c — the local launcher: N workers on this machine with
 * fork/exec, each in its own process group, output through pipes.
 * The plugin's entry points; the work is in launch.c, pump.c, signal.c
 * and run_on_host.c. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/plugin.h>
#include <dt/hosts.h>
#include "local.h"

#define READ_CHUNK 65536

static dt_status_t local_init(const dt_config_t *cfg, void **ctx)
{
    /* [launcher.local] has no keys */
    local_launcher_t *L = calloc(1, sizeof *L);
    if (!L || !(L->buf = malloc(READ_CHUNK))) {
        free(L);
        return DT_ERR_NOMEM;
    }
    L->buf_len = READ_CHUNK;
    L->kill_grace = 5.0;
    if (cfg && dt_config_get_duration(cfg, "cluster", "kill_grace",
                                      &L->kill_grace) != DT_OK)
        L->kill_grace = 5.0; /* dtctl said what is wrong with it */
    /* Children that workers leave behind come back to dtctl when a worker
     * exits, so fini can reap them (no zombies under a PID 1 that does not
     * reap). Failure only loses that. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
        dt_debug("local launcher: cannot become child subreaper; orphans "
                 "of workers go to init");
    *ctx = L;
    return DT_OK;
}

static dt_status_t local_check(void *ctx, const dt_hostlist_t *hosts,
                               void (*report)(void *arg, const char *host,
                                              const char *problem),
                               void *arg)
{
    (void)ctx;
    for (size_t i = 0; hosts && i < hosts->n; i++)
        if (!dt_host_is_local(hosts->hosts[i].name))
            report(arg, hosts->hosts[i].name,
                   "the local launcher starts workers on this machine only; "
                   "use --launcher=ssh (or mpi, slurm, ...) for this host");
    return DT_OK;
}

static void local_fini(void *ctx)
{
    local_launcher_t *L = ctx;
    if (!L)
        return;
    local_kill_and_reap(L);
    local_stdin_end(L);
    free(L->relay);
    for (int i = 0; i < L->n; i++) {
        local_worker_t *w = &L->workers[i];
        if (w->pidfd >= 0)
            close(w->pidfd);
        for (int k = 0; k < 2; k++)
            if (w->fds[k] >= 0)
                close(w->fds[k]);
        free(w->host);
    }
    free(L->workers);
    free(L->buf);
    free(L);
}

static const dt_launcher_ops_t local_ops = {
    .size = sizeof(dt_launcher_ops_t),
    .init = local_init,
    .launch = local_launch,
    .wait = local_wait,
    .signal = local_signal,
    .run_on_host = local_run_on_host,
    .check = local_check,
    .fini = local_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_LAUNCHER,
    .name = "local",
    .version = "1.0",
    .description = "workers on this machine (fork/exec, one process group "
                   "each)",
    .keys = NULL,
    .available = NULL,
    .ops = &local_ops,
};
