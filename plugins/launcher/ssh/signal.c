/* signal.c — signals to the workers' process groups, over a fresh channel
 * per host (`kill -s SIG -- -pgid ...` run by /bin/sh, whatever the login
 * shell: script.c), and the final kill-and-close. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "pump.h"
#include "script.h"
#include "ssh_signal.h"
#include "ssh_types.h"
#include "stdin_channel.h"

/* fini waits this long for killed workers to end. */
#define KILL_WAIT_MS 5000
/* A STOP or CONT command's channel closes within this. */
#define CTL_WAIT_MS 5000

static const char *signal_name(int signo)
{
    switch (signo) {
    case SIGTERM: return "TERM";
    case SIGKILL: return "KILL";
    case SIGINT: return "INT";
    case SIGHUP: return "HUP";
    case SIGQUIT: return "QUIT";
    case SIGUSR1: return "USR1";
    case SIGUSR2: return "USR2";
    case SIGCONT: return "CONT";
    case SIGSTOP: return "STOP";
    default: return NULL;
    }
}

/* The command that sends sig to the running ranks on c (script.c); NULL
 * if none runs there. */
static char *kill_command(ssh_launcher_t *L, ssh_conn_t *c, const char *sig)
{
    long *pgids = calloc((size_t)L->n + 1, sizeof *pgids);
    long *watchdogs = calloc((size_t)L->n + 1, sizeof *watchdogs);
    size_t n = 0;
    if (!pgids || !watchdogs) {
        free(pgids);
        free(watchdogs);
        return NULL;
    }
    for (int r = 0; r < L->n; r++) {
        ssh_rank_t *rk = &L->ranks[r];
        /* An ended leader's group id may be reused: what it left behind
         * is killed by its watchdog when the channel closes. */
        if (rk->conn != c || rk->pgid <= 0 || rk->closed || rk->have_status)
            continue;
        watchdogs[n] = rk->watchdog;
        pgids[n++] = rk->pgid;
    }
    /* rank 0's fifo directory, when a KILL may beat its watchdog's
     * clean-up (a stop during the launch, or a failed one) */
    const char *rm_dir = NULL;
    if (!strcmp(sig, "KILL") && L->n > 0 && L->ranks[0].conn == c &&
        ssh_stdin_dir_ok(L->ranks[0].stdin_dir))
        rm_dir = L->ranks[0].stdin_dir;
    char *cmd = NULL;
    dt_status_t st = DT_OK;
    if (n > 0 && !strcmp(sig, "STOP"))
        st = ssh_stop_cmd(pgids, watchdogs, n, &cmd);
    else if (n > 0)
        st = ssh_kill_cmd(sig, pgids, n, rm_dir, &cmd);
    if (st != DT_OK)
        cmd = NULL;
    free(pgids);
    free(watchdogs);
    return cmd;
}

static int running_on(const ssh_launcher_t *L, const ssh_conn_t *c)
{
    int n = 0;
    for (int r = 0; r < L->n; r++)
        n += L->ranks[r].conn == c && L->ranks[r].pgid > 0 &&
             !L->ranks[r].closed && !L->ranks[r].have_status;
    return n;
}

/* 0 when the command could not be started on c (said why). */
static int send_kill(ssh_launcher_t *L, ssh_conn_t *c, const char *sig)
{
    char *cmd = kill_command(L, c, sig);
    if (!cmd && !strcmp(sig, "STOP") && running_on(L, c) > 0) {
        /* a STOP without the watchdogs' pids would stop them too */
        dt_error("ssh launcher: the workers on %s keep running: their "
                 "watchdogs' pids are unknown (a marker line without them), "
                 "so they cannot be stopped safely",
                 c->name);
        return 0;
    }
    if (!cmd)
        return 1; /* nothing runs there (or no memory: as before) */
    ssh_ctl_t *k = calloc(1, sizeof *k);
    int ok = 1;
    if (!k || !(k->ch = ssh_channel_new(c->s)) ||
        ssh_channel_open_session(k->ch) != SSH_OK ||
        ssh_channel_request_exec(k->ch, cmd) != SSH_OK) {
        if (!strcmp(sig, "STOP"))
            dt_error("ssh launcher: the workers on %s keep running: cannot "
                     "send them SIGSTOP: %s",
                     c->name, ssh_get_error(c->s));
        else
            dt_error("ssh launcher: cannot send SIG%s to the workers on %s: "
                     "%s (closing the connection kills them instead)",
                     sig, c->name, ssh_get_error(c->s));
        if (k && k->ch)
            ssh_channel_free(k->ch);
        free(k);
        ok = 0;
    } else {
        dt_debug("ssh launcher: %s: %s", c->name, cmd);
        k->next = L->ctl;
        L->ctl = k;
    }
    free(cmd);
    return ok;
}

