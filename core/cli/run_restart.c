/* run_restart.c — restart decisions of `dtctl run` (see run_restart.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include <dt/clock.h>
#include <dt/log.h>
#include <dt/train.h>
#include "ckpt/ckpt_format.h"
#include "run_restart.h"
#include "stop_signals.h"

/* A path of the workers' configuration as dtctl sees it. */
static char *worker_path(const char *path, const char *workdir)
{
    char *out = NULL;
    if (!path || !*path)
        return NULL;
    if (path[0] == '/' || !workdir || !*workdir)
        return strdup(path);
    if (asprintf(&out, "%s/%s", workdir, path) < 0)
        return NULL;
    return out;
}

/* The newest checkpoint file in dir, by name (nothing is read): 1 and
 * its name in buf; 0 when none can be seen from here. */
static int newest_ckpt(const char *dir, char *buf, size_t len)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    uint64_t step, best = 0;
    int found = 0;
    char path[4200];
    struct stat sb;
    struct dirent *e;
    while ((e = readdir(d))) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (ckpt_parse_name(e->d_name, &step) && (!found || step > best) &&
            stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            best = step;
            found = 1;
            snprintf(buf, len, "%s", path);
        }
    }
    closedir(d);
    return found;
}

/* A fresh job (no --resume) into a directory holding checkpoints: refused
 * before any worker starts. The trainer would refuse it too, but only
 * once started, and a restart (which resumes) would then continue the
 * old run. Rank 0 still checks what it sees (another host's directory). */
static dt_status_t check_fresh(const dt_config_t *cfg, const run_restart_t *r)
{
    bool resume = false;
    char newest[4400];
    DT_CHECK(dt_config_get_bool(cfg, "train", "resume", &resume));
    if (resume || !r->ckpt_dir || !newest_ckpt(r->ckpt_dir, newest,
                                               sizeof newest))
        return DT_OK;
    dt_error("[train] checkpoint_dir %s already holds checkpoints (the "
             "newest: %s): a fresh run would mix its own with them; rerun "
             "with --resume to continue that run, or give an empty or "
             "another checkpoint_dir", r->ckpt_dir, newest);
    return DT_ERR_CONFIG;
}

dt_status_t run_restart_init(const dt_config_t *cfg, int trainer,
                             const char *workdir, run_restart_t *r)
{
    memset(r, 0, sizeof *r);
    r->trainer = trainer;
    r->backoff = 2.0;
    DT_CHECK(dt_config_get_int(cfg, "cluster", "max_restarts", &r->max));
    DT_CHECK(dt_config_get_duration(cfg, "cluster", "restart_backoff",
                                    &r->backoff));
    if (r->max < 0) {
        const char *where = "default";
        dt_config_origin(cfg, "cluster", "max_restarts", NULL, &where);
        dt_error("%s: [cluster] max_restarts must be 0 (never) or more, not "
                 "%lld", where, r->max);
        return DT_ERR_CONFIG;
    }
    r->ckpt_dir = worker_path(dt_config_get(cfg, "train", "checkpoint_dir"),
                              workdir);
    r->metrics = worker_path(dt_config_get(cfg, "train", "metrics"),
                             workdir);
    if (r->max > 0 && trainer && !r->ckpt_dir)
        dt_warn("[cluster] max_restarts = %lld without [train] "
                "checkpoint_dir: a restart trains from the beginning",
                r->max);
    dt_status_t st = trainer ? check_fresh(cfg, r) : DT_OK;
    if (st != DT_OK) /* the caller frees nothing after a failure */
        run_restart_free(r);
    return st;
}

void run_restart_free(run_restart_t *r)
{
    free(r->ckpt_dir);
    free(r->metrics);
    memset(r, 0, sizeof *r);
}

dt_status_t run_restart_env(run_restart_t *r, const char *job_id,
                            env_list_t *env)
{
    if (!r->run_id[0])
        snprintf(r->run_id, sizeof r->run_id, "%s", job_id);
    DT_CHECK(env_list_addf(env, "DT_RESTART_COUNT", "%d", r->used));
    /* torchrun's names: a script resumes on TORCHELASTIC_RESTART_COUNT,
     * and libraries (Lightning) take TORCHELASTIC_RUN_ID as "launched by
     * an elastic agent: the environment says who I am". */
    DT_CHECK(env_list_addf(env, "TORCHELASTIC_RESTART_COUNT", "%d", r->used));
    DT_CHECK(env_list_addf(env, "TORCHELASTIC_MAX_RESTARTS", "%lld", r->max));
    DT_CHECK(env_list_addf(env, "TORCHELASTIC_RUN_ID", "%s", r->run_id));
    /* Without checkpoint_dir there is nothing to resume from: the
     * restart trains from the beginning (as said at start), and dt-train
     * refuses a resume without a directory as a configuration error. */
    if (r->trainer && r->used > 0 && r->ckpt_dir)
        DT_CHECK(env_list_addf(env, "DT_TRAIN_RESUME", "yes"));
    return DT_OK;
}

