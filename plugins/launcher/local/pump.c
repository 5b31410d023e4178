/* pump.c — the launcher's wait(): forward worker output as it arrives,
 * reap workers that ended and report each exit once. Sleeps in poll() on
 * the output pipes and the workers' pidfds. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "local.h"

/* Without pidfds we notice an exit by polling waitpid this often. */
#define EXIT_CHECK_MS 20
/* A pipe drained at exit yields at most this many reads: a grandchild
 * that keeps writing cannot hold wait() forever. */
#define DRAIN_READS 64

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* One read from a worker's pipe. 1: got data (there may be more). */
static int forward_once(local_launcher_t *L, local_worker_t *w, int which)
{
    int *fd = &w->fds[which];
    if (*fd < 0)
        return 0;
    ssize_t r = read(*fd, L->buf, L->buf_len);
    if (r > 0) {
        if (L->output)
            L->output(L->output_arg, w->rank, which + 1, L->buf, (size_t)r);
        return 1;
    }
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    close_fd(fd); /* EOF: every writer (worker and its children) is gone */
    return 0;
}

void local_drain_worker(local_launcher_t *L, local_worker_t *w)
{
    for (int which = 0; which < 2; which++)
        for (int i = 0; i < DRAIN_READS && forward_once(L, w, which); i++)
            ;
}

/* 1: pid has ended, left unreaped (its number stays taken while we
 * clean up after it); 0: it runs; -1: waitid failed (errno). */
static int ended_unreaped(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return -1;
    return si.si_pid == pid;
}

/* waitpid every running worker; drain the output of those that ended so
 * it reaches the caller before their exit does. A reaped worker costs
 * nothing more here: the children it left in its group (they came back to
 * us as subreaper) are reaped by local_reap_strays once they end. A
 * waitpid(-group) per reaped worker and round scanned all our children
 * (workers and guards) each time: N rounds x N workers x 2N children,
 * seconds per job from a few hundred workers on. */
static void reap_ended(local_launcher_t *L)
{
    for (int i = 0; i < L->n; i++) {
        local_worker_t *w = &L->workers[i];
        if (w->pid <= 0 || w->reaped)
            continue;
        int ended = ended_unreaped(w->pid);
        if (ended == 0)
            continue;
        if (ended > 0)
            local_shm_sweep(w->pid);
        int status;
        pid_t p = waitpid(w->pid, &status, WNOHANG);
        if (p == w->pid || (p < 0 && errno == ECHILD)) {
            if (p < 0) {
                /* Reaped elsewhere (SIGCHLD ignored?): code unknown. */
                dt_warn("rank %d (pid %d): exit status lost: the process "
                        "was reaped outside the launcher; reporting it as "
                        "killed",
                        w->rank, (int)w->pid);
                status = SIGKILL;
            }
            w->status = status;
            w->reaped = 1;
            if (w->rank == 0)
                local_stdin_end(L); /* its input goes nowhere now */
            close_fd(&w->pidfd);
            local_drain_worker(L, w);
        }
    }
}

/* A worker of ours that has not been reaped yet (its status is
 * reap_ended's to collect). */
static int unreaped_worker(const local_launcher_t *L, pid_t pid)
{
    for (int i = 0; i < L->n; i++)
        if (L->workers[i].pid == pid && !L->workers[i].reaped)
            return 1;
    return 0;
}

/* Children that ended and are no unreaped worker: what a worker left
 * behind in its group or outside it (setsid, a daemon) comes back to
 * dtctl, the child subreaper, when its parent ends; reap those, or each
 * stays a zombie for as long as dtctl runs (one per worker and attempt
 * under --max-restarts). One scan of our children per zombie and call. */
void local_reap_strays(const local_launcher_t *L)
{
    for (int i = 0; i < 4096; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            si.si_pid <= 0 || unreaped_worker(L, si.si_pid))
            return; /* none ended, or a worker: reap_ended's next round */
        waitpid(si.si_pid, NULL, WNOHANG);
    }
}