/* Ctrl-Z's STOP and fg's CONT have run on every host before dtctl stops
 * (or goes on), and their channels are closed: a stopped dtctl would not
 * free them, and sshd's MaxSessions leaves room for two (TERM, KILL). */
static int wait_ctl_done(ssh_launcher_t *L)
{
    long long until = dt_clock_now_ms() + CTL_WAIT_MS;
    while (L->ctl && dt_clock_now_ms() < until)
        ssh_pump_once(L, 50);
    return L->ctl == NULL;
}

dt_status_t ssh_signal(void *ctx, int signo)
{
    ssh_launcher_t *L = ctx;
    if (!L)
        return DT_ERR_INVALID;
    const char *sig = signal_name(signo);
    if (!sig) {
        dt_error("ssh launcher: signal %d cannot be forwarded (TERM, KILL, "
                 "INT, HUP, QUIT, USR1, USR2, CONT, STOP can)",
                 signo);
        return DT_ERR_UNSUPPORTED;
    }
    int all_sent = 1;
    /* Blocking channel requests run outside the event. */
    ssh_event_detach(L);
    for (size_t i = 0; i < L->nconns; i++)
        if (L->conns[i].s && !L->conns[i].lost)
            all_sent &= send_kill(L, &L->conns[i], sig);
    ssh_event_attach(L);
    if (signo != SIGSTOP && signo != SIGCONT)
        return DT_OK;
    if (!wait_ctl_done(L)) {
        dt_error("ssh launcher: the SIG%s command to the workers did not "
                 "finish within %d s on every host: the workers there may %s",
                 sig, CTL_WAIT_MS / 1000,
                 signo == SIGSTOP ? "keep running" : "stay stopped");
        return DT_ERR_TIMEOUT;
    }
    return all_sent ? DT_OK : DT_ERR_IO;
}

/* Every worker ended (leftovers of ended ones go with their channel). */
/* Whether every rank a KILL can reach (its group reported) has ended:
 * one whose group never arrived is ended by closing its channel below. */
static int all_ended(const ssh_launcher_t *L)
{
    for (int r = 0; r < L->n; r++) {
        const ssh_rank_t *rk = &L->ranks[r];
        if (rk->ch && rk->pgid > 0 && !rk->closed && !rk->have_status &&
            !rk->conn->lost)
            return 0;
    }
    return 1;
}

void ssh_kill_all(ssh_launcher_t *L)
{
    if (!L->ranks)
        return;
    if (!all_ended(L)) {
        ssh_signal(L, SIGKILL);
        long long until = dt_clock_now_ms() + KILL_WAIT_MS;
        while (!all_ended(L) && dt_clock_now_ms() < until)
            ssh_pump_once(L, 100);
    }
    /* Closing a channel also ends its watchdog, which kills the group of a
     * rank whose pgid never arrived. */
    ssh_event_detach(L);
    ssh_stdin_close(L);
    for (int r = 0; r < L->n; r++) {
        ssh_rank_t *rk = &L->ranks[r];
        if (!rk->ch)
            continue;
        if (!rk->conn->lost)
            ssh_channel_close(rk->ch);
        ssh_channel_free(rk->ch);
        rk->ch = NULL;
        rk->closed = 1;
    }
    while (L->ctl) {
        ssh_ctl_t *k = L->ctl;
        L->ctl = k->next;
        ssh_channel_free(k->ch);
        free(k);
    }
}
