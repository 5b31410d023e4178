/* check.c — the mpi launcher's preflight for `dtctl check`: mpirun runs
 * and is Open MPI's, the [launcher.mpi] settings are ones mpirun takes,
 * and every other host of the list is reachable the way mpirun reaches it
 * (check_rsh.c). Every problem is reported with how to fix it. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <dt/log.h>
#include "../common/jobdir/jobdir.h"
#include <dt/hosts.h>
#include "check.h"
#include "check_rsh.h"
#include "mpi_ipv6.h"
#include "mpi_types.h"

typedef void (*report_fn)(void *, const char *, const char *);

/* `mpirun --version` runs and names Open MPI (whose options we pass). */
static void check_mpirun(const mpi_conf_t *c, report_fn report, void *arg)
{
    const char *argv[] = {c->mpirun, "--version", NULL};
    char *out = NULL, msg[1024];
    int code = 0;
    if (proc_run(argv, NULL, 30000, &out, &code) != DT_OK || code != 0) {
        snprintf(msg, sizeof msg,
                 "'%s --version' failed (exit %d): %.200s; reinstall Open "
                 "MPI (Debian: openmpi-bin) or fix [launcher.mpi] mpirun",
                 c->mpirun, code, out ? out : "");
        report(arg, "mpirun", msg);
    } else if (!strstr(out, "Open MPI")) {
        snprintf(msg, sizeof msg,
                 "'%s' is not Open MPI's mpirun (it says: %.*s): the mpi "
                 "launcher passes Open MPI options; point [launcher.mpi] "
                 "mpirun at Open MPI's",
                 c->mpirun, (int)strcspn(out, "\n"), out);
        report(arg, "mpirun", msg);
    } else {
        dt_debug("mpi check: %.*s", (int)strcspn(out, "\n"), out);
    }
    free(out);
}

/* value's policy (before any ':modifiers') is one of names. */
static int known_policy(const char *value, const char *const *names)
{
    size_t n = strcspn(value, ":");
    for (size_t i = 0; names[i]; i++)
        if (strlen(names[i]) == n && strncasecmp(value, names[i], n) == 0)
            return 1;
    return 0;
}

static void check_settings(const mpi_conf_t *c, report_fn report, void *arg)
{
    static const char *const map[] = {
        "slot", "hwthread", "core", "l1cache", "l2cache", "l3cache",
        "socket", "package", "numa", "board", "node", "seq", "dist", "ppr",
        NULL};
    static const char *const bind[] = {
        "none", "hwthread", "core", "l1cache", "l2cache", "l3cache",
        "socket", "package", "numa", "board", NULL};
    char msg[1024];
    if (*c->map_by && !known_policy(c->map_by, map)) {
        snprintf(msg, sizeof msg,
                 "[launcher.mpi] map_by = '%s' is not an Open MPI mapping "
                 "policy: use slot (dt's placement), node, core, socket, "
                 "ppr:N:RESOURCE, ...",
                 c->map_by);
        report(arg, "mpirun", msg);
    }
    if (*c->bind_to && !known_policy(c->bind_to, bind)) {
        snprintf(msg, sizeof msg,
                 "[launcher.mpi] bind_to = '%s' is not an Open MPI binding "
                 "policy: use none, core, socket, numa, hwthread, ...",
                 c->bind_to);
        report(arg, "mpirun", msg);
    }
    for (size_t i = 0; c->env_vars && c->env_vars[i]; i++) {
        const char *v = c->env_vars[i];
        int ok = *v && !isdigit((unsigned char)*v);
        for (const char *p = v; *p && ok; p++)
            ok = isalnum((unsigned char)*p) || *p == '_';
        if (!ok) {
            snprintf(msg, sizeof msg,
                     "[launcher.mpi] env_vars: '%s' is not a variable name "
                     "(letters, digits, _): fix the list",
                     v);
            report(arg, "mpirun", msg);
        }
    }
}

dt_status_t mpi_check(void *ctx, const dt_hostlist_t *hosts,
                      report_fn report, void *arg)
{
    mpi_launcher_t *L = ctx;
    if (!L || !hosts || !report)
        return DT_ERR_INVALID;
    check_mpirun(&L->conf, report, arg);
    check_settings(&L->conf, report, arg);
    char why[512];
    if (mpi_ipv6_interface_refusal(L->conf.interface, why, sizeof why))
        report(arg, "mpirun", why);
    strv_t agent = {0};
    dt_status_t st = DT_OK;
    for (size_t i = 0; i < hosts->n; i++) {
        const dt_host_t *h = &hosts->hosts[i];
        if (mpi_ipv6_host_refusal(h->name, why, sizeof why) != DT_OK) {
            report(arg, h->name, why);
            continue;
        }
        if (dt_host_is_local(h->name))
            continue; /* mpirun starts local ranks itself */
        if (!agent.v) {
            st = mpi_rsh_agent(&L->conf, &agent);
            if (st == DT_ERR_NOT_FOUND) {
                char msg[512];
                snprintf(msg, sizeof msg,
                         "mpirun's rsh agent (%s) is not on PATH, so no "
                         "other host can be reached: install "
                         "openssh-client or set [launcher.mpi] rsh_agent",
                         L->conf.rsh_agent && *L->conf.rsh_agent
                             ? L->conf.rsh_agent
                             : "ssh : rsh");
                report(arg, "mpirun", msg);
                for (; i < hosts->n; i++)
                    if (!dt_host_is_local(hosts->hosts[i].name))
                        report(arg, hosts->hosts[i].name,
                               "not checked: no rsh agent to reach it");
                st = DT_OK;
                break;
            }
            if (st != DT_OK)
                break;
        }
        mpi_check_host(&L->conf, &agent, h, report, arg);
    }
    strv_free(&agent);
    return st;
}
