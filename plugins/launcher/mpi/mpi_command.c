/* mpi_command.c — the mpirun command line (see mpi_command.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_command.h"
#include "mpi_types.h"

/* "h1:2,h2:2,[fd00::7]:2": every host that got ranks, with its slots. */
static void add_hosts(const dt_launch_spec_t *spec, strv_t *argv)
{
    size_t len = 1;
    for (size_t i = 0; i < spec->hosts->n; i++)
        len += strlen(spec->hosts->hosts[i].name) + 16;
    char *s = calloc(1, len), *p = s;
    if (!s) {
        argv->failed = 1;
        return;
    }
    /* An IPv6 address in brackets: mpirun reads "fd00::7:2" as the
     * address fd00::7:2 with one slot. (Open MPI 4.1 takes neither
     * spelling: mpi_ipv6.c refuses IPv6 hosts before this.) */
    for (size_t i = 0; i < spec->hosts->n; i++) {
        const char *name = spec->hosts->hosts[i].name;
        int v6 = strchr(name, ':') != NULL;
        p += sprintf(p, "%s%s%s%s:%d", p == s ? "" : ",", v6 ? "[" : "",
                     name, v6 ? "]" : "", spec->hosts->hosts[i].slots);
    }
    strv_add(argv, "--host");
    strv_add(argv, s);
    free(s);
}

/* [cluster] interface as Open MPI's include (or, when every item is a
 * "^name" exclusion, exclude) lists for both the data and control paths. */
static void add_interface(char **items, strv_t *argv)
{
    if (!items || !items[0])
        return;
    size_t len = 1;
    int inc = 0;
    for (size_t i = 0; items[i]; i++) {
        len += strlen(items[i]) + 1;
        inc += items[i][0] != '^';
    }
    char *s = calloc(1, len), *p = s;
    if (!s) {
        argv->failed = 1;
        return;
    }
    for (size_t i = 0; items[i]; i++) {
        int excl = items[i][0] == '^';
        if (inc ? excl : !excl)
            continue;
        p += sprintf(p, "%s%s", p == s ? "" : ",", items[i] + excl);
    }
    const char *mode = inc ? "include" : "exclude";
    strv_add(argv, "--mca");
    strv_addf(argv, "btl_tcp_if_%s", mode);
    strv_add(argv, s);
    strv_add(argv, "--mca");
    strv_addf(argv, "oob_tcp_if_%s", mode);
    strv_add(argv, s);
    free(s);
}

/* mpirun forwards SIGUSR1, SIGUSR2 and SIGCONT to the ranks by default
 * (the relays of dtctl's stop and of Ctrl-Z, prologue.h), unless the
 * user's MCA settings say "none" (then either would kill mpirun): ask for
 * them, unless extra_args set the parameter itself (mpirun refuses one
 * given twice). */
static void add_forward_signals(char **extra_args, strv_t *argv)
{
    for (size_t i = 0; extra_args && extra_args[i]; i++)
        if (strstr(extra_args[i], "_forward_signals"))
            return;
    strv_add(argv, "--mca");
    strv_add(argv, "ess_base_forward_signals");
    strv_add(argv, "SIGUSR1,SIGUSR2");
}

static void add_env_names(const char *const *env, strv_t *argv)
{
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i])
            continue;
        strv_add(argv, "-x");
        strv_addf(argv, "%.*s", (int)(eq - env[i]), env[i]);
    }
}

dt_status_t mpi_build_argv(const mpi_conf_t *c, const dt_launch_spec_t *spec,
                           const char *const *env, const char *script,
                           strv_t *argv)
{
    strv_add(argv, c->mpirun);
    if (geteuid() == 0)
        strv_add(argv, "--allow-run-as-root");
    strv_add(argv, "-np");
    strv_addf(argv, "%d", spec->np);
    add_hosts(spec, argv);
    /* "[jobid,rank]<stdout>:" on every line: output and exit markers of
     * each rank are told apart by it. */
    strv_add(argv, "--tag-output");
    if (c->oversubscribe)
        strv_add(argv, "--oversubscribe");
    if (c->map_by && *c->map_by) {
        strv_add(argv, "--map-by");
        strv_add(argv, c->map_by);
    }
    if (c->bind_to && *c->bind_to) {
        strv_add(argv, "--bind-to");
        strv_add(argv, c->bind_to);
    }
    add_interface(c->interface, argv);
    if (c->rsh_agent && *c->rsh_agent) {
        strv_add(argv, "--mca");
        strv_add(argv, "plm_rsh_agent");
        strv_add(argv, c->rsh_agent);
    }
    if (spec->workdir) {
        strv_add(argv, "--wdir");
        strv_add(argv, spec->workdir);
    }
    add_env_names(env, argv);
    add_forward_signals(c->extra_args, argv);
    strv_add_all(argv, (const char *const *)c->extra_args);
    strv_add(argv, "sh");
    strv_add(argv, "-c");
    strv_add(argv, script);
    strv_add(argv, "dt-worker");
    strv_add_all(argv, spec->argv);
    return strv_ok(argv) ? DT_OK : DT_ERR_NOMEM;
}
