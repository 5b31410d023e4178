/* run_on_host.c — a short command on one host, for `dtctl check` and the
 * storage plugins: on this machine directly; on another through the rsh
 * agent mpirun itself uses (plm_rsh_agent, or the ssh command built from
 * the ssh_* keys), so the probe sees what mpirun's daemons would. ssh
 * joins its arguments into one shell command line, so argv goes as one
 * POSIX-quoted string. Host keys stay verified (BatchMode: no prompt). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "../common/jobdir/jobdir.h"
#include <dt/hosts.h>
#include "check_rsh.h"
#include "mpi_types.h"
#include "run_on_host.h"

#define RUN_TIMEOUT_MS 60000

/* argv[0] argv[1] ... as one shell command line, each word quoted. */
static dt_status_t quoted_command(const char *const *argv, char **cmd)
{
    strbuf_t b = {0};
    for (size_t i = 0; argv[i]; i++) {
        if (i)
            sb_add(&b, " ");
        sb_quote(&b, argv[i]);
    }
    dt_status_t st = sb_status(&b);
    if (st != DT_OK) {
        sb_free(&b);
        return st;
    }
    *cmd = b.s;
    return DT_OK;
}

/* The agent, its ssh options, the host and the quoted command. */
static dt_status_t remote_argv(const mpi_conf_t *c, const dt_host_t *h,
                               const char *cmd, strv_t *argv)
{
    strv_t agent = {0};
    dt_status_t st = mpi_rsh_agent(c, &agent);
    if (st == DT_ERR_NOT_FOUND) {
        dt_error("mpi launcher: cannot reach host %s: mpirun's rsh agent "
                 "(%s) is not on PATH; install openssh-client or set "
                 "[launcher.mpi] rsh_agent",
                 h->name, *c->rsh_agent ? c->rsh_agent : "ssh : rsh");
        return st;
    }
    if (st != DT_OK)
        return st;
    const char *base = strrchr(agent.v[0], '/');
    base = base ? base + 1 : agent.v[0];
    strv_add_all(argv, (const char *const *)agent.v);
    if (strcmp(base, "ssh") == 0) {
        /* mpirun cannot answer a prompt either; an unknown host key is
         * refused, never accepted. */
        strv_add(argv, "-o");
        strv_add(argv, "BatchMode=yes");
        strv_add(argv, "-o");
        strv_add(argv, "ConnectTimeout=10");
    }
    strv_add(argv, h->name);
    strv_add(argv, cmd);
    strv_free(&agent);
    return strv_ok(argv) ? DT_OK : DT_ERR_NOMEM;
}

dt_status_t mpi_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code)
{
    mpi_launcher_t *L = ctx;
    if (!L || !host || !host->name || !argv || !argv[0] || !output ||
        !exit_code)
        return DT_ERR_INVALID;
    *output = NULL;
    /* The job token stays here: a probe has no use for it. */
    char **env = proc_env_without_token();
    if (!env)
        return DT_ERR_NOMEM;
    char *cmd = NULL;
    strv_t full = {0};
    dt_status_t st;
    if (dt_host_is_local(host->name)) {
        st = proc_run(argv, env, RUN_TIMEOUT_MS, output, exit_code);
        if (st != DT_OK)
            dt_error("mpi launcher: running '%s' on %s (this machine) "
                     "failed: %s",
                     argv[0], host->name, dt_status_str(st));
        goto out;
    }
    st = quoted_command(argv, &cmd);
    if (st == DT_OK)
        st = remote_argv(&L->conf, host, cmd, &full);
    if (st != DT_OK)
        goto out;
    st = proc_run((const char *const *)full.v, env, RUN_TIMEOUT_MS, output,
                  exit_code);
    if (st != DT_OK) {
        dt_error("mpi launcher: running '%s' on %s through '%s' failed: %s",
                 argv[0], host->name, full.v[0], dt_status_str(st));
    } else if (*exit_code == 255) {
        /* ssh exits 255 for its own failure (refused key, unreachable),
         * otherwise with the command's status */
        dt_error("mpi launcher: cannot reach host %s through mpirun's rsh "
                 "agent '%s': %.*s; run `dtctl check --launcher=mpi` for "
                 "the fix",
                 host->name, full.v[0], (int)strcspn(*output, "\r\n"),
                 *output);
        free(*output);
        *output = NULL;
        st = DT_ERR_PEER;
    }
out:
    strv_free(&full);
    free(cmd);
    free(env);
    return st;
}
