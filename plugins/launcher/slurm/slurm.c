/* slurm.c — the slurm launcher: inside an allocation (SLURM_JOB_ID set)
 * one `srun` starts the ranks; outside, `salloc` gets an allocation with
 * the [launcher.slurm] settings and runs that srun in it. scancel stops
 * the job (or our step) on Ctrl-C or a failure. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <dt/env.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include "../common/frontend/prologue.h"
#include "../common/spawn/spawn.h"
#include "slurm_env.h"
#include "slurm.h"

#define SECTION "launcher.slurm"

extern char **environ;

static const dt_key_spec_t slurm_keys[] = {
    {"partition", DT_KEY_STRING, NULL, "partition for a new allocation (-p)"},
    {"time_limit", DT_KEY_STRING, NULL,
     "time limit for a new allocation (-t), e.g. 30, 2:00:00, 1-0"},
    {"account", DT_KEY_STRING, NULL, "account to charge (-A)"},
    {"job_name", DT_KEY_STRING, "dt", "job (and step) name; dtctl appends "
                                      "the job id"},
    {"nodes", DT_KEY_INT, "0", "nodes to use (-N); 0: Slurm decides"},
    {"tasks_per_node", DT_KEY_INT, "0",
     "ranks per node (--ntasks-per-node); 0: Slurm decides"},
    {"extra_args", DT_KEY_WORDS, NULL,
     "more salloc options, for a new allocation; split at blanks as sh "
     "would (--nodelist=n1,n2)"},
    {"srun_args", DT_KEY_WORDS, NULL,
     "more srun options; split at blanks as sh would"},
    {NULL, 0, NULL, NULL},
};

static dt_status_t slurm_available(char *why, size_t why_len)
{
    static const char *const tools[] = {"srun", "salloc", "scancel", "squeue"};
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++)
        if (!dt_program_found(tools[i])) {
            snprintf(why, why_len,
                     "'%s' is not on PATH: install the Slurm client "
                     "(Debian: apt install slurm-client) or fix PATH",
                     tools[i]);
            return DT_ERR_NOT_FOUND;
        }
    return DT_OK;
}

static dt_status_t get_str(const dt_config_t *cfg, const char *key,
                           const char **out)
{
    dt_status_t st = dt_config_get_string(cfg, SECTION, key, out);
    if (st == DT_ERR_NOT_FOUND)
        *out = "";
    return st == DT_ERR_NOT_FOUND ? DT_OK : st;
}

static dt_status_t get_int(const dt_config_t *cfg, const char *key,
                           long long *out)
{
    dt_status_t st = dt_config_get_int(cfg, SECTION, key, out);
    if (st == DT_ERR_NOT_FOUND)
        *out = 0;
    if (st == DT_OK && *out < 0) {
        const char *where = "?";
        dt_config_source_t src;
        dt_config_origin(cfg, SECTION, key, &src, &where);
        dt_error("%s: [launcher.slurm] %s = %lld must not be negative", where,
                 key, *out);
        return DT_ERR_CONFIG;
    }
    return st == DT_ERR_NOT_FOUND ? DT_OK : st;
}

static dt_status_t get_words(const dt_config_t *cfg, const char *key,
                             char ***out)
{
    size_t n;
    dt_status_t st = dt_config_get_words(cfg, SECTION, key, out, &n);
    if (st == DT_ERR_NOT_FOUND)
        *out = NULL;
    return st == DT_ERR_NOT_FOUND ? DT_OK : st;
}

static void free_conf(slurm_conf_t *c)
{
    dt_strv_free(c->extra_args);
    dt_strv_free(c->srun_args);
}

static dt_status_t read_conf(const dt_config_t *cfg, slurm_conf_t *c)
{
    DT_CHECK(get_str(cfg, "partition", &c->partition));
    DT_CHECK(get_str(cfg, "time_limit", &c->time_limit));
    DT_CHECK(get_str(cfg, "account", &c->account));
    DT_CHECK(get_str(cfg, "job_name", &c->job_name));
    DT_CHECK(get_int(cfg, "nodes", &c->nodes));
    DT_CHECK(get_int(cfg, "tasks_per_node", &c->tasks_per_node));
    DT_CHECK(get_words(cfg, "extra_args", &c->extra_args));
    DT_CHECK(get_words(cfg, "srun_args", &c->srun_args));
    return DT_OK;
}

static dt_status_t slurm_init(const dt_config_t *cfg, void **ctx)
{
    slurm_launcher_t *L = calloc(1, sizeof *L);
    if (!L)
        return DT_ERR_NOMEM;
    dt_status_t st = read_conf(cfg, &L->conf);
    if (st != DT_OK) {
        free_conf(&L->conf);
        free(L);
        return st;
    }
    if (dt_config_get_int(cfg, "cluster", "np", &L->np) != DT_OK)
        L->np = 0;
    dt_config_source_t np_src = DT_SRC_DEFAULT;
    const char *np_where = NULL;
    L->np_given = dt_config_origin(cfg, "cluster", "np", &np_src,
                                   &np_where) == DT_OK &&
                  np_src != DT_SRC_DEFAULT;
    long long port;
    L->master_port_set =
        dt_config_get_int(cfg, "cluster", "master_port", &port) == DT_OK;
    const char *job = getenv("SLURM_JOB_ID");
    if (job && *job) {
        L->inside = 1;
        snprintf(L->alloc_id, sizeof L->alloc_id, "%s", job);
        dt_debug("slurm launcher: inside allocation %s: srun", job);
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
        dt_debug("slurm launcher: cannot become child subreaper");
    *ctx = L;
    return DT_OK;
}

static dt_status_t slurm_launch(void *ctx, const dt_launch_spec_t *spec)
{
    slurm_launcher_t *L = ctx;
    if (!L || !spec || spec->np < 1 || !spec->argv || !spec->argv[0]) {
        dt_error("slurm launcher: launch needs np >= 1 and a program (a bug "
                 "in dt: please report it)");
        return DT_ERR_INVALID;
    }
    if (L->fe) {
        dt_error("slurm launcher: this instance already launched a job");
        return DT_ERR_INVALID;
    }
    slurm_say_np_fit(L, spec->np);
    const char *id = dt_env_value(spec->env, "DT_JOB_ID");
    snprintf(L->step_name, sizeof L->step_name, "%s-%s",
             *L->conf.job_name ? L->conf.job_name : "dt", id ? id : "job");
    strv_t argv = {0};
    char **envp = NULL, *script = NULL;
    char nonce[PROLOGUE_NONCE_LEN + 1];
    char *identity = NULL;
    dt_status_t st = prologue_nonce(nonce);
    if (st == DT_OK)
        st = slurm_prologue_identity(!L->master_port_set, &identity);
    if (st == DT_OK)
        /* slurmstepd signals every process of the step: no relay */
        st = prologue_script(identity, nonce, 0, &script);
    free(identity);
    if (st == DT_OK)
        st = env_merge(environ, spec->env, NULL, &envp);
    if (st == DT_OK)
        st = slurm_build_argv(L, spec, script, &argv);
    if (st == DT_OK) {
        frontend_args_t a = {
            .label = L->inside ? "srun" : "salloc",
            .argv = (const char *const *)argv.v,
            .envp = envp,
            .workdir = spec->workdir,
            .pass_stdin = spec->forward_stdin, /* srun --input=0 */
            .tags = FRONTEND_TAGS_SLURM,
            .nonce = nonce,
            .np = spec->np,
            .output = spec->output,
            .output_arg = spec->output_arg,
            .on_line = slurm_on_line,
            .on_line_arg = L,
        };
        st = frontend_start(&a, &L->fe);
    }
    free(envp);
    strv_free(&argv);
    free(script);
    return st;
}

