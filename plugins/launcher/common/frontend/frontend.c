/* frontend.c — see frontend.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "../common/spawn/spawn.h"
#include "frontend.h"
#include "proc_tree.h"
#include "prologue.h"
#include "rank_lines.h"
#include "tag_stream.h"

#define READ_CHUNK 65536
/* Without a pidfd the front-end's end is noticed by waitpid this often. */
#define EXIT_CHECK_MS 20
/* Reads of what is left in the pipes once the front-end ended: a
 * grandchild that keeps them open cannot hold wait() forever. */
#define DRAIN_READS 64

struct frontend {
    char *label;
    char nonce[PROLOGUE_NONCE_LEN + 1];
    int np;
    pid_t pid;
    pid_t guard;          /* sends pid SIGTERM if dtctl dies (spawn.h)    */
    int pidfd;
    int fds[2];           /* stdout, stderr read ends; -1 once closed     */
    int reaped, status;
    int final_done;       /* the job-level event was decided              */
    tag_stream_t streams[2];
    rank_lines_t *lines;
    dt_output_fn output;
    void *output_arg;
    int (*on_line)(void *, frontend_t *, int, const char *);
    void *on_line_arg;
    unsigned char *reported; /* np flags: an exit is queued or delivered */
    unsigned char *acked;    /* np flags: confirmed ack_signo (relay)     */
    int ack_signo;           /* the last relayed request: SIGSTOP or
                                SIGCONT (running, before any)            */
    int ack_fe_signo;        /* what the front-end was sent for it        */
    int relay_again;         /* a rank confirmed the other one: resend    */
    int failures;            /* rank exits with a non-zero status         */
    dt_worker_exit_t *queue; /* np + 1 slots                              */
    size_t q_head, q_tail;
    char **hosts;            /* strings the events point at               */
    size_t nhosts;
    char *buf;
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -1 : (int)fd;
#else
    (void)pid;
    return -1;
#endif
}

/* A copy of host kept until frontend_free (events point at it). */
static const char *keep_host(frontend_t *fe, const char *host, size_t len)
{
    char **v = realloc(fe->hosts, (fe->nhosts + 1) * sizeof *v);
    if (!v)
        return "?";
    fe->hosts = v;
    char *s = strndup(host, len);
    if (!s)
        return "?";
    fe->hosts[fe->nhosts++] = s;
    return s;
}

static void push(frontend_t *fe, const dt_worker_exit_t *ev)
{
    if (fe->q_tail < (size_t)fe->np + 1)
        fe->queue[fe->q_tail++] = *ev;
}

static void describe_status(int status, dt_worker_exit_t *ev)
{
    if (status > 128 && status < 128 + NSIG) {
        ev->signaled = 1;
        ev->signo = status - 128;
    } else {
        ev->code = status;
    }
}

void frontend_add_exit(frontend_t *fe, int rank, const char *host, int status)
{
    if (!fe || rank < 0 || rank >= fe->np || fe->reported[rank])
        return;
    fe->reported[rank] = 1;
    dt_worker_exit_t ev = {0};
    ev.rank = rank;
    ev.host = keep_host(fe, host ? host : "?", host ? strlen(host) : 1);
    describe_status(status, &ev);
    if (status != 0)
        fe->failures++;
    push(fe, &ev);
}

static const char *request_name(int signo)
{
    return signo == SIGSTOP ? "a stop" : "a continue";
}

