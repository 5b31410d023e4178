/* stg_run.c — a short script on one host: through the launcher's
 * run_on_host, or, for this machine without a launcher, a child process of
 * our own (bounded in time and output, never a hang). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#include "stg.h"

#define LOCAL_TIMEOUT_MS 60000
#define LOCAL_OUTPUT_MAX (1u << 20)

/* "sh", "-c", script, "dt-stage", args..., NULL. */
static const char **build_argv(const char *script, const char *const *args)
{
    size_t n = 0;
    while (args && args[n])
        n++;
    const char **argv = calloc(n + 5, sizeof *argv);
    if (!argv)
        return NULL;
    argv[0] = "sh";
    argv[1] = "-c";
    argv[2] = script;
    argv[3] = "dt-stage";
    for (size_t i = 0; i < n; i++)
        argv[4 + i] = args[i];
    return argv;
}

/* Read fd until EOF or the deadline into a growing buffer. */
static dt_status_t drain(int fd, long long deadline, char **buf)
{
    size_t len = 0, cap = 4096;
    char *b = malloc(cap);
    if (!b)
        return DT_ERR_NOMEM;
    dt_status_t st = DT_OK;
    for (;;) {
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0) {
            st = DT_ERR_TIMEOUT;
            break;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (r < 0 && errno != EINTR) {
            st = DT_ERR_IO;
            break;
        }
        if (r <= 0)
            continue;
        char chunk[4096];
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            break;
        size_t n = (size_t)got;
        if (len + n > LOCAL_OUTPUT_MAX)
            n = LOCAL_OUTPUT_MAX - len;
        if (len + n + 1 > cap) {
            while (len + n + 1 > cap)
                cap *= 2;
            char *nb = realloc(b, cap);
            if (!nb) {
                st = DT_ERR_NOMEM;
                break;
            }
            b = nb;
        }
        memcpy(b + len, chunk, n);
        len += n;
    }
    b[len] = '\0';
    *buf = b;
    return st;
}

dt_status_t stg_run_local(const char *script, const char *const *args,
                          char **out, int *code)
{
    const char **argv = build_argv(script, args);
    int fds[2] = {-1, -1};
    if (!argv)
        return DT_ERR_NOMEM;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        dt_error("storage: cannot create a pipe: %m");
        free(argv);
        return DT_ERR_IO;
    }
    pid_t pid = fork();
    if (pid < 0) {
        dt_error("storage: cannot start sh on this machine: %m");
        close(fds[0]);
        close(fds[1]);
        free(argv);
        return DT_ERR_IO;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        execv("/bin/sh", (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    free(argv);
    char *buf = NULL;
    dt_status_t st = drain(fds[0], dt_clock_now_ms() + LOCAL_TIMEOUT_MS, &buf);
    close(fds[0]);
    if (st == DT_ERR_TIMEOUT) {
        dt_error("storage: a check on this machine did not finish within "
                 "%d s; stopped it", LOCAL_TIMEOUT_MS / 1000);
        kill(pid, SIGKILL);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (st != DT_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *code = WIFEXITED(status) ? WEXITSTATUS(status)
                              : 128 + WTERMSIG(status);
    return DT_OK;
}

dt_status_t stg_run(const dt_stage_request_t *req, const dt_host_t *h,
                    const char *script, const char *const *args, char **out,
                    int *code)
{
    *out = NULL;
    *code = -1;
    if (req->remote && req->remote->run) {
        const char **argv = build_argv(script, args);
        if (!argv)
            return DT_ERR_NOMEM;
        dt_status_t st = req->remote->run(req->remote->ctx, h, argv, out,
                                          code);
        free(argv);
        if (st != DT_OK)
            dt_error("storage: host %s: could not run the check there (%s; "
                     "see above)", h->name, dt_status_str(st));
        return st;
    }
    if (dt_host_is_local(h->name))
        return stg_run_local(script, args, out, code);
    dt_error("storage: host %s: the launcher cannot run commands on other "
             "hosts, so the data set cannot be checked or copied there; use "
             "a launcher that can (ssh), or skip staging with --no-stage",
             h->name);
    return DT_ERR_UNSUPPORTED;
}
