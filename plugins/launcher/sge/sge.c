/* sge.c — the Son of Grid Engine launcher: the job goes to SGE with
 * `qsub -pe PE NP -sync y` as a generated job script that starts the
 * workers with `qrsh -inherit` (script.c); dtctl follows them through a
 * private job directory on a file system the execution hosts share
 * (../common/jobdir). Entry points, configuration and the preflight check. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/env.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include "sge.h"

static const dt_key_spec_t sge_keys[] = {
    {"pe", DT_KEY_STRING, NULL,
     "parallel environment to request (qsub -pe PE NP); it needs "
     "control_slaves TRUE. Unset: the cell's one PE that can hold the job "
     "(an error naming them all when several can)"},
    {"queue", DT_KEY_STRING, NULL, "queue(s) to submit to (qsub -q)"},
    {"resources", DT_KEY_LIST, NULL,
     "resource requests, each passed as qsub -l ITEM (h_rt=1:00:00 ...)"},
    {"project", DT_KEY_STRING, NULL, "project (qsub -P)"},
    {"extra_args", DT_KEY_WORDS, NULL,
     "more qsub arguments, passed before the job script; split at blanks "
     "as sh would (-l a=1,b=2)"},
    {"job_name", DT_KEY_STRING, NULL,
     "job name prefix (qsub -N NAME-<job id>); default dt"},
    {"shared_dir", DT_KEY_STRING, NULL,
     "directory visible at the same path on this host and every "
     "execution host, for the job directory; default ~/.dt/sge"},
    {"export_env", DT_KEY_BOOL, "yes",
     "give the workers dtctl's environment (through a 0600 file in the "
     "job directory, not qsub -V: qstat -j shows -V's variables to every "
     "user)"},
    {"verify", DT_KEY_BOOL, "yes",
     "reject a job that can never run at submission (qsub -w e)"},
    {"poll_interval", DT_KEY_DURATION, "200ms",
     "how often dtctl reads the workers' output and exit files"},
    {"submit_timeout", DT_KEY_DURATION, "60s",
     "how long qsub may take to accept the job"},
    {NULL, 0, NULL, NULL},
};

#define SECTION "launcher.sge"

static dt_status_t get_opt_string(const dt_config_t *cfg, const char *key,
                                  const char **out)
{
    *out = NULL;
    dt_status_t st = dt_config_get_string(cfg, SECTION, key, out);
    return st == DT_ERR_NOT_FOUND ? DT_OK : st;
}

static dt_status_t get_opt_list(const dt_config_t *cfg, const char *key,
                                char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    dt_status_t st = dt_config_get_list(cfg, SECTION, key, out, n);
    return st == DT_ERR_NOT_FOUND ? DT_OK : st;
}

static dt_status_t get_opt_words(const dt_config_t *cfg, const char *key,
                                 char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    dt_status_t st = dt_config_get_words(cfg, SECTION, key, out, n);
    return st == DT_ERR_NOT_FOUND ? DT_OK : st;
}

static dt_status_t read_conf(const dt_config_t *cfg, sge_conf_t *c)
{
    DT_CHECK(get_opt_string(cfg, "pe", &c->pe));
    DT_CHECK(get_opt_string(cfg, "queue", &c->queue));
    DT_CHECK(get_opt_string(cfg, "project", &c->project));
    DT_CHECK(get_opt_string(cfg, "job_name", &c->job_name));
    DT_CHECK(get_opt_string(cfg, "shared_dir", &c->shared_dir));
    DT_CHECK(get_opt_list(cfg, "resources", &c->resources, &c->nresources));
    DT_CHECK(get_opt_words(cfg, "extra_args", &c->extra_args, &c->nextra));
    DT_CHECK(dt_config_get_bool(cfg, SECTION, "export_env", &c->export_env));
    DT_CHECK(dt_config_get_bool(cfg, SECTION, "verify", &c->verify));
    DT_CHECK(jobdir_conf_ms(cfg, SECTION, "poll_interval", &c->poll_ms));
    DT_CHECK(jobdir_conf_ms(cfg, SECTION, "submit_timeout",
                            &c->submit_timeout_ms));
    if (!c->shared_dir || !*c->shared_dir) {
        const char *home = jobdir_home();
        if (!home) {
            dt_error("sge: no home directory to put ~/.dt/sge in; set "
                     "[launcher.sge] shared_dir");
            return DT_ERR_CONFIG;
        }
        if (asprintf(&c->home_dir, "%s/.dt/sge", home) < 0)
            return DT_ERR_NOMEM;
        c->shared_dir = c->home_dir;
    }
    if (c->shared_dir[0] != '/') {
        dt_error("[%s] shared_dir = '%s' must be an absolute path (the "
                 "execution hosts see it at the same path)",
                 SECTION, c->shared_dir);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

static void free_conf(sge_conf_t *c)
{
    dt_strv_free(c->resources);
    dt_strv_free(c->extra_args);
    free(c->home_dir);
}

static dt_status_t sge_init(const dt_config_t *cfg, void **ctx)
{
    sge_launcher_t *L = calloc(1, sizeof *L);
    if (!L)
        return DT_ERR_NOMEM;
    dt_status_t st = read_conf(cfg, &L->conf);
    if (st != DT_OK) {
        free_conf(&L->conf);
        free(L);
        return st;
    }
    L->qsub.out_fd = L->qsub.err_fd = -1;
    *ctx = L;
    return DT_OK;
}

static void sge_fini(void *ctx)
{
    sge_launcher_t *L = ctx;
    if (!L)
        return;
    sge_stop_and_reap(L);
    if (L->qsub.out_fd >= 0)
        close(L->qsub.out_fd);
    if (L->qsub.err_fd >= 0)
        close(L->qsub.err_fd);
    if (L->mon_ready)
        jobdir_mon_free(&L->mon);
    if (L->dir)
        jobdir_remove(L->dir);
    sb_free(&L->qsub_out);
    sb_free(&L->qsub_err);
    free(L->dir);
    free(L->name);
    free(L->auto_pe);
    free_conf(&L->conf);
    free(L);
}

static dt_status_t sge_available(char *why, size_t len)
{
    /* PATH unset: not available, as sge has always said (the other
     * launchers look in /usr/bin:/bin then). */
    const char *path = getenv("PATH");
    if (path && dt_program_found("qsub") && dt_program_found("qdel"))
        return DT_OK;
    snprintf(why, len, "qsub/qdel not on PATH (install gridengine-client, "
                       "or source $SGE_ROOT/default/common/settings.sh)");
    return DT_ERR_NOT_FOUND;
}

