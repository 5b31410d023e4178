/* submit.c — launch(): the private job directory, the token file, the job
 * script, then `qsub -sync y`, which stays with dtctl until the job ends.
 * launch() returns once SGE accepted the job (its number is known); the
 * job may still wait in the queue. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/env.h>
#include <dt/log.h>
#include "sge.h"

#define QSUB_OUTPUT_MAX (64 * 1024)

static dt_status_t add_arg(const char ***argv, size_t *n, size_t *cap,
                           const char *arg)
{
    if (*n + 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 32;
        const char **v = realloc(*argv, c * sizeof *v);
        if (!v)
            return DT_ERR_NOMEM;
        *argv = v;
        *cap = c;
    }
    (*argv)[(*n)++] = arg;
    (*argv)[*n] = NULL;
    return DT_OK;
}

/* qsub -sync y -terse -N NAME -pe PE NP -S /bin/sh -wd DIR -o/-e DIR/...
 * [-w e] [-q Q] [-l R]... [-P P] EXTRA... DIR/job.sh */
static dt_status_t qsub_argv(const sge_launcher_t *L, int np, char *slots,
                             char *out, char *err, char *script,
                             const char ***argv)
{
    const sge_conf_t *c = &L->conf;
    size_t n = 0, cap = 0;
    dt_status_t st = DT_OK;
    *argv = NULL;
    snprintf(slots, 16, "%d", np);
#define A(x)                                                                  \
    do {                                                                      \
        if (st == DT_OK)                                                      \
            st = add_arg(argv, &n, &cap, (x));                                \
    } while (0)
    A("qsub"); A("-sync"); A("y"); A("-terse"); A("-N"); A(L->name);
    A("-pe"); A(c->pe); A(slots); A("-S"); A("/bin/sh");
    A("-wd"); A(L->dir); A("-o"); A(out); A("-e"); A(err);
    if (c->verify) {
        A("-w");
        A("e");
    }
    if (c->queue && *c->queue) {
        A("-q");
        A(c->queue);
    }
    for (size_t i = 0; i < c->nresources; i++) {
        A("-l");
        A(c->resources[i]);
    }
    if (c->project && *c->project) {
        A("-P");
        A(c->project);
    }
    for (size_t i = 0; i < c->nextra; i++)
        A(c->extra_args[i]);
    A(script);
#undef A
    return st;
}

/* Collect qsub's output until its first stdout line (the job number with
 * -terse) or until it exits (rejected). */
static dt_status_t await_job_id(sge_launcher_t *L)
{
    long long deadline = dt_clock_now_ms() + L->conf.submit_timeout_ms;
    for (;;) {
        char *nl = L->qsub_out.s ? strchr(L->qsub_out.s, '\n') : NULL;
        if (nl) {
            size_t len = (size_t)(nl - L->qsub_out.s);
            if (len == 0 || len >= sizeof L->job_id ||
                strspn(L->qsub_out.s, "0123456789") != len) {
                dt_error("sge: qsub answered '%.*s' instead of a job "
                         "number; is this Grid Engine's qsub?",
                         (int)len, L->qsub_out.s);
                return DT_ERR_IO;
            }
            memcpy(L->job_id, L->qsub_out.s, len);
            L->job_id[len] = '\0';
            return DT_OK;
        }
        if (L->qsub.out_fd < 0) {
            int status = 0;
            proc_reaped(&L->qsub, &status, 1);
            proc_read(&L->qsub.err_fd, &L->qsub_err, QSUB_OUTPUT_MAX);
            L->job_over = 1;
            const char *why = L->qsub_err.s ? L->qsub_err.s : "";
            dt_error("sge: qsub rejected the job (exit %d): %s%s",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                     *why ? why : "no message\n",
                     strstr(why, "parallel environment")
                         ? "check [launcher.sge] pe (qconf -spl lists the "
                           "parallel environments)"
                         : "check the [launcher.sge] settings and "
                           "`qstat -g c` for queues with free slots");
            return DT_ERR_IO;
        }
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0) {
            dt_error("sge: qsub gave no job number within %d s; stopping "
                     "it (raise [launcher.sge] submit_timeout if the "
                     "qmaster is slow)",
                     L->conf.submit_timeout_ms / 1000);
            return DT_ERR_TIMEOUT;
        }
        struct pollfd p[2] = {{L->qsub.out_fd, POLLIN, 0},
                              {L->qsub.err_fd, POLLIN, 0}};
        if (poll(p, 2, (int)left) < 0 && errno != EINTR)
            return DT_ERR_IO;
        proc_read(&L->qsub.out_fd, &L->qsub_out, QSUB_OUTPUT_MAX);
        proc_read(&L->qsub.err_fd, &L->qsub_err, QSUB_OUTPUT_MAX);
    }
}

