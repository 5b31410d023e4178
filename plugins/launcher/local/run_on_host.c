/* run_on_host.c — run a short command on this machine and collect its
 * output (stdout and stderr together) and exit code. Bounded in time and
 * memory: a probe must never hang dtctl. */
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
#include <dt/hosts.h>
#include <dt/clock.h>
#include "local.h"
#include "../common/spawn/spawn.h"

#define RUN_TIMEOUT_MS 60000
#define RUN_OUTPUT_MAX (1u << 20)

extern char **environ;

/* Read fd to EOF into *buf (NUL-terminated, at most RUN_OUTPUT_MAX kept).
 * DT_ERR_TIMEOUT when the deadline passes first. */
static dt_status_t read_all(int fd, long long deadline, char **buf,
                            size_t *len)
{
    size_t cap = 4096;
    char *b = malloc(cap);
    if (!b)
        return DT_ERR_NOMEM;
    *len = 0;
    for (;;) {
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0) {
            b[*len] = '\0';
            *buf = b;
            return DT_ERR_TIMEOUT;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno != EINTR) {
            free(b);
            return DT_ERR_IO;
        }
        if (r <= 0)
            continue;
        char chunk[4096];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        size_t keep = (size_t)n;
        if (*len + keep > RUN_OUTPUT_MAX)
            keep = RUN_OUTPUT_MAX - *len; /* drop the excess, keep reading */
        if (*len + keep + 1 > cap) {
            while (*len + keep + 1 > cap)
                cap *= 2;
            char *nb = realloc(b, cap);
            if (!nb) {
                free(b);
                return DT_ERR_NOMEM;
            }
            b = nb;
        }
        memcpy(b + *len, chunk, keep);
        *len += keep;
    }
    b[*len] = '\0';
    *buf = b;
    return DT_OK;
}

dt_status_t local_run_on_host(void *ctx, const dt_host_t *host,
                              const char *const *argv, char **output,
                              int *exit_code)
{
    (void)ctx;
    if (!host || !argv || !argv[0] || !output || !exit_code)
        return DT_ERR_INVALID;
    *output = NULL;
    if (!dt_host_is_local(host->name)) {
        dt_error("local launcher: cannot run '%s' on host '%s': the local "
                 "launcher reaches this machine only; use --launcher=ssh",
                 argv[0], host->name);
        return DT_ERR_UNSUPPORTED;
    }
    spawn_req_t req = {argv, environ, NULL, 1, 1, 0, 0, SPAWN_STDIN_NULL, 0};
    spawn_child_t child;
    char why[1024];
    dt_status_t st = spawn_start(&req, &child, why, sizeof why);
    if (st != DT_OK) {
        dt_error("%s: %s", host->name, why);
        return st;
    }
    size_t len = 0;
    st = read_all(child.out_fd, dt_clock_now_ms() + RUN_TIMEOUT_MS, output, &len);
    close(child.out_fd);
    if (st == DT_ERR_TIMEOUT)
        dt_error("%s: '%s' did not finish within %d s; stopped it",
                 host->name, argv[0], RUN_TIMEOUT_MS / 1000);
    if (st != DT_OK)
        kill(-child.pid, SIGKILL);
    int status = 0;
    while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* Anything the command left in its group goes too, while the group
     * is ours: members left (our children, as subreaper) keep its number;
     * an empty group's number may be another process's by now. */
    pid_t left;
    while ((left = waitpid(-child.pid, NULL, WNOHANG)) > 0)
        ;
    if (left == 0)
        kill(-child.pid, SIGKILL);
    while (waitpid(-child.pid, NULL, 0) > 0 || errno == EINTR)
        ;
    if (st != DT_OK) {
        free(*output);
        *output = NULL;
        return st;
    }
    *exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : WEXITSTATUS(status);
    return DT_OK;
}
