/* mpi.c — the mpi launcher: one `mpirun` (Open MPI) starts every rank on
 * the job's hosts. The plugin's entry points; the command line is built
 * in mpi_command.c, the running of mpirun is ../common/frontend. */
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
#include "../common/jobdir/jobdir.h"
#include "../common/spawn/spawn.h"
#include "mpi_env.h"
#include "check.h"
#include "mpi_command.h"
#include "mpi_ipv6.h"
#include "mpi_lines.h"
#include "mpi_rsh.h"
#include "mpi_types.h"
#include "run_on_host.h"
#include "sweep.h"

#define SECTION "launcher.mpi"
/* Every rank confirms a relayed stop or continue within this. */
#define RELAY_WAIT_MS 5000

extern char **environ;

static const dt_key_spec_t mpi_keys[] = {
    {"mpirun", DT_KEY_STRING, "mpirun",
     "the mpirun program (a path, or a name looked up on PATH)"},
    {"map_by", DT_KEY_STRING, "slot",
     "--map-by policy; 'slot' fills hosts in order like dt's placement; "
     "empty: mpirun's default"},
    {"bind_to", DT_KEY_STRING, NULL, "--bind-to policy (none, core, ...)"},
    {"oversubscribe", DT_KEY_BOOL, "no",
     "allow more ranks than cores (--oversubscribe)"},
    {"rsh_agent", DT_KEY_STRING, NULL,
     "how mpirun reaches other hosts (--mca plm_rsh_agent), e.g. "
     "'ssh -p 2222 -i KEY'; or leave it unset and use the ssh_* keys"},
    {"ssh_identity", DT_KEY_STRING, NULL,
     "private key for the ssh that mpirun starts remote daemons with "
     "(-i; builds the agent with host keys verified)"},
    {"ssh_known_hosts", DT_KEY_STRING, NULL,
     "known_hosts file that remote host keys are checked against "
     "(StrictHostKeyChecking=yes)"},
    {"ssh_port", DT_KEY_INT, "0", "ssh port of the remote hosts (0: ssh's default)"},
    {"env_vars", DT_KEY_LIST, "PATH,LD_LIBRARY_PATH",
     "more variables of dtctl's environment passed to the workers (-x)"},
    {"extra_args", DT_KEY_WORDS, NULL,
     "more mpirun options, placed before the program; split at blanks as "
     "sh would (--mca btl self,tcp)"},
    {NULL, 0, NULL, NULL},
};

static dt_status_t mpi_available(char *why, size_t why_len)
{
    const char *prog = getenv("DT_LAUNCHER_MPI_MPIRUN");
    if (!prog || !*prog)
        prog = "mpirun";
    if (dt_program_found(prog))
        return DT_OK;
    snprintf(why, why_len,
             "'%s' is not on PATH: install Open MPI (Debian: apt install "
             "openmpi-bin) or set [launcher.mpi] mpirun",
             prog);
    return DT_ERR_NOT_FOUND;
}

static void free_conf(mpi_conf_t *c)
{
    dt_strv_free(c->extra_args);
    dt_strv_free(c->env_vars);
    dt_strv_free(c->interface);
    free(c->rsh_agent_built);
    memset(c, 0, sizeof *c);
}

/* A string key; unset counts as empty. */
static dt_status_t get_str(const dt_config_t *cfg, const char *key,
                           const char **out)
{
    dt_status_t st = dt_config_get_string(cfg, SECTION, key, out);
    if (st == DT_ERR_NOT_FOUND) {
        *out = "";
        return DT_OK;
    }
    return st;
}

