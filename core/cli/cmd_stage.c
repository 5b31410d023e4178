/* cmd_stage.c — `dtctl stage [verify] [JOB.ini]`: only the staging step of
 * a job: the storage plugin puts [data] path where every host's workers
 * read it (verify: only checks that it is in place). Prints the paths the
 * workers would get. Exit 0: done; 1: staging failed; 2: bad usage,
 * configuration or plugin; 128+N: stopped by signal N (SIGINT, SIGTERM,
 * SIGHUP, SIGUSR1: the copy is ended, nothing left running). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/store.h>
#include "cli.h"
#include "plugin/plugin_loader.h"
#include "run_stage.h"
#include "stop_signals.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2

static int parse_usage(const dt_cli_t *cli, const char **job_file,
                       run_stage_mode_t *mode)
{
    int i = 0;
    *job_file = NULL;
    *mode = RUN_STAGE_COPY;
    if (i < cli->nargs && strcmp(cli->args[i], "verify") == 0) {
        *mode = RUN_STAGE_VERIFY;
        i++;
    }
    if (i < cli->nargs) {
        size_t n = strlen(cli->args[i]);
        if (n < 4 || strcmp(cli->args[i] + n - 4, ".ini") != 0) {
            dt_error("dtctl stage: '%s' is not a job file (JOB.ini); usage: "
                     "dtctl stage [verify] [JOB.ini]",
                     cli->args[i]);
            return EXIT_USAGE;
        }
        *job_file = cli->args[i++];
    }
    if (i < cli->nargs || cli->exec_argc > 0) {
        dt_error("dtctl stage takes [verify] and one job file; usage: "
                 "dtctl stage [verify] [JOB.ini]");
        return EXIT_USAGE;
    }
    if (cli->no_stage) {
        dt_error("dtctl stage --no-stage would do nothing; to check without "
                 "copying use: dtctl stage verify JOB.ini");
        return EXIT_USAGE;
    }
    return 0;
}

/* A fresh job id, as dtctl run makes one (markers carry it). */
static void new_job_id(char id[13])
{
    uint8_t t[DT_TOKEN_BYTES];
    memset(t, 0, sizeof t);
    dt_token_generate(t);
    for (int i = 0; i < 6; i++)
        snprintf(id + 2 * i, 3, "%02x", t[i]);
}

/* The step with stop signals taken as requests: a copy is ended (its
 * processes too) rather than dtctl dying under it. 0 or the exit code. */
static int stage_stoppable(const dt_config_t *cfg, const dt_hostlist_t *hosts,
                           const dt_launcher_ops_t *lops, void *lctx,
                           const char *job_id, run_stage_mode_t mode,
                           char **data, char **shared)
{
    if (stop_signals_install() != DT_OK)
        return EXIT_FAILED;
    run_stage_args_t a = {.cfg = cfg,
                          .hosts = hosts,
                          .launcher = lops,
                          .launcher_ctx = lctx,
                          .job_id = job_id,
                          .mode = mode,
                          .stop = stop_signals_pending};
    dt_status_t st = run_stage(&a, data, shared);
    int signo = stop_signals_pending() ? stop_signals_take() : 0;
    stop_signals_restore();
    if (st == DT_OK)
        return 0;
    if (st == DT_ERR_INTERRUPTED && signo)
        return 128 + signo;
    return st == DT_ERR_CONFIG || st == DT_ERR_PLUGIN ? EXIT_USAGE
                                                      : EXIT_FAILED;
}

int dt_cmd_stage(dt_cli_t *cli)
{
    const char *job_file = NULL, *lname = NULL;
    run_stage_mode_t mode;
    int code = parse_usage(cli, &job_file, &mode);
    if (code != 0)
        return code;
    dt_config_t *cfg = NULL;
    dt_hostlist_t hosts = {NULL, 0};
    const dt_plugin_t *lp = NULL;
    const dt_launcher_ops_t *lops = NULL;
    void *lctx = NULL;
    char *data = NULL, *shared = NULL, job_id[13];
    int np = 0;
    code = EXIT_USAGE;
    if (dt_cli_load_config(cli, job_file, &cfg) != DT_OK ||
        dt_cli_job_hosts(cfg, &hosts, &np) != DT_OK ||
        dt_config_get_string(cfg, "cluster", "launcher", &lname) != DT_OK ||
        dt_plugin_load(DT_KIND_LAUNCHER, lname, &lp, NULL) != DT_OK)
        goto out;
    const char *path = dt_config_get(cfg, "data", "path");
    if (!path || !*path) {
        dt_error("dtctl stage: nothing to stage: set [data] path in the job "
                 "file (the data set directory on this machine)");
        goto out;
    }
    lops = lp->ops;
    if (!lops->init || !lops->fini || lops->init(cfg, &lctx) != DT_OK) {
        dt_error("the %s launcher could not be set up (see above)", lname);
        lctx = NULL;
        goto out;
    }
    new_job_id(job_id);
    code = stage_stoppable(cfg, &hosts, lops, lctx, job_id, mode, &data,
                           &shared);
    if (code != 0)
        goto out;
    printf("data set: %s\n", data ? data : "-");
    if (shared)
        printf("shared directory: %s\n", shared);
    code = 0;
out:
    if (lctx)
        lops->fini(lctx);
    free(data);
    free(shared);
    dt_hostlist_free(&hosts);
    dt_config_free(cfg);
    return code;
}
