/* check_rsh.c — can mpirun start its daemon on a remote host? It reaches
 * the host with its rsh agent (plm_rsh_agent, ssh by default) and runs
 * `orted` there. Probe the same way: the same agent and arguments, with
 * ssh's BatchMode (mpirun cannot answer a password or host-key prompt
 * either), and look for orted on the non-interactive PATH. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/env.h>
#include "../common/jobdir/jobdir.h"
#include "check_rsh.h"
#include "mpi_types.h"

#define NO_ORTED "DT-NO-ORTED"

/* The agent as words: config, else an --mca plm_rsh_agent in extra_args,
 * else OMPI_MCA_plm_rsh_agent, else Open MPI's default "ssh : rsh"; of
 * "A : B" alternatives the first one on PATH, as mpirun picks. */
static const char *agent_text(const mpi_conf_t *c)
{
    if (c->rsh_agent && *c->rsh_agent)
        return c->rsh_agent;
    for (size_t i = 0; c->extra_args && c->extra_args[i]; i++)
        if ((!strcmp(c->extra_args[i], "--mca") ||
             !strcmp(c->extra_args[i], "-mca")) && c->extra_args[i + 1] &&
            !strcmp(c->extra_args[i + 1], "plm_rsh_agent") &&
            c->extra_args[i + 2])
            return c->extra_args[i + 2];
    const char *env = getenv("OMPI_MCA_plm_rsh_agent");
    return env && *env ? env : "ssh : rsh";
}

dt_status_t mpi_rsh_agent(const mpi_conf_t *c, strv_t *words)
{
    char *copy = strdup(agent_text(c)), *save = NULL;
    if (!copy)
        return DT_ERR_NOMEM;
    dt_status_t st = DT_ERR_NOT_FOUND;
    for (char *alt = strtok_r(copy, ":", &save); alt && st != DT_OK;
         alt = strtok_r(NULL, ":", &save)) {
        char *s2 = NULL, *w = strtok_r(alt, " \t", &s2);
        if (!w || !dt_program_found(w))
            continue;
        strv_free(words);
        for (; w; w = strtok_r(NULL, " \t", &s2))
            strv_add(words, w);
        st = strv_ok(words) ? DT_OK : DT_ERR_NOMEM;
    }
    free(copy);
    return st;
}

/* What to do about the agent's failure, from what it printed. kh: the
 * known_hosts file the agent checks (ssh_known_hosts, else ssh's own). */
static void explain(const char *host, const char *agent, const char *kh,
                    const char *out, char *msg, size_t len)
{
    char first[256];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(out, "\r\n"), out);
    if (strstr(out, "IDENTIFICATION HAS CHANGED"))
        snprintf(msg, len,
                 "its ssh host key CHANGED (mpirun's %s refuses it): if "
                 "the change is expected, ssh-keygen -f %s -R %s, then "
                 "verify and add the new key (ssh-keyscan %s >> %s)",
                 agent, kh, host, host, kh);
    else if (strstr(out, "Host key verification failed"))
        snprintf(msg, len,
                 "its ssh host key is not known, so mpirun's %s cannot log "
                 "in: verify the fingerprint, then ssh-keyscan %s >> %s",
                 agent, host, kh);
    else if (strstr(out, "Permission denied"))
        snprintf(msg, len,
                 "%s login refused without a password (mpirun cannot type "
                 "one): install a key there (ssh-copy-id %s) or name it in "
                 "[launcher.mpi] rsh_agent = 'ssh -i KEY'",
                 agent, host);
    else if (strstr(out, "Could not resolve") ||
             strstr(out, "Name or service not known"))
        snprintf(msg, len,
                 "the name does not resolve (%s): fix the host list, or "
                 "DNS / /etc/hosts",
                 first);
    else
        snprintf(msg, len,
                 "not reachable through mpirun's rsh agent '%s': %s; start "
                 "sshd there, open the port, or set [launcher.mpi] "
                 "rsh_agent (e.g. 'ssh -p PORT')",
                 agent, *first ? first : "no reason given");
}

void mpi_check_host(const mpi_conf_t *c, const strv_t *agent,
                    const dt_host_t *h,
                    void (*report)(void *, const char *, const char *),
                    void *arg)
{
    strv_t argv = {0};
    char msg[1024], *out = NULL;
    int code = 0;
    const char *base = strrchr(agent->v[0], '/');
    base = base ? base + 1 : agent->v[0];
    strv_add_all(&argv, (const char *const *)agent->v);
    if (strcmp(base, "ssh") == 0) {
        strv_add(&argv, "-o");
        strv_add(&argv, "BatchMode=yes");
        strv_add(&argv, "-o");
        strv_add(&argv, "ConnectTimeout=10");
    }
    strv_add(&argv, h->name);
    strv_add(&argv, "command -v orted >/dev/null 2>&1 || echo " NO_ORTED);
    if (!strv_ok(&argv)) {
        report(arg, h->name, "out of memory while checking the host");
        goto out;
    }
    if (h->port && h->port != 22) {
        snprintf(msg, sizeof msg,
                 "the host list gives port %d, but mpirun's rsh agent "
                 "cannot take a port per host: use a Host entry in "
                 "~/.ssh/config or [launcher.mpi] rsh_agent = 'ssh -p %d'",
                 h->port, h->port);
        report(arg, h->name, msg);
    }
    if (proc_run((const char *const *)argv.v, NULL, 30000, &out, &code) !=
        DT_OK) {
        snprintf(msg, sizeof msg, "could not run the rsh agent '%s'",
                 agent->v[0]);
        report(arg, h->name, msg);
    } else if (code != 0) {
        explain(h->name, agent->v[0],
                c->ssh_known_hosts && *c->ssh_known_hosts ? c->ssh_known_hosts
                                                          : "~/.ssh/known_hosts",
                out ? out : "", msg, sizeof msg);
        report(arg, h->name, msg);
    } else if (strstr(out, NO_ORTED)) {
        snprintf(msg, sizeof msg,
                 "reachable, but Open MPI's orted is not on the "
                 "non-interactive PATH there, so %s cannot start ranks: "
                 "install the same Open MPI there (Debian: openmpi-bin) or "
                 "add --prefix DIR to [launcher.mpi] extra_args",
                 c->mpirun);
        report(arg, h->name, msg);
    }
out:
    free(out);
    strv_free(&argv);
}
