/* run_on_host.c — a short command on one execution host, for `dtctl
 * check` and the storage plugins: `qrsh -now no -l hostname=HOST CMD`, an
 * interactive job of its own pinned to that host (with the configured
 * queue, project and resource requests), which SGE starts and accounts
 * for. qrsh runs CMD through the remote user's shell, so argv goes as one
 * POSIX-quoted string. Output (stdout and stderr together) and exit code
 * come back; the whole thing is bounded in time, and a job left behind by
 * a timeout is deleted by its unique name. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/hosts.h>
#include "sge.h"

#define RUN_TIMEOUT_MS 90000

/* Did qrsh itself fail (before anything ran, so its message is first)? */
static int qrsh_failed(const char *out)
{
    static const char *const own[] = {"Unable to run job",
                                      "can't resolve hostname", "denied: ",
                                      "error: ", NULL};
    for (size_t i = 0; own[i]; i++)
        if (strncmp(out, own[i], strlen(own[i])) == 0)
            return 1;
    return 0;
}

/* The execution host for h: a name for this machine (localhost,
 * 127.0.0.1, the default host list) is its host name as SGE knows it. */
static void exec_host(const dt_host_t *h, char *buf, size_t len)
{
    snprintf(buf, len, "%s", h->name);
    char self[256];
    if (!dt_host_is_local(h->name) || gethostname(self, sizeof self) != 0)
        return;
    self[sizeof self - 1] = '\0';
    if (*self)
        snprintf(buf, len, "%s", self);
}

dt_status_t sge_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code)
{
    static unsigned seq;
    sge_launcher_t *L = ctx;
    if (!L || !host || !host->name || !argv || !argv[0] || !output ||
        !exit_code)
        return DT_ERR_INVALID;
    *output = NULL;
    const sge_conf_t *c = &L->conf;
    char name[64];
    snprintf(name, sizeof name, "dt-probe-%ld-%u", (long)getpid(), ++seq);
    strbuf_t cmd = {0}, hostreq = {0};
    for (size_t i = 0; argv[i]; i++) {
        if (i)
            sb_add(&cmd, " ");
        sb_quote(&cmd, argv[i]);
    }
    char node[256];
    exec_host(host, node, sizeof node);
    sb_addf(&hostreq, "hostname=%s", node);
    size_t n = 0, max = 16 + 2 * c->nresources;
    const char **q = calloc(max, sizeof *q);
    /* qrsh gets our environment only with -V (not used); the job token
     * stays here all the same. */
    char **env = proc_env_without_token();
    dt_status_t st = DT_ERR_NOMEM;
    if (!q || !env || sb_status(&cmd) != DT_OK ||
        sb_status(&hostreq) != DT_OK)
        goto out;
    q[n++] = "qrsh";
    q[n++] = "-now";
    q[n++] = "no"; /* wait for a free slot instead of failing at once */
    q[n++] = "-N";
    q[n++] = name;
    if (c->verify) { /* a host SGE does not know fails now, not never */
        q[n++] = "-w";
        q[n++] = "e";
    }
    q[n++] = "-l";
    q[n++] = hostreq.s;
    if (c->queue && *c->queue) {
        q[n++] = "-q";
        q[n++] = c->queue;
    }
    if (c->project && *c->project) {
        q[n++] = "-P";
        q[n++] = c->project;
    }
    for (size_t i = 0; i < c->nresources; i++) {
        q[n++] = "-l";
        q[n++] = c->resources[i];
    }
    q[n++] = cmd.s;
    q[n] = NULL;
    st = proc_run(q, env, RUN_TIMEOUT_MS, output, exit_code);
    if (st == DT_ERR_TIMEOUT) {
        const char *del[] = {"qdel", name, NULL};
        char *out = NULL;
        int code = 0;
        if (proc_run(del, env, 30000, &out, &code) != DT_OK || code)
            dt_warn("sge launcher: could not delete probe job %s: %s; "
                    "qdel %s",
                    name, out ? out : "", name);
        free(out);
    }
    if (st != DT_OK) {
        dt_error("sge launcher: running '%s' on host %s with qrsh failed: "
                 "%s",
                 argv[0], host->name, dt_status_str(st));
    } else if (*exit_code != 0 && qrsh_failed(*output)) {
        /* qrsh's own failure (unknown host, rejected request): nothing
         * ran there */
        dt_error("sge launcher: qrsh could not run '%s' on host %s: %.*s; "
                 "the host list must name execution hosts (qconf -sel)",
                 argv[0], host->name, (int)strcspn(*output, "\n"), *output);
        free(*output);
        *output = NULL;
        st = DT_ERR_PEER;
    }
out:
    free(q);
    free(env);
    sb_free(&cmd);
    sb_free(&hostreq);
    return st;
}