/* A whole line (or a piece of one) of one rank, or of the front-end. */
static void on_rank_line(void *arg, int rank, int fd, const char *line,
                         size_t len, int complete)
{
    frontend_t *fe = arg;
    int status;
    const char *host;
    size_t host_len;
    size_t at = len;
    if (rank >= 0 && complete)
        at = prologue_marker_at(line, len, fe->nonce);
    if (at > 0 && at < len) {
        /* the worker's unfinished line, as it wrote it; then the marker */
        if (fe->output)
            fe->output(fe->output_arg, rank, fd, line, at);
        line += at;
        len -= at;
    }
    if (rank >= 0 && complete &&
        prologue_parse_marker(line, len, fe->nonce, &status, &host,
                              &host_len)) {
        if (!fe->reported[rank]) {
            char h[256];
            size_t n = host_len < sizeof h - 1 ? host_len : sizeof h - 1;
            memcpy(h, host, n);
            h[n] = '\0';
            frontend_add_exit(fe, rank, h, status);
        }
        return;
    }
    int signo;
    if (rank >= 0 && complete &&
        prologue_parse_ctl(line, len, fe->nonce, &signo)) {
        fe->acked[rank] = signo == fe->ack_signo;
        /* A request older than the last one reached this rank late (its
         * shell was stopped or slow): a stop after fg left the worker
         * stopped for good. Ask again for the last one. */
        if (signo != fe->ack_signo) {
            dt_debug("%s launcher: rank %d confirmed %s, but %s was asked "
                     "for last: asking again",
                     fe->label, rank, request_name(signo),
                     request_name(fe->ack_signo));
            fe->relay_again = 1;
        }
        return; /* ours, not the job's output */
    }
    if (rank < 0 && complete && fe->on_line) {
        char *copy = strndup(line, len);
        int handled = copy && fe->on_line(fe->on_line_arg, fe, fd, copy);
        free(copy);
        if (handled)
            return;
    }
    if (fe->output) {
        fe->output(fe->output_arg, rank, fd, line, len);
        if (complete)
            fe->output(fe->output_arg, rank, fd, "\n", 1);
    }
}

static void on_piece(void *arg, int rank, int fd, const char *data,
                     size_t len)
{
    frontend_t *fe = arg;
    rank_lines_feed(fe->lines, rank, fd, data, len);
}

/* One read from pipe k (0 stdout, 1 stderr). 1: got data. */
static int read_once(frontend_t *fe, int k)
{
    if (fe->fds[k] < 0)
        return 0;
    ssize_t r = read(fe->fds[k], fe->buf, READ_CHUNK);
    if (r > 0) {
        tag_stream_feed(&fe->streams[k], fe->buf, (size_t)r, 0, on_piece, fe);
        return 1;
    }
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    tag_stream_feed(&fe->streams[k], NULL, 0, 1, on_piece, fe);
    close_fd(&fe->fds[k]);
    return 0;
}

static void drain(frontend_t *fe)
{
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < DRAIN_READS && read_once(fe, k); i++)
            ;
        if (fe->fds[k] >= 0) { /* held open by a leftover: stop reading */
            tag_stream_feed(&fe->streams[k], NULL, 0, 1, on_piece, fe);
            close_fd(&fe->fds[k]);
        }
    }
}

static void reap(frontend_t *fe, int block)
{
    if (fe->reaped || fe->pid <= 0)
        return;
    int status;
    pid_t p;
    while ((p = waitpid(fe->pid, &status, block ? 0 : WNOHANG)) < 0 &&
           errno == EINTR)
        ;
    if (p == 0)
        return;
    if (p < 0) {
        dt_warn("%s (pid %d): exit status lost: it was reaped outside the "
                "launcher; reporting it as killed",
                fe->label, (int)fe->pid);
        status = SIGKILL;
    }
    fe->status = status;
    fe->reaped = 1;
    spawn_guard_stop(&fe->guard);
    close_fd(&fe->pidfd);
    drain(fe);
}