static dt_status_t write_token(const sge_launcher_t *L,
                               const dt_launch_spec_t *spec)
{
    const char *tok = dt_env_value(spec->env, "DT_JOB_TOKEN");
    if (!tok) {
        dt_error("sge: the job environment has no DT_JOB_TOKEN (a bug in "
                 "dt: please report it)");
        return DT_ERR_INTERNAL;
    }
    strbuf_t b = {0};
    sb_addf(&b, "%s\n", tok);
    dt_status_t st = sb_status(&b);
    if (st == DT_OK)
        st = jobdir_write(L->dir, "token", b.s, b.len, 0600);
    explicit_bzero(b.s, b.len);
    sb_free(&b);
    return st;
}

static dt_status_t prepare_dir(sge_launcher_t *L, const dt_launch_spec_t *spec,
                               const char *job_id)
{
    char name[64];
    snprintf(name, sizeof name, "job-%s", job_id);
    DT_CHECK(jobdir_create(L->conf.shared_dir, name, &L->dir));
    DT_CHECK(write_token(L, spec));
    if (L->conf.export_env) {
        char **env = proc_env_without_token();
        dt_status_t est = env ? sge_write_env(L->dir, spec, env) : DT_ERR_NOMEM;
        free(env);
        DT_CHECK(est);
    }
    char cwd[4096];
    const char *wd = spec->workdir;
    if (!wd) {
        if (!getcwd(cwd, sizeof cwd)) {
            dt_error("sge: cannot tell dtctl's working directory (%s); set "
                     "[cluster] workdir",
                     strerror(errno));
            return DT_ERR_IO;
        }
        wd = cwd;
    }
    strbuf_t script = {0};
    dt_status_t st = sge_script(spec, L->dir, wd, L->conf.export_env, &script);
    if (st == DT_OK)
        st = jobdir_write(L->dir, "job.sh", script.s, script.len, 0700);
    sb_free(&script);
    return st;
}

/* "slots N" / "control_slaves TRUE" of `qconf -sp NAME` output. */
static long pe_field_slots(const char *conf)
{
    const char *p = strstr(conf, "\nslots");
    if (!p && strncmp(conf, "slots", 5) == 0)
        p = conf - 1;
    return p ? strtol(p + 6, NULL, 10) : -1;
}

static int pe_controls_slaves(const char *conf)
{
    const char *p = strstr(conf, "control_slaves");
    if (!p)
        return 0;
    p += strlen("control_slaves");
    while (*p == ' ' || *p == '\t')
        p++;
    return strncasecmp(p, "TRUE", 4) == 0;
}

/* [launcher.sge] pe unset: the cell's one parallel environment that can
 * hold np workers started by qrsh -inherit (control_slaves TRUE, slots >=
 * np), said at -v; otherwise an error that lists them all. */
