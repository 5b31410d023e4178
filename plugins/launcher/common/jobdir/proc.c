/* proc.c — child processes for the scheduler clients (qsub, qdel, ...):
 * fork/exec with default signals, an empty signal mask, a process group of
 * their own and SIGTERM when dtctl dies (../spawn/child.h: not
 * posix_spawn, which cannot set that); output through pipes. proc_run
 * also runs on helper threads (run_on_host for the storage plugins),
 * which wait for the child, so the signal never comes early. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "../spawn/child.h"
#include "jobdir.h"

extern char **environ;

char **proc_env_without_token(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "DT_JOB_TOKEN=", 13) != 0)
            env[k++] = environ[i];
    return env;
}

/* A pseudo-terminal as a pipe: out[0] the master, out[1] the slave, with
 * output processing off (no \r added). */
static int pty_pipe(int out[2])
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0)
        return -1;
    char *name = m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0
                     ? ptsname(m)
                     : NULL;
    int s = name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
    if (s < 0) {
        close(m);
        return -1;
    }
    struct termios t;
    if (tcgetattr(s, &t) == 0) {
        t.c_oflag &= ~(tcflag_t)OPOST;
        t.c_lflag &= ~(tcflag_t)(ECHO | ICANON | ISIG);
        tcsetattr(s, TCSANOW, &t);
    }
    out[0] = m;
    out[1] = s;
    return 0;
}

/* fd as the child's `target`, open across exec (both ends of our pipes
 * are close-on-exec). */
static int to_fd(int fd, int target)
{
    if (fd == target)
        return fcntl(fd, F_SETFD, 0);
    return dup2(fd, target) < 0 ? -1 : 0;
}

/* In the child (async-signal-safe only: dtctl has threads): signals as on
 * a fresh start, a group of its own, SIGTERM when dtctl dies, stdin from
 * /dev/null, stdout/stderr, exec; errno on status_w if that fails. */
static void child_exec(const char *const *argv, char *const *envp,
                       pid_t parent, int out_w, int err_w, int status_w)
{
    spawn_child_reset_signals();
    setpgid(0, 0);
    spawn_child_die_with_parent(SIGTERM, parent);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0 && to_fd(null_fd, 0) == 0 && to_fd(out_w, 1) == 0 &&
        to_fd(err_w, 2) == 0)
        execvpe(argv[0], (char *const *)argv, envp);
    int e = errno;
    ssize_t w = write(status_w, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* fork + child_exec; 0 once the child exec'd, else its errno (it is
 * reaped). The status pipe closes empty at a successful exec. */
static int fork_exec(const char *const *argv, char *const *envp, int out_w,
                     int err_w, pid_t *pid)
{
    int st[2];
    if (pipe2(st, O_CLOEXEC) != 0)
        return errno;
    for (int i = 0; i < 2; i++) /* never 0-2, which the child replaces */
        if (st[i] <= 2) {
            int high = fcntl(st[i], F_DUPFD_CLOEXEC, 3);
            close(st[i]);
            st[i] = high;
        }
    if (st[0] < 0 || st[1] < 0) {
        int e = errno;
        for (int i = 0; i < 2; i++)
            if (st[i] >= 0)
                close(st[i]);
        return e;
    }
    /* dtctl's handlers must not run in the child before it resets them */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t self = getpid();
    *pid = fork();
    if (*pid == 0)
        child_exec(argv, envp, self, out_w, err_w, st[1]);
    int e = *pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(st[1]);
    if (*pid > 0) {
        setpgid(*pid, *pid); /* EACCES after exec: the child did it */
        ssize_t r;
        while ((r = read(st[0], &e, sizeof e)) < 0 && errno == EINTR)
            ;
        if (r != (ssize_t)sizeof e)
            e = 0;
        else
            while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
                ;
    }
    close(st[0]);
    return e;
}

static dt_status_t spawn(const char *const *argv, char *const *envp,
                         int merge, int tty, proc_t *p)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    dt_status_t st = DT_ERR_IO;
    p->pid = 0;
    p->out_fd = p->err_fd = -1;
    if ((tty ? pty_pipe(out) : pipe2(out, O_CLOEXEC)) != 0 ||
        (!merge && pipe2(err, O_CLOEXEC) != 0)) {
        dt_error("cannot start '%s': pipe: %s", argv[0], strerror(errno));
        goto close;
    }
    int e = fork_exec(argv, envp ? envp : environ, out[1],
                      merge ? out[1] : err[1], &p->pid);
    if (e != 0) {
        dt_error("cannot run '%s': %s%s", argv[0], strerror(e),
                 e == ENOENT ? " (is it installed and on PATH?)" : "");
        p->pid = 0;
        st = e == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
        goto close;
    }
    p->out_fd = out[0];
    p->err_fd = err[0];
    out[0] = err[0] = -1;
    for (int i = 0; i < 2; i++) {
        int fd = i ? p->err_fd : p->out_fd;
        if (fd >= 0)
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    st = DT_OK;
close:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    return st;
}

dt_status_t proc_start(const char *const *argv, char *const *envp, int tty,
                       proc_t *p)
{
    return spawn(argv, envp, 0, tty, p);
}

int proc_read(int *fd, strbuf_t *b, size_t max)
{
    if (*fd < 0)
        return 0;
    for (;;) {
        char chunk[4096];
        ssize_t n = read(*fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 1; /* EIO from a pty master: its slave closed, EOF */
        if (n <= 0) {
            close(*fd);
            *fd = -1;
            return 0;
        }
        size_t keep = (size_t)n;
        if (b->len + keep > max)
            keep = b->len < max ? max - b->len : 0;
        sb_addn(b, chunk, keep);
    }
}

int proc_reaped(proc_t *p, int *status, int block)
{
    if (p->pid <= 0)
        return 1;
    for (;;) {
        pid_t r = waitpid(p->pid, status, block ? 0 : WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return 0;
        if (r < 0)
            *status = SIGKILL; /* reaped elsewhere: reads as killed */
        p->pid = 0;
        return 1;
    }
}

dt_status_t proc_run(const char *const *argv, char *const *envp,
                     int timeout_ms, char **output, int *code)
{
    proc_t p;
    strbuf_t b = {0};
    *output = NULL;
    dt_status_t st = spawn(argv, envp, 1, 0, &p);
    if (st != DT_OK)
        return st;
    long long deadline = dt_clock_now_ms() + timeout_ms;
    while (p.out_fd >= 0) {
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0) {
            dt_error("'%s' did not finish within %d s; stopped it", argv[0],
                     timeout_ms / 1000);
            kill(-p.pid, SIGKILL);
            st = DT_ERR_TIMEOUT;
            break;
        }
        struct pollfd pfd = {p.out_fd, POLLIN, 0};
        if (poll(&pfd, 1, (int)left) > 0)
            proc_read(&p.out_fd, &b, 1 << 20);
    }
    if (p.out_fd >= 0)
        close(p.out_fd);
    int status = 0;
    proc_reaped(&p, &status, 1);
    if (st == DT_OK) {
        *code = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                    : WEXITSTATUS(status);
        sb_add(&b, "");
        st = sb_status(&b);
    }
    if (st == DT_OK) {
        *output = b.s ? b.s : strdup("");
        if (!*output)
            st = DT_ERR_NOMEM;
    } else {
        sb_free(&b);
    }
    return st;
}
