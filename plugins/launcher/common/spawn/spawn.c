/* spawn.c — fork/exec of one worker. The child does only
 * async-signal-safe work (dtctl may have threads); everything it needs is
 * prepared before fork. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "spawn.h"

enum { STAGE_CHDIR = 1, STAGE_EXEC = 2 };

/* What the child reports when it cannot reach exec. */
typedef struct child_failure {
    int stage;
    int err;
} child_failure_t;

/* Keep our descriptors off 0, 1 and 2 (dtctl may run with them closed),
 * so the child's dup2 onto 0-2 never meets one of its own sources. */
static int fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return high;
}

static int pipe_above_stdio(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    p[0] = fd_above_stdio(p[0]);
    p[1] = fd_above_stdio(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        if (p[0] >= 0)
            close(p[0]);
        if (p[1] >= 0)
            close(p[1]);
        return -1;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void report_and_exit(int status_fd, int stage)
{
    child_failure_t f = {stage, errno};
    ssize_t w = write(status_fd, &f, sizeof f);
    (void)w;
    _exit(127);
}

/* In the child: default signal handling (and the parent-death signal
 * asked for), a process group of its own, stdio, directory, exec. */
static void child_exec(const spawn_req_t *req, pid_t parent, int in_r,
                       int out_w, int err_w, int status_w)
{
    spawn_child_reset_signals();
    if (req->ignore_sigpipe) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ign, NULL);
    }
    spawn_child_die_with_parent(req->die_with_parent, parent);
    setpgid(0, 0);
    if (in_r >= 0) /* else SPAWN_STDIN_OURS: fd 0 stays */
        dup2(in_r, STDIN_FILENO);
    if (out_w >= 0) {
        dup2(out_w, STDOUT_FILENO);
        dup2(err_w >= 0 ? err_w : out_w, STDERR_FILENO);
    }
    if (req->workdir && chdir(req->workdir) != 0)
        report_and_exit(status_w, STAGE_CHDIR);
    execvpe(req->argv[0], (char *const *)req->argv, req->envp);
    report_and_exit(status_w, STAGE_EXEC);
}

/* Block until the child either exec'd (the pipe closes empty) or told us
 * why it could not. 1: it failed, details in *f. */
static int read_child_failure(int status_r, child_failure_t *f)
{
    for (;;) {
        ssize_t r = read(status_r, f, sizeof *f);
        if (r < 0 && errno == EINTR)
            continue;
        return r == (ssize_t)sizeof *f;
    }
}

/* A directory named as the program fails with EACCES, whose usual hint
 * (chmod +x) would not help. */
static int is_directory(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Why argv[0] did not start, with the habit behind the usual ENOENT: a
 * program in the worker's directory named without "./" (PATH is searched
 * for names without a '/'), or a script torchrun would run with python. */
static void exec_failure(const spawn_req_t *req, int err, char *why,
                         size_t why_len)
{
    const char *prog = req->argv[0], *hint = "";
    char path[4096];
    size_t len = strlen(prog);
    snprintf(path, sizeof path, "%s/%s", req->workdir ? req->workdir : ".",
             prog);
    if (err == ENOENT && !strchr(prog, '/') && len > 3 &&
        strcmp(prog + len - 3, ".py") == 0)
        hint = "; a Python script runs as: -- python3 SCRIPT.py";
    else if (err == ENOENT && !strchr(prog, '/') && access(path, F_OK) == 0)
        hint = "; it is in the workers' directory, where PATH is not "
               "searched: write ./PROGRAM";
    else if (err == EACCES && strchr(prog, '/') &&
             is_directory(prog[0] == '/' ? prog : path))
        hint = "; it is a directory: name the program inside it to run";
    else if (err == EACCES)
        hint = "; is it executable (chmod +x)?";
    else if (err == E2BIG)
        hint = "; the program's arguments and environment together exceed "
               "the system's limit (getconf ARG_MAX, a quarter of `ulimit "
               "-s`; one string at most 128 KiB): a very large variable "
               "from [cluster] env_vars, -x or dtctl's environment?";
    snprintf(why, why_len, "cannot execute '%s': %s%s", prog, strerror(err),
             hint);
}

dt_status_t spawn_start(const spawn_req_t *req, spawn_child_t *child,
                        char *why, size_t why_len)
{
    int status[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    int in[2] = {-1, -1};
    int null_fd = -1;
    dt_status_t st = DT_ERR_IO;
    child->pid = child->guard = 0;
    child->out_fd = child->err_fd = child->in_fd = -1;
    if (!req->argv || !req->argv[0] || !*req->argv[0]) {
        snprintf(why, why_len, "no program to execute");
        return DT_ERR_INVALID;
    }
    null_fd = fd_above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (null_fd < 0 || pipe_above_stdio(status) != 0 ||
        (req->capture && pipe_above_stdio(out) != 0) ||
        (req->capture && !req->merge_stderr && pipe_above_stdio(err) != 0) ||
        (req->stdin_from == SPAWN_STDIN_PIPE && pipe_above_stdio(in) != 0)) {
        snprintf(why, why_len, "cannot create pipes for '%s': %s",
                 req->argv[0], strerror(errno));
        goto out;
    }
    /* Signals stay blocked across fork so that dtctl's handlers never run
     * in the child before it resets them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(req, parent,
                   req->stdin_from == SPAWN_STDIN_PIPE   ? in[0]
                   : req->stdin_from == SPAWN_STDIN_OURS ? -1
                                                         : null_fd,
                   out[1], err[1], status[1]);
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        snprintf(why, why_len, "cannot start '%s': fork: %s%s", req->argv[0],
                 strerror(fork_errno),
                 fork_errno == EAGAIN
                     ? " (the user's process limit, `ulimit -u`, or the "
                       "cgroup's pids.max is reached: raise it or start "
                       "fewer workers)"
                     : "");
        goto out;
    }
    /* Also set the group here: whichever of parent and child runs first,
     * the group exists before anyone signals it. EACCES after exec is
     * fine (the child did it). */
    setpgid(pid, pid);
    close_fd(&status[1]);
    close_fd(&out[1]);
    close_fd(&err[1]);
    close_fd(&in[0]);
    child_failure_t f;
    if (read_child_failure(status[0], &f)) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        if (f.stage == STAGE_CHDIR)
            snprintf(why, why_len, "cannot change to directory '%s': %s",
                     req->workdir, strerror(f.err));
        else
            exec_failure(req, f.err, why, why_len);
        st = f.err == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
        goto out;
    }
    child->pid = pid;
    if (req->death_signal > 0)
        child->guard = spawn_guard_start(pid, req->death_signal);
    if (out[0] >= 0)
        fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    if (err[0] >= 0)
        fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
    /* Non-blocking: a worker that does not read its stdin must not block
     * dtctl's relay. */
    if (in[1] >= 0)
        fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
    child->out_fd = out[0];
    child->err_fd = err[0];
    child->in_fd = in[1];
    out[0] = err[0] = in[1] = -1;
    st = DT_OK;
out:
    close_fd(&null_fd);
    close_fd(&status[0]);
    close_fd(&status[1]);
    close_fd(&out[0]);
    close_fd(&out[1]);
    close_fd(&err[0]);
    close_fd(&err[1]);
    close_fd(&in[0]);
    close_fd(&in[1]);
    return st;
}