dt_status_t frontend_start(const frontend_args_t *a, frontend_t **out)
{
    frontend_t *fe = calloc(1, sizeof *fe);
    dt_status_t st = DT_ERR_NOMEM;
    if (!fe)
        return st;
    fe->pidfd = fe->fds[0] = fe->fds[1] = -1;
    fe->np = a->np;
    fe->ack_signo = fe->ack_fe_signo = SIGCONT; /* the ranks start running */
    fe->output = a->output;
    fe->output_arg = a->output_arg;
    fe->on_line = a->on_line;
    fe->on_line_arg = a->on_line_arg;
    snprintf(fe->nonce, sizeof fe->nonce, "%s", a->nonce);
    tag_stream_init(&fe->streams[0], a->tags, 1);
    tag_stream_init(&fe->streams[1], a->tags, 2);
    if (!(fe->label = strdup(a->label)) || !(fe->buf = malloc(READ_CHUNK)) ||
        !(fe->reported = calloc((size_t)a->np, 1)) ||
        !(fe->acked = calloc((size_t)a->np, 1)) ||
        !(fe->queue = calloc((size_t)a->np + 1, sizeof *fe->queue)) ||
        rank_lines_new(a->np, on_rank_line, fe, &fe->lines) != DT_OK)
        goto fail;
    /* SIGTERM, once, when dtctl dies: mpirun, salloc and srun then stop
     * the job (salloc forwards it to srun, srun to the ranks' prologues) */
    /* Not a terminal: the front-end, in a process group of its own, is
     * not in the terminal's foreground (mpirun would not read it; a
     * front-end that did would be stopped by SIGTTIN, and the job with
     * it). A pipe or a file is passed on. */
    int pass_stdin = a->pass_stdin && !isatty(STDIN_FILENO);
    /* SIGPIPE ignored: once dtctl is gone, nobody reads the front-end's
     * output; the ranks' last lines must not kill it before it stopped
     * them and cleaned up (mpirun's session directory in $TMPDIR). */
    spawn_req_t req = {a->argv, a->envp, a->workdir, 1, 0, SIGTERM, 0,
                       pass_stdin ? SPAWN_STDIN_OURS : SPAWN_STDIN_NULL, 1};
    spawn_child_t child;
    char why[1024];
    st = spawn_start(&req, &child, why, sizeof why);
    if (st != DT_OK) {
        dt_error("%s launcher: %s", a->label, why);
        goto fail;
    }
    fe->pid = child.pid;
    fe->guard = child.guard;
    if (!fe->guard)
        dt_debug("%s launcher: no guard for %s: if dtctl dies, the job "
                 "is not stopped",
                 a->label, a->argv[0]);
    fe->fds[0] = child.out_fd;
    fe->fds[1] = child.err_fd;
    fe->pidfd = open_pidfd(child.pid);
    dt_debug("%s launcher: started %s as pid %d", a->label, a->argv[0],
             (int)fe->pid);
    *out = fe;
    return DT_OK;
fail:
    frontend_free(fe);
    return st;
}

/* The event for the whole job, decided once the front-end ended. */
static int job_event(frontend_t *fe, dt_worker_exit_t *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->rank = -1;
    ev->host = fe->label;
    if (WIFSIGNALED(fe->status)) {
        ev->signaled = 1;
        ev->signo = WTERMSIG(fe->status);
        return 1;
    }
    ev->code = WIFEXITED(fe->status) ? WEXITSTATUS(fe->status) : 1;
    /* A failing rank already told why; a clean end needs no event. */
    return ev->code != 0 && fe->failures == 0;
}

/* Once per read, not per rank: the last relayed request again, for the
 * ranks that confirmed an older one (on_rank_line). Not once a rank
 * failed: the front-end is ending the job (mpirun can crash if signalled
 * then). */
static void relay_late_again(frontend_t *fe)
{
    if (!fe->relay_again)
        return;
    fe->relay_again = 0;
    if (fe->failures == 0)
        frontend_signal(fe, fe->ack_fe_signo);
}

static dt_status_t poll_once(frontend_t *fe, int wait_ms)
{
    struct pollfd pfd[3];
    int n = 0, which[3];
    for (int k = 0; k < 2; k++)
        if (fe->fds[k] >= 0) {
            pfd[n] = (struct pollfd){fe->fds[k], POLLIN, 0};
            which[n++] = k;
        }
    if (!fe->reaped && fe->pidfd >= 0) {
        pfd[n] = (struct pollfd){fe->pidfd, POLLIN, 0};
        which[n++] = 2;
    } else if (!fe->reaped && (wait_ms < 0 || wait_ms > EXIT_CHECK_MS)) {
        wait_ms = EXIT_CHECK_MS;
    }
    int r = poll(pfd, (nfds_t)n, wait_ms);
    if (r < 0) {
        if (errno == EINTR)
            return DT_ERR_INTERRUPTED;
        dt_error("%s launcher: poll failed: %s", fe->label, strerror(errno));
        return DT_ERR_IO;
    }
    for (int i = 0; i < n && r > 0; i++)
        if (pfd[i].revents && which[i] < 2)
            read_once(fe, which[i]);
    relay_late_again(fe);
    return DT_OK;
}

