/* rsync_proc.c — one rsync process: started with pipes, its progress
 * shown (a line every few seconds per host), its --stats kept, its
 * stderr's tail kept for the error message. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "rsync_storage.h"

#define KEEP 16384           /* tail of stdout kept: the --stats report */
#define PROGRESS_EVERY_MS 2000

typedef struct tail {
    char b[KEEP + 1];
    size_t n;
} tail_t;

static void tail_add(tail_t *t, const char *d, size_t n, size_t cap)
{
    if (n >= cap) {
        d += n - cap;
        n = cap;
    }
    if (t->n + n > cap) {
        size_t drop = t->n + n - cap;
        memmove(t->b, t->b + drop, t->n - drop);
        t->n -= drop;
    }
    memcpy(t->b + t->n, d, n);
    t->n += n;
    t->b[t->n] = '\0';
}

/* The latest progress2 line in the chunk ("  1,234  45%  1.2MB/s ..."). */
static void show_progress(stage_run_t *run, const char *host,
                          const char *d, size_t n, long long *last)
{
    if (!run->progress || dt_clock_now_ms() - *last < PROGRESS_EVERY_MS)
        return;
    /* The last complete segment between \r or \n that has a '%'. */
    const char *best = NULL;
    size_t best_len = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || d[i] == '\r' || d[i] == '\n') {
            if (memchr(d + start, '%', i - start)) {
                best = d + start;
                best_len = i - start;
            }
            start = i + 1;
        }
    if (!best)
        return;
    while (best_len && *best == ' ') {
        best++;
        best_len--;
    }
    pthread_mutex_lock(&run->out_mu);
    dt_info("storage rsync: %s: %.*s", host, (int)best_len, best);
    pthread_mutex_unlock(&run->out_mu);
    *last = dt_clock_now_ms();
}

dt_status_t rsync_run_proc(stage_run_t *run, const char *host,
                           char *const *argv, rs_stats_t *stats,
                           char *exit_desc, size_t exit_len, char *err,
                           size_t err_len)
{
    int out[2] = {-1, -1}, er[2] = {-1, -1};
    tail_t *so = calloc(1, sizeof *so), *se = calloc(1, sizeof *se);
    dt_status_t st = DT_ERR_IO;
    pid_t pid = -1;
    err[0] = '\0';
    snprintf(exit_desc, exit_len, "not started");
    if (!so || !se) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(er, O_CLOEXEC) != 0) {
        snprintf(err, err_len, "cannot create a pipe: %s", strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(err, err_len, "cannot fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        dup2(out[1], 1);
        dup2(er[1], 2);
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(er[1]);
    out[1] = er[1] = -1;
    long long last = dt_clock_now_ms();
    int open_fds = 2;
    while (open_fds > 0) {
        struct pollfd p[2] = {{out[0], POLLIN, 0}, {er[0], POLLIN, 0}};
        if (poll(p, 2, 1000) < 0 && errno != EINTR)
            break;
        for (int k = 0; k < 2; k++) {
            if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[8192];
            ssize_t n = read(p[k].fd, chunk, sizeof chunk);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0) {
                close(k == 0 ? out[0] : er[0]);
                if (k == 0)
                    out[0] = -1;
                else
                    er[0] = -1;
                open_fds--;
                continue;
            }
            if (k == 0) {
                tail_add(so, chunk, (size_t)n, KEEP);
                show_progress(run, host, chunk, (size_t)n, &last);
            } else {
                tail_add(se, chunk, (size_t)n, 2048);
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    rs_parse_stats(so->b, stats);
    /* stderr's tail as one line for the message. */
    size_t w = 0;
    for (size_t i = 0; i < se->n && w + 3 < err_len; i++) {
        char c = se->b[i];
        if (c == '\n' || c == '\r') {
            if (i + 1 < se->n && w + 3 < err_len) {
                err[w++] = ';';
                err[w++] = ' ';
            }
        } else {
            err[w++] = c;
        }
    }
    err[w] = '\0';
    if (WIFSIGNALED(status)) {
        snprintf(exit_desc, exit_len, "killed by signal %d", WTERMSIG(status));
        st = DT_ERR_INTERRUPTED;
    } else if (WEXITSTATUS(status) != 0) {
        snprintf(exit_desc, exit_len, "exit %d", WEXITSTATUS(status));
        st = DT_ERR_IO;
    } else {
        snprintf(exit_desc, exit_len, "exit 0");
        st = DT_OK;
    }
out:
    for (int k = 0; k < 2; k++) {
        if (out[k] >= 0)
            close(out[k]);
        if (er[k] >= 0)
            close(er[k]);
    }
    free(so);
    free(se);
    return st;
}
