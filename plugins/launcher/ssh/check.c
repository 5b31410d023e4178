/* check.c — preflight for `dtctl check`: every host reachable, its host
 * key known, the login working, and what the remote side needs there
 * (/bin/sh, cat, /proc for the group id, the working directory). All
 * hosts are tried in parallel and every problem is reported. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "check.h"
#include "connect.h"
#include "run_on_host.h"
#include "script.h"
#include "ssh_types.h"

/* Each line the probe prints about a missing piece starts with this: the
 * login shell's own output (a ~/.bashrc's pyenv or conda noise, a motd on
 * stderr) comes back in the same text and is not a problem of the host
 * (it failed `dtctl check` for a host where jobs ran). */
#define PROBLEM_MARK "dt-check: "

/* One line per missing piece; no marked line when all is there. */
static char *probe_command(const ssh_opts_t *o)
{
    char *qdir = o->workdir ? ssh_sh_quote(o->workdir) : NULL;
    char *cmd = NULL;
    int r = asprintf(
        &cmd,
        "dt_nl=$(printf '\\nx'); dt_nl=${dt_nl%%x}; "
        "command -v cat >/dev/null 2>&1 || echo '" PROBLEM_MARK
        "cat is not on PATH: install coreutils'; "
        "[ -r /proc/self/stat ] || echo '" PROBLEM_MARK
        "/proc is not mounted: dt finds the worker process group there'; "
        "command -v setsid >/dev/null 2>&1 || echo '" PROBLEM_MARK
        "setsid is not on PATH (util-linux): needed where sshd does not "
        "start sessions as group leaders'; "
        "%s%s%s"
        "exit 0\n",
        qdir ? "[ -d " : "", qdir ? qdir : "",
        qdir ? " ] || echo \"" PROBLEM_MARK
               "[launcher.ssh] workdir does not exist here\"; "
             : "");
    free(qdir);
    return r < 0 ? NULL : cmd;
}

static void report_lines(const char *host, char *text,
                         void (*report)(void *, const char *, const char *),
                         void *arg)
{
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save))
        if (strncmp(l, PROBLEM_MARK, strlen(PROBLEM_MARK)) == 0)
            report(arg, host, l + strlen(PROBLEM_MARK));
}

dt_status_t ssh_check(void *ctx, const dt_hostlist_t *hosts,
                      void (*report)(void *arg, const char *host,
                                     const char *problem),
                      void *arg)
{
    ssh_launcher_t *L = ctx;
    if (!L || !hosts || !report)
        return DT_ERR_INVALID;
    ssh_conn_t *c = calloc(hosts->n ? hosts->n : 1, sizeof *c);
    char *cmd = probe_command(&L->o);
    dt_status_t st = DT_OK;
    if (!c || !cmd) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < hosts->n; i++) {
        c[i].name = hosts->hosts[i].name;
        c[i].port = hosts->hosts[i].port;
    }
    ssh_conn_open_all(&L->o, c, hosts->n, 0, NULL);
    for (size_t i = 0; i < hosts->n; i++) {
        if (!c[i].s) {
            report(arg, c[i].name, c[i].err[0] ? c[i].err : "not reached");
            continue;
        }
        char *out = NULL;
        int code = 0;
        if (ssh_run_on_conn(&c[i], cmd, &out, &code) != DT_OK)
            report(arg, c[i].name,
                   "logged in, but cannot run commands (see the error "
                   "above)");
        else
            report_lines(c[i].name, out, report, arg);
        free(out);
    }
out:
    for (size_t i = 0; c && i < hosts->n; i++)
        ssh_conn_close(&c[i]);
    free(c);
    free(cmd);
    return st;
}
