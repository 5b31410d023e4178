/* pump.c — the launcher's wait(): one ssh_event polls every host's
 * session; channel callbacks forward output per rank, take the group id
 * from the first stderr line and record exit statuses and signals. A rank
 * is reported once its exit status arrived and its output ended (or a
 * short grace passed: a leftover child may hold the pipe). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "pump.h"
#include "script.h"
#include "ssh_types.h"
#include "stdin_channel.h"

/* After the exit status, output that is still in flight gets this long. */
#define OUTPUT_GRACE_MS 2000
/* libssh errors in a row without any progress: the sessions are broken. */
#define MAX_POLL_ERRORS 50

static void emit(ssh_rank_t *rk, int fd, const char *data, size_t len)
{
    ssh_launcher_t *L = rk->L;
    if (!len)
        return;
    if (L->output) {
        L->output(L->output_arg, rk->rank, fd, data, len);
        return;
    }
    while (len) { /* no callback: dtctl's own stdout/stderr */
        ssize_t w = write(fd, data, len);
        if (w <= 0)
            return;
        data += w;
        len -= (size_t)w;
    }
}

/* stderr before the marker is kept (it explains a failed start); the
 * marker line itself is swallowed; everything after flows. */
static void take_stderr(ssh_rank_t *rk, const char *data, size_t len)
{
    if (rk->head_done) {
        emit(rk, 2, data, len);
        return;
    }
    size_t room = sizeof rk->head - rk->head_len - 1;
    size_t take = len < room ? len : room;
    memcpy(rk->head + rk->head_len, data, take);
    rk->head_len += take;
    rk->head[rk->head_len] = '\0';
    char *mark = strstr(rk->head, SSH_PGID_MARK);
    char *nl = mark ? strchr(mark, '\n') : NULL;
    if (mark && nl) {
        char *end = NULL;
        rk->pgid = strtol(mark + strlen(SSH_PGID_MARK), &end, 10);
        if (end && *end == ' ')
            rk->watchdog = strtol(end + 1, &end, 10);
        /* rank 0 reading dtctl's stdin: "DT-PGID <pgid> <watchdog> <fifo
         * dir>" */
        if (end && *end == ' ' && nl - end - 1 < (long)sizeof rk->stdin_dir)
            snprintf(rk->stdin_dir, sizeof rk->stdin_dir, "%.*s",
                     (int)(nl - end - 1), end + 1);
        else if (end && *end == ' ' && nl - end > 1)
            /* named but too long to keep: refused by ssh_stdin_open (an
             * empty name would mean "no fifo", and rank 0 would wait on
             * its fifo for ever) */
            snprintf(rk->stdin_dir, sizeof rk->stdin_dir, "?");
        rk->head_done = 1;
        emit(rk, 2, rk->head, (size_t)(mark - rk->head));
        emit(rk, 2, nl + 1, (size_t)(rk->head + rk->head_len - nl - 1));
        emit(rk, 2, data + take, len - take);
        rk->head_len = 0;
    } else if (take < len) { /* no marker in a full buffer: give up on it */
        rk->head_done = 1;
        emit(rk, 2, rk->head, rk->head_len);
        emit(rk, 2, data + take, len - take);
        rk->head_len = 0;
    }
}

static int on_data(ssh_session s, ssh_channel ch, void *data, uint32_t len,
                   int is_stderr, void *arg)
{
    (void)s;
    (void)ch;
    ssh_rank_t *rk = arg;
    if (is_stderr)
        take_stderr(rk, data, len);
    else
        emit(rk, 1, data, len);
    return (int)len;
}

static void on_eof(ssh_session s, ssh_channel ch, void *arg)
{
    (void)s;
    (void)ch;
    ((ssh_rank_t *)arg)->eof = 1;
}

static void on_close(ssh_session s, ssh_channel ch, void *arg)
{
    (void)s;
    (void)ch;
    ((ssh_rank_t *)arg)->closed = 1;
}