/* JSON string body: quotes, backslashes and control bytes escaped. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* line appended to path whole, or not at all: a torn line would spoil the
 * trainer's next one too (readers of JSON lines fail on both). 0 or errno. */
static int append_line(const char *path, const char *line, size_t len)
{
    /* write(2), not stdio: nothing left buffered that a close could add
     * after the part written was taken back */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return errno;
    struct stat sb;
    int regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    size_t done = 0;
    int err = 0;
    while (done < len && !err) {
        ssize_t n = write(fd, line + done, len - done);
        if (n > 0)
            done += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            err = n < 0 ? errno : ENOSPC;
    }
    if (err && done > 0 && regular && ftruncate(fd, sb.st_size) != 0)
        dt_warn("%s: cannot take back the line written in part: %s", path,
                strerror(errno));
    if (close(fd) != 0 && !err)
        err = errno;
    return err;
}

/* One JSON line in the --metrics file, beside the trainer's epochs. */
static void record(const run_restart_t *r, const char *event,
                   const char *cause, int code,
                   const dt_train_checkpoint_t *ck, double backoff)
{
    if (!r->metrics)
        return;
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f) {
        dt_warn("%s: cannot record the %s in the metrics file: out of "
                "memory", r->metrics, event);
        return;
    }
    fprintf(f, "{\"event\":\"%s\",\"restarts\":%d,\"max_restarts\":%lld,"
               "\"exit_code\":%d", event, r->used, r->max, code);
    if (cause) {
        fputs(",\"cause\":", f);
        json_str(f, cause);
    }
    if (ck) {
        fputs(",\"checkpoint\":", f);
        json_str(f, ck->path);
        fprintf(f, ",\"resume_epoch\":%llu,\"resume_step_in_epoch\":%llu,"
                   "\"resume_global_step\":%llu",
                (unsigned long long)ck->epoch,
                (unsigned long long)ck->step_in_epoch,
                (unsigned long long)ck->global_step);
    }
    if (backoff >= 0)
        fprintf(f, ",\"backoff_seconds\":%g", backoff);
    fprintf(f, ",\"time\":%lld}\n", (long long)time(NULL));
    int err = fclose(f) != 0 ? ENOMEM : append_line(r->metrics, line, len);
    free(line);
    if (err)
        dt_warn("%s: cannot record the %s in the metrics file: %s (free "
                "space or fix --metrics)", r->metrics, event, strerror(err));
}

/* "restarts used: 1 of 3" for the final line. */
static void used_text(const run_restart_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "restarts used: %d of %lld ([cluster] max_restarts)",
             r->used, r->max);
}

/* The job was preempted (workers exited 75 after their checkpoint). */
static void say_preempted(const run_restart_t *r, int code)
{
    dt_train_checkpoint_t ck;
    const char *what = code == DT_TRAIN_EXIT_PREEMPTED ? "preempted"
                                                       : "stopped";
    /* the newest checkpoint, which is the preemption's own unless the
     * workers wrote none (a diverged state: rank 0 said why) */
    if (r->trainer && r->ckpt_dir &&
        dt_train_latest_checkpoint(r->ckpt_dir, &ck) == DT_OK)
        dt_warn("%s: the newest checkpoint is %s (epoch %llu step %llu, "
                "step %llu of the job); rerun with --resume to continue "
                "from it", what, ck.path, (unsigned long long)ck.epoch,
                (unsigned long long)ck.step_in_epoch,
                (unsigned long long)ck.global_step);
    else if (r->trainer && r->ckpt_dir)
        dt_warn("%s before any checkpoint was written in %s: rerun the job "
                "(it starts from the beginning)", what, r->ckpt_dir);
    else
        dt_warn("%s: the workers exited with %d after saving their state "
                "(resumable); rerun the job to continue", what,
                DT_TRAIN_EXIT_PREEMPTED);
}

/* The job ended without finishing and is not restarted: where dt's
 * trainer could continue from (a failure, a stop of an async job, whose
 * workers write no checkpoint at a signal). */
static void say_resumable(const run_restart_t *r)
{
    dt_train_checkpoint_t ck;
    if (r->trainer && r->ckpt_dir &&
        dt_train_latest_checkpoint(r->ckpt_dir, &ck) == DT_OK)
        dt_info("the newest checkpoint is %s (epoch %llu step %llu, step "
                "%llu of the job): rerun with --resume to continue from it",
                ck.path, (unsigned long long)ck.epoch,
                (unsigned long long)ck.step_in_epoch,
                (unsigned long long)ck.global_step);
}