dt_status_t sge_pick_pe(sge_launcher_t *L, int np)
{
    const char *spl[] = {"qconf", "-spl", NULL};
    char *list = NULL, *save = NULL;
    int code = 0;
    strbuf_t all = {0};
    dt_status_t st = DT_ERR_CONFIG;
    if (proc_run(spl, NULL, 30000, &list, &code) != DT_OK || code != 0) {
        dt_error("sge: [launcher.sge] pe is not set and `qconf -spl` "
                 "failed (%s): name the parallel environment, e.g. --set "
                 "launcher.sge.pe=mpi",
                 list && *list ? list : "no output");
        free(list);
        return DT_ERR_CONFIG;
    }
    int fits = 0, total = 0;
    for (char *name = strtok_r(list, " \t\r\n", &save); name;
         name = strtok_r(NULL, " \t\r\n", &save)) {
        if (strncmp(name, "no_", 3) == 0 && strstr(name, "defined"))
            break; /* "no parallel environment defined" */
        const char *sp[] = {"qconf", "-sp", name, NULL};
        char *conf = NULL;
        long slots = -1;
        int ctl = 0;
        if (proc_run(sp, NULL, 30000, &conf, &code) == DT_OK && code == 0 &&
            conf) {
            slots = pe_field_slots(conf);
            ctl = pe_controls_slaves(conf);
        }
        free(conf);
        total++;
        int ok = ctl && slots >= np;
        sb_addf(&all, "%s%s (slots %ld, control_slaves %s)%s",
                total > 1 ? ", " : "", name, slots, ctl ? "TRUE" : "FALSE",
                ok ? "" : slots < np ? ": too few slots" : "");
        if (ok && ++fits == 1) {
            free(L->auto_pe);
            L->auto_pe = strdup(name);
        }
    }
    if (fits == 1 && L->auto_pe) {
        L->conf.pe = L->auto_pe;
        dt_debug("sge: [launcher.sge] pe is not set: using parallel "
                 "environment %s, the only one of this cell that can hold "
                 "%d workers (%s)",
                 L->conf.pe, np, all.s ? all.s : "");
        st = DT_OK;
    } else if (total == 0) {
        dt_error("sge: [launcher.sge] pe is not set and this cell has no "
                 "parallel environment (`qconf -spl` lists none); an "
                 "administrator adds one with control_slaves TRUE (qconf "
                 "-ap), then --set launcher.sge.pe=NAME");
    } else {
        dt_error("sge: [launcher.sge] pe is not set and %s of this cell's "
                 "parallel environments can hold %d workers started with "
                 "qrsh -inherit (control_slaves TRUE, slots >= %d): %s; "
                 "name one, e.g. --set launcher.sge.pe=NAME",
                 fits ? "more than one" : "none", np, np,
                 all.s ? all.s : "");
    }
    if (st != DT_OK) {
        free(L->auto_pe);
        L->auto_pe = NULL;
    }
    if (sb_status(&all) == DT_ERR_NOMEM)
        st = DT_ERR_NOMEM;
    sb_free(&all);
    free(list);
    return st;
}

dt_status_t sge_launch(void *ctx, const dt_launch_spec_t *spec)
{
    sge_launcher_t *L = ctx;
    if (!L || !spec || spec->np < 1 || !spec->argv || !spec->argv[0]) {
        dt_error("sge: launch needs np >= 1 and a program (a bug in dt: "
                 "please report it)");
        return DT_ERR_INVALID;
    }
    if (L->launched) {
        dt_error("sge: this launcher instance already submitted a job");
        return DT_ERR_INVALID;
    }
    if ((!L->conf.pe || !*L->conf.pe) && sge_pick_pe(L, spec->np) != DT_OK)
        return DT_ERR_CONFIG;
    L->launched = 1;
    const char *job_id = dt_env_value(spec->env, "DT_JOB_ID");
    if (!job_id)
        job_id = "0";
    /* Always ours alone: without a job number qdel goes by this name,
     * and `qdel train` would delete every job of the user named train. */
    const char *prefix = L->conf.job_name && *L->conf.job_name
                             ? L->conf.job_name
                             : "dt";
    if (asprintf(&L->name, "%s-%s", prefix, job_id) < 0) {
        L->name = NULL;
        return DT_ERR_NOMEM;
    }
    dt_status_t st = prepare_dir(L, spec, job_id);
    if (st != DT_OK)
        return st;
    char slots[16], *out = NULL, *err = NULL, *script = NULL;
    const char **argv = NULL;
    char **envp = proc_env_without_token();
    if (asprintf(&out, "%s/job.out", L->dir) < 0 ||
        asprintf(&err, "%s/job.err", L->dir) < 0 ||
        asprintf(&script, "%s/job.sh", L->dir) < 0 || !envp) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    st = qsub_argv(L, spec->np, slots, out, err, script, &argv);
    if (st == DT_OK)
        st = jobdir_mon_init(&L->mon, L->dir, spec->np, "?", spec->output,
                             spec->output_arg);
    if (st != DT_OK)
        goto out;
    L->mon_ready = 1;
    st = proc_start(argv, envp, 1, &L->qsub);
    if (st != DT_OK)
        goto out;
    st = await_job_id(L);
    if (st == DT_OK)
        dt_info("sge: job %s (%s) submitted: %d slots in parallel "
                "environment %s%s%s; waiting for SGE to start it",
                L->job_id, L->name, spec->np, L->conf.pe,
                L->conf.queue && *L->conf.queue ? ", queue " : "",
                L->conf.queue && *L->conf.queue ? L->conf.queue : "");
    else
        sge_stop_and_reap(L);
out:
    free(argv);
    free(envp);
    free(out);
    free(err);
    free(script);
    return st;
}
