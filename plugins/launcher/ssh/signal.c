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

/* The stop command for the running ranks on c (script.c); NULL if none. */
static char *kill_command(ssh_launcher_t *L, ssh_conn_t *c, const char *sig)
{
    long *pgids = calloc((size_t)L->n + 1, sizeof *pgids);
    size_t n = 0;
    if (!pgids)
        return NULL;
    for (int r = 0; r < L->n; r++) {
        ssh_rank_t *rk = &L->ranks[r];
        /* An ended leader's group id may be reused: what it left behind
         * is killed by its watchdog when the channel closes. */
        if (rk->conn != c || rk->pgid <= 0 || rk->closed || rk->have_status)
            continue;
        pgids[n++] = rk->pgid;
    }
    /* rank 0's fifo directory, when a KILL may beat its watchdog's
     * clean-up (a stop during the launch, or a failed one) */
    const char *rm_dir = NULL;
    if (!strcmp(sig, "KILL") && L->n > 0 && L->ranks[0].conn == c &&
        ssh_stdin_dir_ok(L->ranks[0].stdin_dir))
        rm_dir = L->ranks[0].stdin_dir;
    char *cmd = NULL;
    if (n > 0 && ssh_kill_cmd(sig, pgids, n, rm_dir, &cmd) != DT_OK)
        cmd = NULL;
    free(pgids);
    return cmd;
}

static void send_kill(ssh_launcher_t *L, ssh_conn_t *c, const char *sig)
{
    char *cmd = kill_command(L, c, sig);
    if (!cmd)
        return;
    ssh_ctl_t *k = calloc(1, sizeof *k);
    if (!k || !(k->ch = ssh_channel_new(c->s)) ||
        ssh_channel_open_session(k->ch) != SSH_OK ||
        ssh_channel_request_exec(k->ch, cmd) != SSH_OK) {
        dt_error("ssh launcher: cannot send SIG%s to the workers on %s: %s "
                 "(closing the connection kills them instead)",
                 sig, c->name, ssh_get_error(c->s));
        if (k && k->ch)
            ssh_channel_free(k->ch);
        free(k);
    } else {
        dt_debug("ssh launcher: %s: %s", c->name, cmd);
        k->next = L->ctl;
        L->ctl = k;
    }
    free(cmd);
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
    /* Blocking channel requests run outside the event. */
    ssh_event_detach(L);
    for (size_t i = 0; i < L->nconns; i++)
        if (L->conns[i].s && !L->conns[i].lost)
            send_kill(L, &L->conns[i], sig);
    ssh_event_attach(L);
    return DT_OK;
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