/* `qconf ARGS` output, or NULL with a problem reported. */
static char *qconf(const char *const *argv, void (*report)(void *,
                   const char *, const char *), void *arg, const char *what)
{
    char *out = NULL, msg[1024];
    int code = 0;
    if (proc_run(argv, NULL, 30000, &out, &code) != DT_OK || code != 0) {
        snprintf(msg, sizeof msg, "%s: %s", what,
                 out && *out ? out : "qconf failed");
        report(arg, "qmaster", msg);
        free(out);
        return NULL;
    }
    return out;
}

static dt_status_t sge_check(void *ctx, const dt_hostlist_t *hosts,
                             void (*report)(void *arg, const char *host,
                                            const char *problem),
                             void *arg)
{
    /* SGE chooses the hosts; their slots only size an unset pe's pick. */
    sge_launcher_t *L = ctx;
    char why[256], msg[1024];
    if (sge_available(why, sizeof why) != DT_OK) {
        report(arg, "localhost", why);
        return DT_OK;
    }
    if ((!L->conf.pe || !*L->conf.pe) &&
        sge_pick_pe(L, (int)(hosts && dt_hostlist_slots(hosts) > 0
                                 ? dt_hostlist_slots(hosts)
                                 : 1)) != DT_OK) {
        report(arg, "localhost",
               "[launcher.sge] pe is not set and no single parallel "
               "environment fits (see above); `qconf -spl` lists them");
    } else {
        const char *argv[] = {"qconf", "-sp", L->conf.pe, NULL};
        char *pe = qconf(argv, report, arg, "parallel environment");
        if (pe && !strstr(pe, "control_slaves     TRUE") &&
            !strstr(pe, "control_slaves TRUE")) {
            snprintf(msg, sizeof msg,
                     "parallel environment %s has control_slaves FALSE: "
                     "qrsh -inherit cannot start workers (qconf -mp %s)",
                     L->conf.pe, L->conf.pe);
            report(arg, "qmaster", msg);
        }
        free(pe);
    }
    if (L->conf.queue && *L->conf.queue && !strpbrk(L->conf.queue, "@*,")) {
        const char *argv[] = {"qconf", "-sq", L->conf.queue, NULL};
        free(qconf(argv, report, arg, "queue"));
    }
    struct stat sb;
    if (stat(L->conf.shared_dir, &sb) == 0 &&
        (!S_ISDIR(sb.st_mode) || access(L->conf.shared_dir, W_OK) != 0)) {
        snprintf(msg, sizeof msg,
                 "[launcher.sge] shared_dir %s is not a writable directory",
                 L->conf.shared_dir);
        report(arg, "localhost", msg);
    }
    return DT_OK;
}

static const dt_launcher_ops_t sge_ops = {
    .size = sizeof(dt_launcher_ops_t),
    .init = sge_init,
    .launch = sge_launch,
    .wait = sge_wait,
    .signal = sge_signal,
    .run_on_host = sge_run_on_host,
    .check = sge_check,
    .fini = sge_fini,
    .flags = DT_LAUNCHER_PLACES_RANKS, /* ranks numbered from $PE_HOSTFILE */
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_LAUNCHER,
    .name = "sge",
    .version = "1.0",
    .description = "Son of Grid Engine: qsub -pe ... -sync y, workers "
                   "started with qrsh -inherit",
    .keys = sge_keys,
    .available = sge_available,
    .ops = &sge_ops,
};
