/* slurm_cancel.c — scancel of our job or step, bounded in time. */
#define _GNU_SOURCE
#include <errno.h>
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
#include "../common/spawn/spawn.h"
#include "slurm.h"

/* A Slurm client that does not answer in this time is given up on. */
#define CLIENT_TIMEOUT_MS 15000

extern char **environ;

/* Run argv, collect up to len-1 bytes of its output; its exit code or -1. */
static int run_client(const char *const *argv, char *out, size_t len)
{
    /* no death signal: if dtctl dies now, the front-end's guard ends
     * the job */
    spawn_req_t req = {argv, environ, NULL, 1, 1, 0, 0, SPAWN_STDIN_NULL, 0};
    spawn_child_t child;
    char why[512];
    if (spawn_start(&req, &child, why, sizeof why) != DT_OK) {
        dt_warn("slurm launcher: %s", why);
        return -1;
    }
    size_t n = 0;
    long long deadline = dt_clock_now_ms() + CLIENT_TIMEOUT_MS;
    for (;;) {
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0) {
            dt_warn("slurm launcher: '%s' did not answer within %d s; "
                    "stopped it",
                    argv[0], CLIENT_TIMEOUT_MS / 1000);
            kill(-child.pid, SIGKILL);
            break;
        }
        struct pollfd p = {child.out_fd, POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        char chunk[1024];
        ssize_t k = read(child.out_fd, chunk, sizeof chunk);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (k <= 0)
            break;
        size_t keep = (size_t)k < len - 1 - n ? (size_t)k : len - 1 - n;
        memcpy(out + n, chunk, keep);
        n += keep;
    }
    out[n] = '\0';
    close(child.out_fd);
    int status = 0;
    while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Inside an allocation: "JOB.STEP" of our srun, found by its name. */
static int find_step(const slurm_launcher_t *L, char *id, size_t len)
{
    const char *argv[] = {"squeue", "--noheader", "--steps",
                          "--jobs",  L->alloc_id, "--format=%i %j", NULL};
    char out[8192];
    if (run_client(argv, out, sizeof out) != 0)
        return 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char step[64], name[128];
        if (sscanf(line, " %63s %127s", step, name) == 2 &&
            strcmp(name, L->step_name) == 0) {
            snprintf(id, len, "%s", step);
            return 1;
        }
    }
    return 0;
}

/* What scancel names: our new allocation (no batch step: only our srun's
 * step is in it), or our step in the user's allocation. 0: not known
 * (yet). */
static int our_target(const slurm_launcher_t *L, char *target, size_t len)
{
    if (!L->alloc_id[0])
        return 0;
    if (L->inside)
        return find_step(L, target, len);
    snprintf(target, len, "%s", L->alloc_id);
    return 1;
}

dt_status_t slurm_cancel(slurm_launcher_t *L, int signo)
{
    char target[96];
    if (!our_target(L, target, sizeof target))
        return DT_ERR_NOT_FOUND;
    char sig[32];
    snprintf(sig, sizeof sig, "--signal=%s", signo == SIGKILL ? "KILL" : "");
    const char *argv[] = {"scancel", target, NULL, NULL};
    if (signo == SIGKILL) { /* no grace: every task now */
        argv[1] = sig;
        argv[2] = target;
    }
    char out[1024];
    int rc = run_client(argv, out, sizeof out);
    dt_debug("slurm launcher: scancel %s%s: exit %d %s", target,
             signo == SIGKILL ? " (SIGKILL)" : "", rc, out);
    if (rc != 0) {
        dt_warn("slurm launcher: scancel %s failed (exit %d): %s", target, rc,
                out);
        return DT_ERR_IO;
    }
    L->cancelled = 1;
    return DT_OK;
}

dt_status_t slurm_stop_or_continue(slurm_launcher_t *L, int signo)
{
    const char *sig = signo == SIGSTOP ? "STOP" : "CONT";
    const char *left = signo == SIGSTOP ? "keep running" : "stay stopped";
    char target[96];
    if (!our_target(L, target, sizeof target)) {
        dt_error("slurm launcher: the workers may %s: the job%s is not "
                 "known to Slurm (yet), so SIG%s could not be sent",
                 left, L->inside ? " step" : "", sig);
        return DT_ERR_NOT_FOUND;
    }
    char opt[32];
    snprintf(opt, sizeof opt, "--signal=%s", sig);
    const char *argv[] = {"scancel", opt, target, NULL};
    char out[1024];
    int rc = run_client(argv, out, sizeof out);
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0'; /* one line in dtctl's message */
    dt_debug("slurm launcher: scancel %s %s: exit %d %s", opt, target, rc,
             out);
    if (rc != 0) {
        dt_error("slurm launcher: the workers may %s: scancel %s %s failed "
                 "(exit %d): %s",
                 left, opt, target, rc, out);
        return DT_ERR_IO;
    }
    return DT_OK;
}
