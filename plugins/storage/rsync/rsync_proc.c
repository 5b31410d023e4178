/* rsync_proc.c — one rsync process: started with pipes in a process
 * group of its own that dies with dtctl, its progress shown (a line every
 * few seconds per host), its --stats kept, its stderr's tail kept for the
 * error message; the whole group ended when dtctl is asked to stop. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "rsync_storage.h"
/* What every child of dtctl does before exec (header-only). */
#include "../../launcher/common/spawn/child.h"

#define KEEP 16384           /* tail of stdout kept: the --stats report */
#define PROGRESS_EVERY_MS 2000
#define STOP_GRACE_MS 5000   /* SIGTERM to SIGKILL when stopping       */

typedef struct tail {
    char b[KEEP + 1];
    size_t n;
} tail_t;

static void tail_add(tail_t *t, const char *d, size_t n, size_t cap)
{
    if (n >= cap) {
        d += n - cap;
        n = cap;
    }
    if (t->n + n > cap) {
        size_t drop = t->n + n - cap;
        memmove(t->b, t->b + drop, t->n - drop);
        t->n -= drop;
    }
    memcpy(t->b + t->n, d, n);
    t->n += n;
    t->b[t->n] = '\0';
}

/* The latest progress2 line in the chunk ("  1,234  45%  1.2MB/s ..."). */
static void show_progress(stage_run_t *run, const char *host,
                          const char *d, size_t n, long long *last)
{
    if (!run->progress || dt_clock_now_ms() - *last < PROGRESS_EVERY_MS)
        return;
    /* The last complete segment between \r or \n that has a '%'. */
    const char *best = NULL;
    size_t best_len = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || d[i] == '\r' || d[i] == '\n') {
            if (memchr(d + start, '%', i - start)) {
                best = d + start;
                best_len = i - start;
            }
            start = i + 1;
        }
    if (!best)
        return;
    while (best_len && *best == ' ') {
        best++;
        best_len--;
    }
    pthread_mutex_lock(&run->out_mu);
    dt_info("storage rsync: %s: %.*s", host, (int)best_len, best);
    pthread_mutex_unlock(&run->out_mu);
    *last = dt_clock_now_ms();
}

/* The child: stdin from /dev/null, stdout and stderr to the pipes. A
 * group of its own, so that stopping it reaches what it starts (ssh, its
 * local receiver) and a Ctrl-C reaches it only through dtctl; SIGTERM
 * when dtctl dies, even by SIGKILL, so it never copies on unwatched (and
 * unmarked) under PID 1. */
static void exec_child(char *const *argv, int out, int err, pid_t parent)
{
    setpgid(0, 0);
    spawn_child_reset_signals();
    spawn_child_die_with_parent(SIGTERM, parent);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, 0);
    dup2(out, 1);
    dup2(err, 2);
    execvp(argv[0], argv);
    dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Drains the pipes until both close; ends the group (TERM, then KILL)
 * once dtctl is asked to stop; refreshes the lock meanwhile. */
static void pump(host_job_t *j, pid_t pid, int fds[2], tail_t *so,
                 tail_t *se, rs_result_t *r)
{
    long long last = dt_clock_now_ms(), stop_at = 0;
    int open_fds = 2;
    while (open_fds > 0) {
        if (!r->stopped && rsync_stopped(j->run)) {
            r->stopped = 1;
            stop_at = dt_clock_now_ms();
            kill(-pid, SIGTERM);
        } else if (stop_at && dt_clock_now_ms() - stop_at > STOP_GRACE_MS) {
            kill(-pid, SIGKILL);
            stop_at = 0;
        }
        if (!r->stopped)
            rs_lock_refresh(j);
        struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        if (poll(p, 2, 500) < 0 && errno != EINTR)
            break;
        for (int k = 0; k < 2; k++) {
            if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[8192];
            ssize_t n = read(p[k].fd, chunk, sizeof chunk);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0) {
                close(fds[k]);
                fds[k] = -1;
                open_fds--;
                continue;
            }
            if (k == 0) {
                tail_add(so, chunk, (size_t)n, KEEP);
                show_progress(j->run, j->h->name, chunk, (size_t)n, &last);
            } else {
                tail_add(se, chunk, (size_t)n, 2048);
            }
        }
    }
}

/* stderr's tail as one line for the message. */
static void one_line(const tail_t *se, char *err, size_t err_len)
{
    size_t w = 0;
    for (size_t i = 0; i < se->n && w + 3 < err_len; i++) {
        char c = se->b[i];
        if (c == '\n' || c == '\r') {
            if (i + 1 < se->n && w + 3 < err_len) {
                err[w++] = ';';
                err[w++] = ' ';
            }
        } else {
            err[w++] = c;
        }
    }
    err[w] = '\0';
}

static dt_status_t exit_status(int status, rs_result_t *r)
{
    if (WIFSIGNALED(status)) {
        snprintf(r->desc, sizeof r->desc, "killed by signal %d",
                 WTERMSIG(status));
        return DT_ERR_INTERRUPTED;
    }
    r->code = WEXITSTATUS(status);
    snprintf(r->desc, sizeof r->desc, "exit %d", r->code);
    if (r->stopped)
        return DT_ERR_INTERRUPTED;
    return r->code == 0 ? DT_OK : DT_ERR_IO;
}

dt_status_t rsync_run_proc(host_job_t *j, char *const *argv,
                           rs_stats_t *stats, rs_result_t *r)
{
    int out[2] = {-1, -1}, er[2] = {-1, -1};
    tail_t *so = calloc(1, sizeof *so), *se = calloc(1, sizeof *se);
    dt_status_t st = DT_ERR_IO;
    memset(r, 0, sizeof *r);
    r->code = -1;
    snprintf(r->desc, sizeof r->desc, "not started");
    if (!so || !se) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(er, O_CLOEXEC) != 0) {
        snprintf(r->err, sizeof r->err, "cannot create a pipe: %s",
                 strerror(errno));
        goto out;
    }
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        snprintf(r->err, sizeof r->err, "cannot fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        exec_child(argv, out[1], er[1], parent);
    setpgid(pid, pid); /* also here: a stop may come before the child ran */
    r->started = 1;
    close(out[1]);
    close(er[1]);
    out[1] = er[1] = -1;
    int fds[2] = {out[0], er[0]};
    out[0] = er[0] = -1;
    pump(j, pid, fds, so, se, r);
    for (int k = 0; k < 2; k++)
        if (fds[k] >= 0)
            close(fds[k]);
    /* What the group left, if anything; before the reaping, while its
     * id cannot belong to anyone else. */
    if (r->stopped)
        kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    rs_parse_stats(so->b, stats);
    one_line(se, r->err, sizeof r->err);
    st = exit_status(status, r);
out:
    for (int k = 0; k < 2; k++) {
        if (out[k] >= 0)
            close(out[k]);
        if (er[k] >= 0)
            close(er[k]);
    }
    free(so);
    free(se);
    return st;
}
