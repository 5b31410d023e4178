/* proc.c — child processes for the scheduler clients (qsub, qdel, ...):
 * posix_spawn with default signals, an empty signal mask and a process
 * group of their own; output through pipes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
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

static dt_status_t spawn(const char *const *argv, char *const *envp,
                         int merge, int tty, proc_t *p)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    dt_status_t st = DT_ERR_IO;
    p->pid = 0;
    p->out_fd = p->err_fd = -1;
    if ((tty ? pty_pipe(out) : pipe2(out, O_CLOEXEC)) != 0 ||
        (!merge && pipe2(err, O_CLOEXEC) != 0)) {
        dt_error("cannot start '%s': pipe: %s", argv[0], strerror(errno));
        goto close;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, merge ? out[1] : err[1], 2);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
    int e = posix_spawnp(&p->pid, argv[0], &fa, &at, (char *const *)argv,
                         envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
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
