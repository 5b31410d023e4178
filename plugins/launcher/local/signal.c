/* signal.c — signals to workers and the final kill-and-reap. Each worker
 * leads its own process group, so kill(-pgid) reaches whatever it
 * started (shells, data loaders, background children). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/log.h>
#include "local.h"

/* Does the group of a reaped leader still have members? They are our
 * children (orphans come back to us as subreaper), and while one lives
 * the kernel keeps the number, so it cannot be another process's group.
 * Once it is empty the number is free: a new process may take it as its
 * pid and group, and kill(-pid) would hit a stranger. */
static int group_alive(const local_worker_t *w)
{
    int status;
    pid_t p;
    while ((p = waitpid(-w->pid, &status, WNOHANG)) > 0)
        ; /* members that ended: reaped, keep looking */
    return p == 0; /* members left that have not ended; -1: none */
}

/* Signal the group even after its leader ended (children it left behind
 * keep it), but only while it is ours: an unreaped leader holds the
 * number, else group_alive says. */
static void signal_group(const local_worker_t *w, int signo)
{
    if (w->pid <= 0 || (w->reaped && !group_alive(w)))
        return;
    if (kill(-w->pid, signo) != 0 && errno == ESRCH && !w->reaped)
        kill(w->pid, signo); /* not yet its own group leader */
}

dt_status_t local_signal(void *ctx, int signo)
{
    local_launcher_t *L = ctx;
    if (!L)
        return DT_ERR_INVALID;
    for (int i = 0; i < L->n; i++)
        signal_group(&L->workers[i], signo);
    return DT_OK;
}

void local_kill_and_reap(local_launcher_t *L)
{
    for (int i = 0; i < L->n; i++)
        signal_group(&L->workers[i], SIGKILL);
    for (int i = 0; i < L->n; i++) {
        local_worker_t *w = &L->workers[i];
        if (w->pid <= 0) {
            w->reported = 1;
            continue;
        }
        if (!w->reaped) {
            siginfo_t si; /* ended, still unreaped: see local_shm_sweep */
            while (waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOWAIT) < 0 &&
                   errno == EINTR)
                ;
            local_shm_sweep(w->pid);
            int status;
            pid_t p;
            while ((p = waitpid(w->pid, &status, 0)) < 0 && errno == EINTR)
                ;
            w->status = p == w->pid ? status : SIGKILL;
            w->reaped = 1;
        }
        /* The group's other members (orphans handed to us as subreaper). */
        while (waitpid(-w->pid, NULL, 0) > 0 || errno == EINTR)
            ;
        local_drain_worker(L, w);
    }
}