/* Sleep the backoff; a stop signal cuts it short (its code, else 0). */
static int wait_backoff(double seconds)
{
    long long until = dt_clock_now_ms() + (long long)(seconds * 1000.0);
    for (;;) {
        int signo = stop_signals_take();
        if (signo)
            return signo;
        long long left = until - dt_clock_now_ms();
        if (left <= 0)
            return 0;
        poll(NULL, 0, left < 100 ? (int)left : 100);
    }
}

int run_restart_next(run_restart_t *r, const supervise_result_t *res,
                     int launched, int *code)
{
    char used[160];
    used_text(r, used, sizeof used);
    int by_term = res->stop_signo == SIGTERM || res->stop_signo == SIGUSR1;
    if (res->npreempted > 0 &&
        (*code == DT_TRAIN_EXIT_PREEMPTED || by_term)) {
        *code = DT_TRAIN_EXIT_PREEMPTED;
        say_preempted(r, *code);
        return 0;
    }
    if (res->npreempted > 0 && res->stop_signo)
        say_preempted(r, *code); /* Ctrl-C: stopped, still resumable */
    if (*code == 0 || res->stop_signo) {
        if (r->used > 0 || (r->max > 0 && *code == 0))
            dt_info("the job %s; %s", *code == 0 ? "finished" : "ended",
                    used);
        if (*code != 0 && res->npreempted == 0)
            say_resumable(r);
        if (r->used > 0)
            record(r, "end", NULL, *code, NULL, -1);
        return 0;
    }
    const char *cause = res->cause[0] ? res->cause
                        : launched ? "the launcher lost track of the workers"
                                   : "the workers could not be started";
    /* dtctl's own word that a restart would fail the same way (a worker
     * of another dt). */
    if (res->final && r->used < r->max) {
        dt_error("not restarting: %s, and a restart would meet it again; "
                 "%s", cause, used);
        record(r, "end", cause, *code, NULL, -1);
        return 0;
    }
    /* dt-train's own word that a restart would fail the same way
     * (diverged, a configuration error, a data set it cannot use): not
     * restarted. */
    if (r->trainer && *code == DT_TRAIN_EXIT_FINAL && r->used < r->max) {
        dt_error("not restarting: %s, and a restart repeats it (training "
                 "diverged, a configuration error, a data set in a wrong "
                 "format or layout or a model too large for the memory: "
                 "see above); %s", cause, used);
        record(r, "end", cause, *code, NULL, -1);
        return 0;
    }
    if (r->used >= r->max) {
        if (r->max > 0) {
            dt_error("giving up: %s; the last failure: %s", used, cause);
            record(r, "end", cause, *code, NULL, -1);
        }
        if (*code != DT_TRAIN_EXIT_FINAL)
            say_resumable(r);
        return 0;
    }
    r->used++;
    double backoff = r->backoff;
    for (int i = 1; i < r->used && backoff < RUN_RESTART_BACKOFF_MAX; i++)
        backoff *= 2;
    if (backoff > RUN_RESTART_BACKOFF_MAX)
        backoff = RUN_RESTART_BACKOFF_MAX;
    dt_train_checkpoint_t ck;
    int have = r->trainer && r->ckpt_dir &&
               dt_train_latest_checkpoint(r->ckpt_dir, &ck) == DT_OK;
    char from[4400];
    if (have)
        snprintf(from, sizeof from, "resuming from checkpoint %s (epoch "
                 "%llu, step %llu; step %llu of the job)", ck.path,
                 (unsigned long long)ck.epoch,
                 (unsigned long long)ck.step_in_epoch,
                 (unsigned long long)ck.global_step);
    else if (r->trainer && r->ckpt_dir)
        snprintf(from, sizeof from, "no valid checkpoint in %s yet (seen "
                 "from here): the trainer resumes from what it finds, else "
                 "starts over", r->ckpt_dir);
    else if (r->trainer)
        snprintf(from, sizeof from, "no [train] checkpoint_dir: training "
                 "starts over");
    else
        snprintf(from, sizeof from, "running the program again "
                 "(DT_RESTART_COUNT=%d; it must resume by itself)", r->used);
    dt_warn("restart %d of %lld: %s; %s, in %gs", r->used, r->max, cause,
            from, backoff);
    record(r, "restart", cause, *code, have ? &ck : NULL, backoff);
    int signo = wait_backoff(backoff);
    if (signo) {
        dt_warn("received %s while waiting to restart: not restarting",
                strsignal(signo));
        *code = 128 + signo;
        return 0;
    }
    return 1;
}