static void describe_exit(const local_worker_t *w, dt_worker_exit_t *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->rank = w->rank;
    ev->host = w->host;
    if (WIFSIGNALED(w->status)) {
        ev->signaled = 1;
        ev->signo = WTERMSIG(w->status);
    } else {
        ev->code = WIFEXITED(w->status) ? WEXITSTATUS(w->status) : 0;
    }
}

/* 1: *ev holds an exit not yet reported; 0: none now; -1: all reported. */
static int next_report(local_launcher_t *L, dt_worker_exit_t *ev)
{
    int pending = 0;
    for (int i = 0; i < L->n; i++) {
        local_worker_t *w = &L->workers[i];
        if (w->reported || w->pid <= 0)
            continue;
        if (w->reaped) {
            w->reported = 1;
            describe_exit(w, ev);
            return 1;
        }
        pending = 1;
    }
    return pending ? 0 : -1;
}

/* Poll the open pipes and the pidfds of running workers. */
static dt_status_t poll_once(local_launcher_t *L, int wait_ms)
{
    size_t cap = (size_t)L->n * 3 + 1, n = 0;
    struct pollfd *pfd = calloc(cap ? cap : 1, sizeof *pfd);
    int *owner = calloc(cap ? cap : 1, sizeof *owner); /* worker*4+slot */
    dt_status_t st = DT_OK;
    if (!pfd || !owner) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    int need_tick = 0;
    for (int i = 0; i < L->n; i++) {
        local_worker_t *w = &L->workers[i];
        for (int which = 0; which < 2; which++)
            if (w->fds[which] >= 0) {
                pfd[n] = (struct pollfd){w->fds[which], POLLIN, 0};
                owner[n++] = i * 4 + which;
            }
        if (w->pid > 0 && !w->reaped) {
            if (w->pidfd >= 0) {
                pfd[n] = (struct pollfd){w->pidfd, POLLIN, 0};
                owner[n++] = i * 4 + 2;
            } else {
                need_tick = 1;
            }
        }
    }
    if (need_tick && (wait_ms < 0 || wait_ms > EXIT_CHECK_MS))
        wait_ms = EXIT_CHECK_MS;
    size_t nout = n; /* then rank 0's stdin relay, if any */
    n += local_stdin_pollfds(L, pfd + n);
    int r = poll(pfd, n, wait_ms);
    if (r < 0) {
        /* A signal for dtctl: return so its supervisor can act on it. */
        st = errno == EINTR ? DT_ERR_INTERRUPTED : DT_ERR_IO;
        if (st == DT_ERR_IO)
            dt_error("local launcher: poll failed: %s", strerror(errno));
        goto out;
    }
    local_stdin_events(L, pfd + nout, n - nout);
    for (size_t k = 0; k < nout && r > 0; k++) {
        if (!pfd[k].revents)
            continue;
        local_worker_t *w = &L->workers[owner[k] / 4];
        int slot = owner[k] % 4;
        if (slot < 2)
            forward_once(L, w, slot);
        /* a readable pidfd is handled by reap_ended() next round */
    }
out:
    free(pfd);
    free(owner);
    return st;
}

dt_status_t local_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev)
{
    local_launcher_t *L = ctx;
    if (!L || !ev)
        return DT_ERR_INVALID;
    long long deadline = timeout_ms < 0 ? -1 : dt_clock_now_ms() + timeout_ms;
    for (int polled = 0;; polled = 1) {
        reap_ended(L);
        local_reap_strays(L);
        int rep = next_report(L, ev);
        if (rep > 0)
            return DT_OK;
        if (rep < 0)
            return DT_ERR_NOT_FOUND;
        long long left = deadline < 0 ? -1 : deadline - dt_clock_now_ms();
        if (polled && deadline >= 0 && left <= 0)
            return DT_ERR_TIMEOUT;
        int wait_ms = deadline < 0 ? -1
                      : left <= 0    ? 0
                      : left > 60000 ? 60000
                                     : (int)left;
        dt_status_t st = poll_once(L, wait_ms);
        if (st == DT_ERR_INTERRUPTED)
            return DT_ERR_TIMEOUT; /* "none ended yet": caller looks again */
        if (st != DT_OK)
            return st;
    }
}