dt_status_t frontend_wait(frontend_t *fe, int timeout_ms, dt_worker_exit_t *ev)
{
    if (!fe || !ev)
        return DT_ERR_INVALID;
    long long deadline = timeout_ms < 0 ? -1 : dt_clock_now_ms() + timeout_ms;
    for (;;) {
        if (fe->q_head < fe->q_tail) {
            *ev = fe->queue[fe->q_head++];
            return DT_OK;
        }
        reap(fe, 0);
        if (fe->q_head < fe->q_tail)
            continue; /* the last output held exits */
        if (fe->reaped && fe->fds[0] < 0 && fe->fds[1] < 0) {
            if (!fe->final_done) {
                fe->final_done = 1;
                rank_lines_flush(fe->lines);
                if (job_event(fe, ev))
                    return DT_OK;
            }
            return DT_ERR_NOT_FOUND;
        }
        long long left = deadline < 0 ? -1 : deadline - dt_clock_now_ms();
        if (deadline >= 0 && left < 0)
            return DT_ERR_TIMEOUT;
        dt_status_t st = poll_once(fe, (int)left);
        if (st == DT_ERR_INTERRUPTED)
            return DT_ERR_TIMEOUT; /* a signal for dtctl: let it act */
        if (st != DT_OK)
            return st;
        if (deadline >= 0 && dt_clock_now_ms() >= deadline &&
            fe->q_head == fe->q_tail && !fe->reaped)
            return DT_ERR_TIMEOUT;
    }
}

void frontend_signal(frontend_t *fe, int signo)
{
    if (fe && fe->pid > 0 && !fe->reaped)
        kill(fe->pid, signo);
}

void frontend_expect_acks(frontend_t *fe, int signo, int fe_signo)
{
    if (!fe)
        return;
    memset(fe->acked, 0, (size_t)fe->np);
    fe->ack_signo = signo;
    fe->ack_fe_signo = fe_signo;
    fe->relay_again = 0; /* this request supersedes any older one */
}

/* The ranks neither confirmed nor ended, listed in missing ("0 3"). */
static int unconfirmed(const frontend_t *fe, char *missing, size_t len)
{
    int n = 0;
    size_t at = 0;
    if (len)
        missing[0] = '\0';
    for (int r = 0; r < fe->np; r++) {
        if (fe->acked[r] || fe->reported[r])
            continue;
        n++;
        if (len && at < len) {
            int w = snprintf(missing + at, len - at, "%s%d", at ? " " : "", r);
            at += w > 0 ? (size_t)w : 0;
        }
    }
    return n;
}

int frontend_await_acks(frontend_t *fe, int timeout_ms, char *missing,
                        size_t len)
{
    long long deadline = dt_clock_now_ms() + timeout_ms;
    for (;;) {
        int n = unconfirmed(fe, missing, len);
        /* an ended front-end's ranks have ended: nothing runs on */
        if (n == 0 || fe->reaped)
            return fe->reaped ? 0 : n;
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0)
            return n;
        /* an interrupted poll (a signal for dtctl) just looks again */
        if (poll_once(fe, (int)left) == DT_ERR_IO)
            return n;
        reap(fe, 0);
    }
}

int frontend_failures(const frontend_t *fe)
{
    return fe ? fe->failures : 0;
}

int frontend_running(const frontend_t *fe)
{
    return fe && fe->pid > 0 && !fe->reaped;
}

void frontend_kill_and_reap(frontend_t *fe)
{
    if (!fe || fe->pid <= 0)
        return;
    if (!fe->reaped)
        proc_tree_signal(fe->pid, SIGKILL, 1);
    reap(fe, 1);
    /* Ranks whose parent died earlier came to dtctl (child subreaper):
     * dtctl runs no other children while a launcher is active. */
    proc_tree_signal(getpid(), SIGKILL, 0);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    drain(fe);
    rank_lines_flush(fe->lines);
}

void frontend_free(frontend_t *fe)
{
    if (!fe)
        return;
    spawn_guard_stop(&fe->guard);
    close_fd(&fe->pidfd);
    close_fd(&fe->fds[0]);
    close_fd(&fe->fds[1]);
    tag_stream_free(&fe->streams[0]);
    tag_stream_free(&fe->streams[1]);
    rank_lines_free(fe->lines);
    for (size_t i = 0; i < fe->nhosts; i++)
        free(fe->hosts[i]);
    free(fe->hosts);
    free(fe->queue);
    free(fe->reported);
    free(fe->acked);
    free(fe->buf);
    free(fe->label);
    free(fe);
}
