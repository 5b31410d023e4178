/* watch.c — wait() and signal(): follow the job directory while qsub
 * -sync y waits for the job; stop the job with qdel (SGE then kills every
 * worker on every host: tight integration). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/log.h>
#include "sge.h"

#define QSUB_OUTPUT_MAX (64 * 1024)
#define QDEL_TIMEOUT_MS 30000
/* After qdel, how long qsub may take to notice the job is gone. */
#define QSUB_END_TIMEOUT_MS 60000

static void qdel(sge_launcher_t *L)
{
    const char *target = L->job_id[0] ? L->job_id : L->name;
    const char *argv[] = {"qdel", target, NULL};
    char *out = NULL;
    int code = 0;
    L->qdel_sent++;
    dt_info("sge: qdel %s: SGE stops every worker of the job", target);
    if (proc_run(argv, NULL, QDEL_TIMEOUT_MS, &out, &code) == DT_OK &&
        code != 0 && !strstr(out, "already") && !strstr(out, "not exist"))
        dt_warn("sge: qdel %s exited with %d: %s", target, code, out);
    free(out);
}

/* Lines from the job script's stderr (its own failures, not workers'). */
static void report_script_errors(const sge_launcher_t *L)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/job.err", L->dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (*line)
            dt_error("sge job %s: %s", L->job_id, line);
    }
    fclose(f);
}

/* qsub returned: the job is over. */
static void job_ended(sge_launcher_t *L)
{
    proc_reaped(&L->qsub, &L->qsub_status, 1);
    L->job_over = 1;
    proc_read(&L->qsub.err_fd, &L->qsub_err, QSUB_OUTPUT_MAX);
    if (L->qsub_out.s || L->qsub_err.s)
        dt_debug("sge: qsub said: %s%s", L->qsub_out.s ? L->qsub_out.s : "",
                 L->qsub_err.s ? L->qsub_err.s : "");
    int started = jobdir_mon_started(&L->mon) > 0;
    jobdir_mon_finish(&L->mon);
    report_script_errors(L);
    if (!started && !L->qdel_sent)
        dt_error("sge: job %s ended before any worker started (see the "
                 "messages above and `qacct -j %s`)",
                 L->job_id, L->job_id);
}

/* A job that never started its workers is reported once, as a whole. */
static int whole_job_event(sge_launcher_t *L, dt_worker_exit_t *ev)
{
    if (!L->job_over || jobdir_mon_started(&L->mon) > 0)
        return 0;
    static char host[] = "the SGE cluster";
    dt_worker_exit_t dummy;
    int any = 0;
    while (jobdir_mon_next(&L->mon, &dummy) > 0)
        any = 1;
    if (!any)
        return 0;
    memset(ev, 0, sizeof *ev);
    ev->rank = -1;
    ev->host = host;
    int s = L->qsub_status;
    ev->code = WIFEXITED(s) && WEXITSTATUS(s) ? WEXITSTATUS(s) : 1;
    if (L->qdel_sent) {
        ev->code = 0;
        ev->signaled = 1;
        ev->signo = SIGKILL;
    }
    return 1;
}

dt_status_t sge_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev)
{
    sge_launcher_t *L = ctx;
    if (!L || !ev)
        return DT_ERR_INVALID;
    if (!L->mon_ready)
        return DT_ERR_NOT_FOUND;
    long long deadline = timeout_ms < 0 ? -1 : dt_clock_now_ms() + timeout_ms;
    for (int polled = 0;; polled = 1) {
        if (jobdir_mon_poll(&L->mon)) {
            dt_info("sge: job %s is running", L->job_id);
            jobdir_mon_poll(&L->mon);
        }
        if (whole_job_event(L, ev))
            return DT_OK;
        int rep = jobdir_mon_next(&L->mon, ev);
        if (rep > 0)
            return DT_OK;
        if (rep < 0)
            return DT_ERR_NOT_FOUND;
        if (L->job_over) {
            /* cannot happen: finish marks every rank */
            return DT_ERR_NOT_FOUND;
        }
        long long left = deadline < 0 ? L->conf.poll_ms
                                      : deadline - dt_clock_now_ms();
        if (polled && deadline >= 0 && left <= 0)
            return DT_ERR_TIMEOUT;
        int ms = left < 0 ? 0 : left > L->conf.poll_ms ? L->conf.poll_ms
                                                        : (int)left;
        struct pollfd p[2] = {{L->qsub.out_fd, POLLIN, 0},
                              {L->qsub.err_fd, POLLIN, 0}};
        int r = poll(p, 2, ms);
        if (r < 0 && errno == EINTR)
            return DT_ERR_TIMEOUT; /* a signal for dtctl: let it look */
        int open_out = proc_read(&L->qsub.out_fd, &L->qsub_out,
                                 QSUB_OUTPUT_MAX);
        int open_err = proc_read(&L->qsub.err_fd, &L->qsub_err,
                                 QSUB_OUTPUT_MAX);
        if (!open_out && !open_err)
            job_ended(L);
    }
}

dt_status_t sge_signal(void *ctx, int signo)
{
    sge_launcher_t *L = ctx;
    if (!L)
        return DT_ERR_INVALID;
    if (L->job_over || !L->launched)
        return DT_OK;
    /* qdel is SGE's one way to stop a job; a second request (SIGKILL
     * after kill_grace) repeats it in case the first was lost. */
    if (L->qdel_sent == 0 || (signo == SIGKILL && L->qdel_sent == 1))
        qdel(L);
    return DT_OK;
}

void sge_stop_and_reap(sge_launcher_t *L)
{
    if (L->qsub.pid <= 0) {
        L->job_over = 1;
        return;
    }
    if (!L->qdel_sent) {
        int status;
        if (!proc_reaped(&L->qsub, &status, 0))
            qdel(L);
        else
            L->qsub_status = status;
    }
    long long deadline = dt_clock_now_ms() + QSUB_END_TIMEOUT_MS;
    while (L->qsub.pid > 0 && (L->qsub.out_fd >= 0 || L->qsub.err_fd >= 0)) {
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0) {
            dt_warn("sge: qsub still waits for job %s %d s after qdel; "
                    "leaving it to SGE (check `qstat -j %s`)",
                    L->job_id, QSUB_END_TIMEOUT_MS / 1000, L->job_id);
            kill(-L->qsub.pid, SIGKILL);
            break;
        }
        struct pollfd p[2] = {{L->qsub.out_fd, POLLIN, 0},
                              {L->qsub.err_fd, POLLIN, 0}};
        poll(p, 2, left > 1000 ? 1000 : (int)left);
        proc_read(&L->qsub.out_fd, &L->qsub_out, QSUB_OUTPUT_MAX);
        proc_read(&L->qsub.err_fd, &L->qsub_err, QSUB_OUTPUT_MAX);
    }
    int status = 0;
    if (L->qsub.pid > 0 && proc_reaped(&L->qsub, &status, 1))
        L->qsub_status = status;
    L->job_over = 1;
}
