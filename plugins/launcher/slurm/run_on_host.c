/* run_on_host.c — a short command on one node, for `dtctl check` and the
 * storage plugins: `srun -N1 -n1 -w NODE --quiet -- argv...`. Inside an
 * allocation it is a step there (sharing the allocation's CPUs with any
 * running step: --overlap); outside it is a one-task job of its own with
 * the configured partition, time limit and account, which gives up
 * rather than wait in the queue (--immediate). Output (stdout and stderr
 * together) and exit code come back; the whole thing is bounded in time,
 * and a job left behind by a timeout is cancelled by its unique name. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "../common/jobdir/jobdir.h"
#include <dt/hosts.h>
#include "slurm.h"

#define RUN_TIMEOUT_MS 90000
#define QUEUE_WAIT_S 30 /* outside an allocation: wait at most this */

/* The Slurm node for h: a name for this machine (localhost, 127.0.0.1,
 * the default host list) is its short host name, which Slurm nodes are
 * conventionally named after; any other name is taken as a node name. */
static void node_name(const dt_host_t *h, char *buf, size_t len)
{
    snprintf(buf, len, "%s", h->name);
    char self[256];
    if (!dt_host_is_local(h->name) || gethostname(self, sizeof self) != 0)
        return;
    self[sizeof self - 1] = '\0';
    self[strcspn(self, ".")] = '\0';
    if (*self)
        snprintf(buf, len, "%s", self);
}

static void add_opt(strv_t *argv, const char *opt, const char *value)
{
    if (value && *value)
        strv_addf(argv, "%s=%s", opt, value);
}

static dt_status_t build(const slurm_launcher_t *L, const dt_host_t *h,
                         const char *name, const char *const *cmd,
                         strv_t *argv)
{
    const slurm_conf_t *c = &L->conf;
    strv_add(argv, "srun");
    strv_add(argv, "--nodes=1");
    strv_add(argv, "--ntasks=1");
    char node[256];
    node_name(h, node, sizeof node);
    strv_addf(argv, "--nodelist=%s", node);
    strv_add(argv, "--quiet");
    strv_addf(argv, "--job-name=%s", name);
    if (L->inside) {
        strv_add(argv, "--overlap");
    } else {
        strv_addf(argv, "--immediate=%d", QUEUE_WAIT_S);
        add_opt(argv, "--partition", c->partition);
        add_opt(argv, "--time", c->time_limit);
        add_opt(argv, "--account", c->account);
    }
    strv_add(argv, "--");
    strv_add_all(argv, cmd);
    return strv_ok(argv) ? DT_OK : DT_ERR_NOMEM;
}

/* Drop srun's report of the task's end ("srun: error: NODE: task 0:
 * Exited with exit code 3"; the exit code says it) from out, in place.
 * Returns 1 when another line of srun's own is left: srun itself failed. */
static int srun_own_lines(char *out)
{
    int own = 0;
    char *w = out;
    for (char *l = out; *l;) {
        size_t n = strcspn(l, "\n");
        size_t len = n + (l[n] == '\n');
        int is_srun = strncmp(l, "srun: ", 6) == 0;
        int task_end = is_srun && memmem(l, n, ": task 0: ", 10) != NULL;
        own |= is_srun && !task_end;
        if (!task_end) {
            memmove(w, l, len);
            w += len;
        }
        l += len;
    }
    *w = '\0';
    return own;
}

dt_status_t slurm_run_on_host(void *ctx, const dt_host_t *host,
                              const char *const *argv, char **output,
                              int *exit_code)
{
    static unsigned seq;
    slurm_launcher_t *L = ctx;
    if (!L || !host || !host->name || !argv || !argv[0] || !output ||
        !exit_code)
        return DT_ERR_INVALID;
    *output = NULL;
    char name[64];
    snprintf(name, sizeof name, "dt-probe-%ld-%u", (long)getpid(), ++seq);
    strv_t full = {0};
    /* srun exports our environment; the job token stays here. */
    char **env = proc_env_without_token();
    if (!env)
        return DT_ERR_NOMEM;
    dt_status_t st = build(L, host, name, argv, &full);
    if (st == DT_OK)
        st = proc_run((const char *const *)full.v, env, RUN_TIMEOUT_MS,
                      output, exit_code);
    if (st == DT_ERR_TIMEOUT && !L->inside) {
        const char *cancel[] = {"scancel", "--quiet", "--name", name, NULL};
        char *out = NULL;
        int code = 0;
        if (proc_run(cancel, env, 30000, &out, &code) != DT_OK || code)
            dt_warn("slurm launcher: could not cancel probe job %s: %s; "
                    "scancel --name %s",
                    name, out ? out : "", name);
        free(out);
    }
    if (st != DT_OK) {
        dt_error("slurm launcher: running '%s' on node %s with srun "
                 "failed: %s",
                 argv[0], host->name, dt_status_str(st));
    } else if (srun_own_lines(*output) && *exit_code != 0) {
        /* srun's own failure (unknown node, no resources): nothing ran */
        const char *why = *output;
        while (strncmp(why, "srun: ", 6) != 0 && strchr(why, '\n'))
            why = strchr(why, '\n') + 1; /* srun's first line of its own */
        dt_error("slurm launcher: srun could not run '%s' on node %s: "
                 "%.*s; the host list must name Slurm nodes (sinfo -N)",
                 argv[0], host->name, (int)strcspn(why, "\n"), why);
        free(*output);
        *output = NULL;
        st = DT_ERR_PEER;
    }
    strv_free(&full);
    free(env);
    return st;
}