static void on_exit_status(ssh_session s, ssh_channel ch, int code, void *arg)
{
    (void)s;
    (void)ch;
    ssh_rank_t *rk = arg;
    if (rk->have_status)
        return;
    rk->have_status = 1;
    rk->code = code;
    rk->status_at = dt_clock_now_ms();
}

static int signal_number(const char *name)
{
    static const struct {
        const char *name;
        int signo;
    } tab[] = {{"ABRT", SIGABRT}, {"ALRM", SIGALRM}, {"BUS", SIGBUS},
               {"FPE", SIGFPE},   {"HUP", SIGHUP},   {"ILL", SIGILL},
               {"INT", SIGINT},   {"KILL", SIGKILL}, {"PIPE", SIGPIPE},
               {"QUIT", SIGQUIT}, {"SEGV", SIGSEGV}, {"TERM", SIGTERM},
               {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TRAP", SIGTRAP},
               {"SYS", SIGSYS},   {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}};
    for (size_t i = 0; name && i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(name, tab[i].name) == 0)
            return tab[i].signo;
    return SIGKILL; /* an unnamed signal: still a death by signal */
}

static void on_exit_signal(ssh_session s, ssh_channel ch, const char *sig,
                           int core, const char *msg, const char *lang,
                           void *arg)
{
    (void)s;
    (void)ch;
    (void)core;
    (void)msg;
    (void)lang;
    ssh_rank_t *rk = arg;
    if (rk->have_status)
        return;
    rk->have_status = 1;
    rk->signaled = 1;
    rk->signo = signal_number(sig);
    rk->status_at = dt_clock_now_ms();
}

void ssh_rank_callbacks(ssh_rank_t *rk)
{
    memset(&rk->cb, 0, sizeof rk->cb);
    rk->cb.userdata = rk;
    rk->cb.channel_data_function = on_data;
    rk->cb.channel_eof_function = on_eof;
    rk->cb.channel_close_function = on_close;
    rk->cb.channel_exit_status_function = on_exit_status;
    rk->cb.channel_exit_signal_function = on_exit_signal;
    ssh_callbacks_init(&rk->cb);
    ssh_set_channel_callbacks(rk->ch, &rk->cb);
}

void ssh_event_attach(ssh_launcher_t *L)
{
    for (size_t i = 0; L->event && i < L->nconns; i++) {
        ssh_conn_t *c = &L->conns[i];
        if (c->s && !c->in_event && !c->lost &&
            ssh_event_add_session(L->event, c->s) == SSH_OK)
            c->in_event = 1;
    }
}

void ssh_event_detach(ssh_launcher_t *L)
{
    for (size_t i = 0; L->event && i < L->nconns; i++) {
        ssh_conn_t *c = &L->conns[i];
        if (c->in_event)
            ssh_event_remove_session(L->event, c->s);
        c->in_event = 0;
    }
}

/* Free kill channels that finished. */
static void reap_ctl(ssh_launcher_t *L)
{
    for (ssh_ctl_t **pp = &L->ctl; *pp;) {
        ssh_ctl_t *k = *pp;
        if (ssh_channel_is_closed(k->ch) || ssh_channel_is_eof(k->ch)) {
            *pp = k->next;
            ssh_channel_close(k->ch);
            ssh_channel_free(k->ch);
            free(k);
        } else {
            pp = &k->next;
        }
    }
}

/* A broken connection fails every rank still running on it. */
static int notice_lost(ssh_launcher_t *L)
{
    int changed = 0;
    for (size_t i = 0; i < L->nconns; i++) {
        ssh_conn_t *c = &L->conns[i];
        if (c->lost || !c->s || ssh_is_connected(c->s))
            continue;
        c->lost = changed = 1;
        if (c->in_event)
            ssh_event_remove_session(L->event, c->s);
        c->in_event = 0;
        int running = 0;
        for (int r = 0; r < L->n; r++) {
            ssh_rank_t *rk = &L->ranks[r];
            if (rk->conn != c || rk->have_status)
                continue;
            running++;
            rk->have_status = 1;
            rk->code = 255; /* what ssh(1) exits with on a lost connection */
            rk->status_at = dt_clock_now_ms();
            rk->closed = 1;
        }
        if (running)
            dt_error("ssh launcher: the connection to %s was lost (%s); its "
                     "%d running worker%s count as failed (exit 255) and are "
                     "killed by their watchdog on the host",
                     c->name, ssh_get_error(c->s), running,
                     running == 1 ? "" : "s");
    }
    return changed;
}

/* rank 0's stdin (stdin_channel.c); its channel requests block: they
 * run with the sessions out of the event, as signal()'s do */
static void stdin_pump(ssh_launcher_t *L)
{
    int busy = ssh_stdin_busy(L);
    if (busy)
        ssh_event_detach(L);
    ssh_stdin_pump(L);
    if (busy)
        ssh_event_attach(L);
}

void ssh_pump_once(ssh_launcher_t *L, int wait_ms)
{
    reap_ctl(L);
    if (notice_lost(L))
        return;
    int any = 0;
    for (size_t i = 0; i < L->nconns; i++)
        any |= L->conns[i].in_event;
    if (!any) {
        if (wait_ms > 0)
            usleep((useconds_t)wait_ms * 1000);
        return;
    }
    stdin_pump(L);
    ssh_event_dopoll(L->event, wait_ms);
    notice_lost(L);
    stdin_pump(L);
}

static int ended(const ssh_rank_t *rk, long long now)
{
    if (!rk->have_status) /* closed without a status: lost, see below */
        return rk->closed;
    return rk->eof || rk->closed || now - rk->status_at >= OUTPUT_GRACE_MS;
}

static void describe(const ssh_rank_t *rk, dt_worker_exit_t *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->rank = rk->rank;
    ev->host = rk->conn->name;
    if (!rk->have_status) {
        dt_error("ssh launcher: rank %d on %s: the channel closed without an "
                 "exit status (sshd killed?); counting it as exit 255",
                 rk->rank, rk->conn->name);
        ev->code = 255;
    } else if (rk->signaled) {
        ev->signaled = 1;
        ev->signo = rk->signo;
    } else {
        ev->code = rk->code;
    }
}

/* 1: *ev filled; 0: some rank still runs; -1: all reported. Also the
 * longest sleep before a rank's grace ends. */
static int next_report(ssh_launcher_t *L, dt_worker_exit_t *ev, int *sleep_ms)
{
    long long now = dt_clock_now_ms();
    int pending = 0;
    for (int r = 0; r < L->n; r++) {
        ssh_rank_t *rk = &L->ranks[r];
        if (rk->reported)
            continue;
        if (ended(rk, now)) {
            if (!rk->head_done) { /* never started properly: show why */
                rk->head_done = 1;
                emit(rk, 2, rk->head, rk->head_len);
            }
            rk->reported = 1;
            describe(rk, ev);
            return 1;
        }
        pending = 1;
        if (rk->have_status) {
            long long left = rk->status_at + OUTPUT_GRACE_MS - now;
            if (left < *sleep_ms)
                *sleep_ms = left < 0 ? 0 : (int)left;
        }
    }
    return pending ? 0 : -1;
}

dt_status_t ssh_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev)
{
    ssh_launcher_t *L = ctx;
    if (!L || !ev)
        return DT_ERR_INVALID;
    if (!L->launched)
        return DT_ERR_NOT_FOUND;
    long long deadline = timeout_ms < 0 ? -1 : dt_clock_now_ms() + timeout_ms;
    for (int polled = 0;; polled = 1) {
        int sleep_ms = 60000;
        int rep = next_report(L, ev, &sleep_ms);
        if (rep > 0)
            return DT_OK;
        if (rep < 0)
            return DT_ERR_NOT_FOUND;
        long long left = deadline < 0 ? -1 : deadline - dt_clock_now_ms();
        if (polled && deadline >= 0 && left <= 0)
            return DT_ERR_TIMEOUT;
        if (left >= 0 && left < sleep_ms)
            sleep_ms = (int)left;
        ssh_pump_once(L, sleep_ms);
    }
}