static dt_status_t slurm_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev)
{
    slurm_launcher_t *L = ctx;
    if (!L || !L->fe)
        return DT_ERR_NOT_FOUND;
    return frontend_wait(L->fe, timeout_ms, ev);
}

/* Stop: scancel the job (or our step); before Slurm knows the job, the
 * front-end itself is told (salloc cancels its pending request). Ctrl-Z
 * and fg: the step's processes are stopped and continued, not the job. */
static dt_status_t slurm_signal(void *ctx, int signo)
{
    slurm_launcher_t *L = ctx;
    if (!L || !L->fe)
        return DT_ERR_INVALID;
    if (!frontend_running(L->fe))
        return DT_OK;
    if (signo == SIGSTOP || signo == SIGCONT)
        return slurm_stop_or_continue(L, signo);
    if (slurm_cancel(L, signo) != DT_OK)
        frontend_signal(L->fe, signo == SIGKILL ? SIGKILL : SIGTERM);
    return DT_OK;
}

static void slurm_fini(void *ctx)
{
    slurm_launcher_t *L = ctx;
    if (!L)
        return;
    if (L->fe) {
        if (frontend_running(L->fe))
            slurm_cancel(L, SIGKILL);
        frontend_kill_and_reap(L->fe);
        frontend_free(L->fe);
    }
    free_conf(&L->conf);
    free(L);
}

static const dt_launcher_ops_t slurm_ops = {
    .size = sizeof(dt_launcher_ops_t),
    .init = slurm_init,
    .launch = slurm_launch,
    .wait = slurm_wait,
    .signal = slurm_signal,
    .run_on_host = slurm_run_on_host,
    .check = slurm_check,
    .fini = slurm_fini,
    .identify = slurm_identify,
    .flags = DT_LAUNCHER_PLACES_RANKS, /* srun --ntasks: Slurm places */
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_LAUNCHER,
    .name = "slurm",
    .version = "1.0",
    .description = "workers started by Slurm's srun, in the current "
                   "allocation or a new one (salloc)",
    .keys = slurm_keys,
    .available = slurm_available,
    .ops = &slurm_ops,
};
