/* plugin_isolate.c — a plugin call in a child process (plugin_isolate.h):
 * what comes back through a pipe is the call's return and text; a child
 * that ends any other way, or not in time, is described instead. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin_isolate.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

/* Shared with the child: the op it is in (dt_isolated_op). */
#define OP_LEN 32
static char *op_page;

void dt_isolated_op(const char *op)
{
    if (op_page)
        snprintf(op_page, OP_LEN, "%s", op);
}

/* The child: the call, then its answer as ret, length, text. */
static void child(int wfd, dt_isolated_fn_t fn, void *arg, size_t out_len)
{
    /* A crash must end the child by its signal, whatever the parent
     * installed, so that the parent can name it. */
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        signal(faults[i], SIG_DFL);
    char *out = calloc(1, out_len ? out_len : 1);
    int32_t ret = fn(arg, out, out_len);
    uint32_t len = out ? (uint32_t)strnlen(out, out_len) : 0;
    write_all(wfd, &ret, sizeof ret);
    write_all(wfd, &len, sizeof len);
    if (len)
        write_all(wfd, out, len);
    _exit(0); /* no atexit handler of the parent's runs twice */
}

/* Read the child's answer until it is whole, EOF, or the deadline.
 * 1: whole; 0: EOF first; -1: deadline. */
static int read_answer(int rfd, long long deadline, char *buf, size_t cap,
                       size_t *got)
{
    *got = 0;
    for (;;) {
        if (*got >= 8) {
            uint32_t len;
            memcpy(&len, buf + 4, sizeof len);
            if (*got >= 8 + (size_t)len || *got >= cap)
                return 1;
        }
        long long left = deadline - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = rfd, .events = POLLIN};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno != EINTR)
            return 0;
        if (r <= 0)
            continue;
        ssize_t n = read(rfd, buf + *got, cap - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        *got += (size_t)n;
    }
}

/* Reap pid by the deadline, else kill it. 1: reaped in time; 0:
 * killed; -1: reaped elsewhere (a program's SIGCHLD handler): its status
 * unknown. */
static int reap(pid_t pid, long long deadline, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 1;
        if (r < 0 && errno == ECHILD)
            return -1;
        if (r < 0 && errno != EINTR)
            return 0;
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR)
                ;
            return 0;
        }
        poll(NULL, 0, 10);
    }
}

/* Off in a worker (dt_init): a fork of a process that may hold a GPU
 * context, threads and gigabytes is no place for a probe, and a crash
 * there is said by the worker's crash report (plugin_crash.h). */
static atomic_int isolation_off;

void dt_isolation_disable(void)
{
    atomic_store(&isolation_off, 1);
}

int dt_run_isolated(dt_isolated_fn_t fn, void *arg, int timeout_s,
                    char *out, size_t out_len, dt_isolated_t *res)
{
    memset(res, 0, sizeof *res);
    if (atomic_load(&isolation_off)) {
        errno = 0; /* not a failure: the caller calls fn itself */
        return -1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    char *page = mmap(NULL, OP_LEN, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        page = NULL;
    /* Unwritten output would be written again by a child that exits. */
    fflush(NULL);
    /* SIGCHLD ignored (inherited through exec) would reap the child at
     * once, and a check that returned would read as hung: the default
     * while it runs (dtctl has no other thread then). */
    struct sigaction chld, had;
    int restore = sigaction(SIGCHLD, NULL, &had) == 0 &&
                  !(had.sa_flags & SA_SIGINFO) && had.sa_handler == SIG_IGN;
    if (restore) {
        memset(&chld, 0, sizeof chld);
        chld.sa_handler = SIG_DFL;
        sigemptyset(&chld.sa_mask);
        sigaction(SIGCHLD, &chld, NULL);
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        if (restore)
            sigaction(SIGCHLD, &had, NULL);
        close(fds[0]);
        close(fds[1]);
        if (page)
            munmap(page, OP_LEN);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        /* In dtctl's group, so a Ctrl-C ends it with dtctl; and ended
         * should dtctl die otherwise (SIGKILL, a closed terminal) while
         * it waits for a check that hangs. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(fds[0]);
        op_page = page;
        child(fds[1], fn, arg, out_len);
    }
    close(fds[1]);
    long long deadline = now_ms() + (long long)timeout_s * 1000;
    size_t cap = 8 + out_len, got = 0;
    char *buf = malloc(cap);
    int answer = buf ? read_answer(fds[0], deadline, buf, cap, &got) : 0;
    close(fds[0]);
    int status = 0;
    int reaped = answer >= 0 ? reap(pid, deadline, &status) : 0;
    if (restore)
        sigaction(SIGCHLD, &had, NULL);
    if (reaped < 0) /* reaped elsewhere: the answer, if whole, tells */
        status = answer == 1 ? 0 : (1 << 8);
    int in_time = reaped != 0;
    if (!in_time) {
        if (answer < 0)
            reap(pid, 0, &status); /* kills it */
        res->hung = 1;
    } else if (answer == 1 && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0) {
        int32_t ret;
        uint32_t len;
        memcpy(&ret, buf, sizeof ret);
        memcpy(&len, buf + 4, sizeof len);
        res->returned = 1;
        res->ret = ret;
        if (out_len) {
            size_t n = len < out_len ? len : out_len - 1;
            memcpy(out, buf + 8, n);
            out[n] = '\0';
        }
    } else if (WIFSIGNALED(status)) {
        res->signo = WTERMSIG(status);
    } else {
        res->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (page) {
        memcpy(res->op, page, OP_LEN);
        res->op[OP_LEN - 1] = '\0';
        munmap(page, OP_LEN);
    }
    free(buf);
    return 0;
}

void dt_isolated_describe(const dt_isolated_t *res, const char *op,
                          const char *path, int timeout_s, char *why,
                          size_t why_len)
{
    if (res->op[0])
        op = res->op;
    if (res->hung)
        snprintf(why, why_len,
                 "hung in %s(): it did not return within %d s and was "
                 "killed; rebuild or remove %s",
                 op, timeout_s, path);
    else if (res->signo)
        snprintf(why, why_len,
                 "crashed in %s() (signal %d: %s): rebuild or remove %s", op,
                 res->signo, strsignal(res->signo), path);
    else
        snprintf(why, why_len,
                 "ended its process in %s() (exit code %d) instead of "
                 "returning: rebuild or remove %s",
                 op, res->code, path);
}