static dt_status_t get_list(const dt_config_t *cfg, const char *section,
                            const char *key, char ***out)
{
    size_t n;
    dt_status_t st = dt_config_get_list(cfg, section, key, out, &n);
    if (st == DT_ERR_NOT_FOUND) {
        *out = NULL;
        return DT_OK;
    }
    return st;
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

static dt_status_t read_conf(const dt_config_t *cfg, mpi_conf_t *c)
{
    DT_CHECK(get_str(cfg, "mpirun", &c->mpirun));
    DT_CHECK(get_str(cfg, "map_by", &c->map_by));
    DT_CHECK(get_str(cfg, "bind_to", &c->bind_to));
    DT_CHECK(get_str(cfg, "rsh_agent", &c->rsh_agent));
    DT_CHECK(get_str(cfg, "ssh_identity", &c->ssh_identity));
    DT_CHECK(get_str(cfg, "ssh_known_hosts", &c->ssh_known_hosts));
    dt_status_t pst = dt_config_get_int(cfg, SECTION, "ssh_port", &c->ssh_port);
    if (pst != DT_OK && pst != DT_ERR_NOT_FOUND)
        return pst;
    dt_status_t st = dt_config_get_bool(cfg, SECTION, "oversubscribe",
                                        &c->oversubscribe);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    DT_CHECK(get_words(cfg, "extra_args", &c->extra_args));
    DT_CHECK(get_list(cfg, SECTION, "env_vars", &c->env_vars));
    DT_CHECK(get_list(cfg, "cluster", "interface", &c->interface));
    if (!*c->mpirun) {
        dt_error("[launcher.mpi] mpirun is empty; name the mpirun program");
        return DT_ERR_CONFIG;
    }
    if (!dt_program_found(c->mpirun)) {
        dt_error("[launcher.mpi] mpirun = '%s' was not found (PATH=%s); "
                 "install Open MPI or give its full path",
                 c->mpirun, getenv("PATH") ? getenv("PATH") : "");
        return DT_ERR_NOT_FOUND;
    }
    return mpi_build_rsh_agent(c);
}

static dt_status_t mpi_init(const dt_config_t *cfg, void **ctx)
{
    mpi_launcher_t *L = calloc(1, sizeof *L);
    if (!L)
        return DT_ERR_NOMEM;
    dt_status_t st = read_conf(cfg, &L->conf);
    if (st != DT_OK) {
        free_conf(&L->conf);
        free(L);
        return st;
    }
    /* mpirun's local ranks come back to dtctl if mpirun dies first, so
     * fini can reap them. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
        dt_debug("mpi launcher: cannot become child subreaper");
    *ctx = L;
    return DT_OK;
}

/* mpirun's environment: dtctl's, the job's variables, the placement for
 * the prologue. Also the list of names to export with -x. */
static dt_status_t build_env(const mpi_launcher_t *L,
                             const dt_launch_spec_t *spec, strv_t *job_env,
                             char ***envp)
{
    char *first = NULL, *hosts = NULL;
    strv_add_all(job_env, spec->env);
    if (L->conf.map_by && strcmp(L->conf.map_by, "slot") == 0) {
        DT_CHECK(prologue_placement_env(spec, &first, &hosts));
        strv_add(job_env, first);
        strv_add(job_env, hosts);
        free(first);
        free(hosts);
    }
    /* A name the job already has (NCCL_SOCKET_IFNAME from [cluster]
     * interface) is exported once, with the job's value. */
    for (size_t i = 0; L->conf.env_vars && L->conf.env_vars[i]; i++) {
        const char *v = getenv(L->conf.env_vars[i]);
        if (v && !dt_env_value(spec->env, L->conf.env_vars[i]))
            strv_addf(job_env, "%s=%s", L->conf.env_vars[i], v);
    }
    if (!strv_ok(job_env))
        return DT_ERR_NOMEM;
    return env_merge(environ, (const char *const *)job_env->v, NULL, envp);
}

/* What fini needs to clean up remote hosts: the job id, the hosts. */
static dt_status_t remember_job(mpi_launcher_t *L,
                                const dt_launch_spec_t *spec)
{
    const char *id = dt_env_value(spec->env, "DT_JOB_ID");
    snprintf(L->job_id, sizeof L->job_id, "%s", id ? id : "");
    L->hosts.hosts = calloc(spec->hosts->n ? spec->hosts->n : 1,
                            sizeof *L->hosts.hosts);
    if (!L->hosts.hosts)
        return DT_ERR_NOMEM;
    for (size_t i = 0; i < spec->hosts->n; i++) {
        L->hosts.hosts[i] = spec->hosts->hosts[i];
        L->hosts.hosts[i].name = strdup(spec->hosts->hosts[i].name);
        if (!L->hosts.hosts[i].name)
            return DT_ERR_NOMEM;
        L->hosts.n = i + 1;
    }
    return DT_OK;
}

static dt_status_t mpi_launch(void *ctx, const dt_launch_spec_t *spec)
{
    mpi_launcher_t *L = ctx;
    if (!L || !spec || spec->np < 1 || !spec->hosts || !spec->placement ||
        !spec->argv || !spec->argv[0]) {
        dt_error("mpi launcher: launch needs np >= 1, hosts, a placement "
                 "and a program (a bug in dt: please report it)");
        return DT_ERR_INVALID;
    }
    if (L->fe) {
        dt_error("mpi launcher: this instance already launched a job");
        return DT_ERR_INVALID;
    }
    char why[512];
    dt_status_t v6 = mpi_ipv6_interface_refusal(L->conf.interface, why,
                                                sizeof why);
    for (size_t i = 0; v6 == DT_OK && i < spec->hosts->n; i++)
        v6 = mpi_ipv6_host_refusal(spec->hosts->hosts[i].name, why,
                                   sizeof why);
    if (v6 != DT_OK) {
        dt_error("mpi launcher: %s", why);
        return v6;
    }
    strv_t job_env = {0}, argv = {0};
    char **envp = NULL, *script = NULL;
    char nonce[PROLOGUE_NONCE_LEN + 1];
    char *identity = NULL;
    dt_status_t st = prologue_nonce(nonce);
    if (st == DT_OK)
        st = mpi_prologue_identity(&identity);
    if (st == DT_OK)
        st = prologue_script(identity, nonce, 1 /* relay Ctrl-Z */,
                             &script);
    free(identity);
    if (st == DT_OK)
        st = build_env(L, spec, &job_env, &envp);
    if (st == DT_OK)
        st = mpi_build_argv(&L->conf, spec,
                            (const char *const *)job_env.v, script, &argv);
    if (st == DT_OK) {
        frontend_args_t a = {
            .label = "mpirun",
            .argv = (const char *const *)argv.v,
            .envp = envp,
            .workdir = spec->workdir,
            /* mpirun passes its stdin to rank 0 (its --stdin default) */
            .pass_stdin = spec->forward_stdin,
            .tags = FRONTEND_TAGS_OMPI,
            .nonce = nonce,
            .np = spec->np,
            .output = spec->output,
            .output_arg = spec->output_arg,
            .on_line = mpi_on_line,
        };
        dt_debug("mpi launcher: %s -np %d ... (%zu arguments)", argv.v[0],
                 spec->np, argv.n);
        st = frontend_start(&a, &L->fe);
    }
    if (st == DT_OK)
        st = remember_job(L, spec);
    free(envp); /* pointers into environ and job_env */
    strv_free(&job_env);
    strv_free(&argv);
    free(script);
    return st;
}

static dt_status_t mpi_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev)
{
    mpi_launcher_t *L = ctx;
    if (!L || !L->fe)
        return DT_ERR_NOT_FOUND;
    return frontend_wait(L->fe, timeout_ms, ev);
}

/* Ctrl-Z's SIGSTOP and fg's SIGCONT: mpirun forwards SIGUSR2 and SIGCONT
 * to every rank's prologue shell (its SIGTSTP would stop the shell, not
 * the worker in its own session), which passes them on to the worker's
 * group and says so (prologue_script's relay_stops). Returns once every
 * rank still running confirmed; not DT_OK (and the ranks named) when
 * some did not within RELAY_WAIT_MS. A stop that reaches a rank after
 * fg's continue (its shell was stopped or slow) is confirmed late, and
 * the front-end code sends mpirun this request again (frontend.h). */
static dt_status_t relay_stop(mpi_launcher_t *L, int signo)
{
    const char *what = signo == SIGSTOP ? "stop" : "continue";
    if (frontend_failures(L->fe) > 0) {
        dt_error("mpi launcher: a rank failed and mpirun is ending the job "
                 "(signalling it now could crash it): the ranks did not %s",
                 what);
        return DT_ERR_IO;
    }
    int fe_signo = signo == SIGSTOP ? SIGUSR2 : SIGCONT;
    frontend_expect_acks(L->fe, signo, fe_signo);
    frontend_signal(L->fe, fe_signo);
    char missing[256];
    int n = frontend_await_acks(L->fe, RELAY_WAIT_MS, missing, sizeof missing);
    if (n == 0)
        return DT_OK;
    dt_error("mpi launcher: %d rank%s (%s) did not confirm the %s within "
             "%d s: %s",
             n, n == 1 ? "" : "s", missing, what, RELAY_WAIT_MS / 1000,
             signo == SIGSTOP ? "their workers may keep running"
                              : "their workers may stay stopped");
    return DT_ERR_TIMEOUT;
}

/* SIGTERM: mpirun forwards SIGUSR1 to every rank on every host, whose
 * prologue passes it on as SIGTERM and then exits 0 (prologue_script's
 * relay_stops): mpirun's own SIGTERM reached the ranks 1 s late and was
 * followed by its SIGKILL 1 s later, which cut a preemption checkpoint
 * short (dtctl exited 138, not 75); now [cluster] kill_grace rules.
 * SIGINT: mpirun ends the job itself. Once a rank failed, mpirun is
 * already aborting the job by itself, and Open MPI 4.1's mpirun can crash
 * when signalled then: leave it alone (SIGKILL still follows after
 * kill_grace if it hangs).
 * SIGKILL: mpirun would leave its ranks behind, so kill them here; the
 * remote daemons end theirs when mpirun is gone. */
static dt_status_t mpi_signal(void *ctx, int signo)
{
    mpi_launcher_t *L = ctx;
    if (!L || !L->fe)
        return DT_ERR_INVALID;
    if (signo == SIGSTOP || signo == SIGCONT)
        return frontend_running(L->fe) ? relay_stop(L, signo) : DT_OK;
    L->signalled = 1;
    if (signo == SIGKILL)
        frontend_kill_and_reap(L->fe);
    else if (frontend_failures(L->fe) == 0)
        frontend_signal(L->fe, signo == SIGTERM ? SIGUSR1 : signo);
    else
        dt_debug("mpi launcher: mpirun is aborting the job itself; not "
                 "signalling it");
    return DT_OK;
}

static void mpi_fini(void *ctx)
{
    mpi_launcher_t *L = ctx;
    if (!L)
        return;
    if (L->fe) {
        frontend_kill_and_reap(L->fe);
        if (L->signalled || frontend_failures(L->fe) > 0)
            mpi_sweep_remote(L);
        frontend_free(L->fe);
    }
    dt_hostlist_free(&L->hosts);
    free_conf(&L->conf);
    free(L);
}

static const dt_launcher_ops_t mpi_ops = {
    .size = sizeof(dt_launcher_ops_t),
    .init = mpi_init,
    .launch = mpi_launch,
    .wait = mpi_wait,
    .signal = mpi_signal,
    .run_on_host = mpi_run_on_host,
    .check = mpi_check,
    .fini = mpi_fini,
    .identify = mpi_identify,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_LAUNCHER,
    .name = "mpi",
    .version = "1.0",
    .description = "workers started by Open MPI's mpirun on the job's hosts",
    .keys = mpi_keys,
    .available = mpi_available,
    .ops = &mpi_ops,
};
