/* signal.c — signals to workers and the final kill-and-reap. Each worker
 * leads its own process group, so kill(-pgid) reaches whatever it
 * started (shells, data loaders, background children). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
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

/* Our children's pids, from /proc/self/task/TID/children (every thread:
 * a subreaper's orphans go to any of them); *n of them, at most cap. */
static size_t children_of_self(pid_t *out, size_t cap)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    char path[64];
    while ((e = readdir(d)) && n < cap) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%.20s/children",
                 e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        long pid;
        while (n < cap && fscanf(f, "%ld", &pid) == 1)
            out[n++] = (pid_t)pid;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Once every worker and its group are reaped, any child left is a
 * descendant that left its worker's group (setsid, a daemon) and came
 * back to us as subreaper: it would outlive the attempt (and dtctl), one
 * per worker and restart. SIGKILLed and reaped; its own children come
 * back to us in turn, so a few rounds. */
static void kill_strays(local_launcher_t *L)
{
    pid_t kids[256];
    for (int round = 0; round < 16; round++) {
        size_t n = children_of_self(kids, sizeof kids / sizeof *kids);
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            dt_debug("local launcher: pid %d, left by a worker outside its "
                     "process group, stopped with the job", (int)kids[i]);
            kill(kids[i], SIGKILL);
        }
        for (size_t i = 0; i < n; i++)
            while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
                ;
    }
    local_reap_strays(L);
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
    if (L->n > 0)
        kill_strays(L);
}
