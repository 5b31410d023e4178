/* launch.c — connect to every host of the job in parallel, then start
 * each rank on its own channel and wait until each reported its process
 * group (so signal() can reach it) or failed to start. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "connect.h"
#include "launch.h"
#include "pump.h"
#include "script.h"
#include "ssh_signal.h"
#include "ssh_types.h"
#include "stdin_channel.h"

/* A rank's remote shell needs no more than this to report its group. */
#define START_TIMEOUT_MS 30000

static dt_status_t bad_spec(void)
{
    dt_error("ssh launcher: launch needs np >= 1, hosts, a placement and a "
             "program (a bug in dt: please report it)");
    return DT_ERR_INVALID;
}

/* Ranks a connection carries: sshd allows 10 sessions (channels) on one
 * connection by default (MaxSessions), and each connection keeps room
 * for the channels of its stop signals (TERM, then KILL); rank 0's also
 * for the channel of its standard input (stdin_channel.c). */
#define RANKS_PER_CONN 8

/* Connections to each host that got ranks, RANKS_PER_CONN ranks each;
 * ranks point at theirs. */
static dt_status_t plan_connections(ssh_launcher_t *L,
                                    const dt_launch_spec_t *spec)
{
    size_t nh = spec->hosts->n;
    ssh_conn_t **of_host = calloc(nh ? nh : 1, sizeof *of_host);
    int *carried = calloc(nh ? nh : 1, sizeof *carried);
    L->conns = calloc((size_t)spec->np, sizeof *L->conns);
    L->ranks = calloc((size_t)spec->np, sizeof *L->ranks);
    if (!of_host || !carried || !L->conns || !L->ranks) {
        free(of_host);
        free(carried);
        return DT_ERR_NOMEM;
    }
    dt_status_t st = DT_OK;
    for (int r = 0; r < spec->np && st == DT_OK; r++) {
        size_t h = spec->placement[r].host;
        if (h >= nh) {
            dt_error("ssh launcher: rank %d is placed on host #%zu of %zu (a "
                     "bug in dt: please report it)",
                     r, h, nh);
            st = DT_ERR_INTERNAL;
            break;
        }
        int full = RANKS_PER_CONN - (spec->forward_stdin &&
                                     of_host[h] == L->ranks[0].conn);
        if (!of_host[h] || carried[h] >= full) {
            ssh_conn_t *c = &L->conns[L->nconns++];
            c->port = spec->hosts->hosts[h].port;
            if (!(c->name = strdup(spec->hosts->hosts[h].name)))
                st = DT_ERR_NOMEM;
            of_host[h] = c;
            carried[h] = 0;
        }
        carried[h]++;
        ssh_rank_t *rk = &L->ranks[r];
        rk->rank = r;
        rk->L = L;
        rk->conn = of_host[h];
    }
    L->n = spec->np;
    free(of_host);
    free(carried);
    return st;
}

static dt_status_t start_rank(ssh_launcher_t *L, const dt_launch_spec_t *spec,
                              ssh_rank_t *rk)
{
    ssh_session s = rk->conn->s;
    ssh_script_req_t req = {
        .env = spec->env,
        .rank_env = spec->rank_env ? spec->rank_env[rk->rank] : NULL,
        .argv = spec->argv,
        .workdir = spec->workdir ? spec->workdir : L->o.workdir,
        .try_dir = L->o.cwd,
        .stdin_fifo = rk->rank == 0 && L->relay,
    };
    char *script = NULL;
    dt_status_t st = ssh_build_script(&req, &script);
    if (st != DT_OK)
        return st;
    rk->ch = ssh_channel_new(s);
    if (!rk->ch)
        goto fail;
    ssh_rank_callbacks(rk); /* before any data can arrive */
    if (ssh_channel_open_session(rk->ch) != SSH_OK ||
        ssh_channel_request_exec(rk->ch, ssh_bootstrap_cmd) != SSH_OK)
        goto fail;
    size_t len = strlen(script), off = 0;
    while (off < len) {
        int w = ssh_channel_write(rk->ch, script + off, (uint32_t)(len - off));
        if (w <= 0)
            goto fail;
        off += (size_t)w;
    }
    explicit_bzero(script, len); /* it holds the job token */
    free(script);
    dt_debug("ssh launcher: rank %d started on %s", rk->rank, rk->conn->name);
    return DT_OK;
fail:
    if (script) {
        explicit_bzero(script, strlen(script));
        free(script);
    }
    dt_error("ssh launcher: rank %d on %s: cannot start the remote shell: "
             "%s; check that the ssh server allows sessions and command "
             "execution (MaxSessions, ForceCommand)",
             rk->rank, rk->conn->name, ssh_get_error(s));
    return DT_ERR_PEER;
}

/* Every rank reported its group, or one failed (its stderr says why), or
 * dtctl was asked to stop (stop, checked every 200 ms). */
static dt_status_t await_groups(ssh_launcher_t *L, int (*stop)(void))
{
    long long deadline = dt_clock_now_ms() + START_TIMEOUT_MS + L->o.timeout_s * 1000;
    for (;;) {
        if (stop && stop())
            return DT_ERR_INTERRUPTED;
        int waiting = 0;
        for (int r = 0; r < L->n; r++) {
            ssh_rank_t *rk = &L->ranks[r];
            if (rk->pgid > 0)
                continue;
            if (rk->closed || rk->have_status || rk->conn->lost) {
                size_t n = rk->head_len;
                while (n && (rk->head[n - 1] == '\n' || rk->head[n - 1] == '\r'))
                    n--;
                dt_error("ssh launcher: rank %d on %s did not start: %.*s%s",
                         rk->rank, rk->conn->name, (int)n, rk->head,
                         n ? "" : "the remote shell ended at once (is /bin/sh "
                                  "there? does the account allow commands?)");
                return DT_ERR_WORKER;
            }
            waiting = 1;
        }
        if (!waiting)
            return DT_OK;
        long long left = deadline - dt_clock_now_ms();
        if (left <= 0) {
            for (int r = 0; r < L->n; r++)
                if (L->ranks[r].pgid <= 0)
                    dt_error("ssh launcher: rank %d on %s did not report its "
                             "start within %d s; is the host overloaded?",
                             r, L->ranks[r].conn->name,
                             (int)(START_TIMEOUT_MS / 1000 + L->o.timeout_s));
            return DT_ERR_TIMEOUT;
        }
        ssh_pump_once(L, left > 200 ? 200 : (int)left);
    }
}

dt_status_t ssh_launch(void *ctx, const dt_launch_spec_t *spec)
{
    ssh_launcher_t *L = ctx;
    if (!L || !spec || spec->np < 1 || !spec->hosts || !spec->placement ||
        !spec->argv || !spec->argv[0])
        return bad_spec();
    if (L->launched) {
        dt_error("ssh launcher: this instance already launched a job");
        return DT_ERR_INVALID;
    }
    L->launched = 1;
    L->output = spec->output;
    L->output_arg = spec->output_arg;
    dt_status_t st = plan_connections(L, spec);
    if (st == DT_OK && spec->forward_stdin) {
        if (!(L->relay = malloc(sizeof *L->relay)))
            st = DT_ERR_NOMEM;
        else
            stdin_relay_init(L->relay, STDIN_FILENO);
    }
    if (st == DT_OK) {
        dt_debug("ssh launcher: opening %zu connection%s", L->nconns,
                 L->nconns == 1 ? "" : "s");
        st = ssh_conn_open_all(&L->o, L->conns, L->nconns, 1,
                               spec->stop_requested);
    }
    for (int r = 0; r < L->n && st == DT_OK; r++)
        st = start_rank(L, spec, &L->ranks[r]);
    if (st == DT_OK && !(L->event = ssh_event_new()))
        st = DT_ERR_NOMEM;
    if (st == DT_OK) {
        ssh_event_attach(L);
        st = await_groups(L, spec->stop_requested);
    }
    if (st == DT_OK && L->relay) {
        ssh_event_detach(L); /* blocking channel requests */
        st = ssh_stdin_open(L);
        ssh_event_attach(L);
    }
    if (st != DT_OK) {
        ssh_kill_all(L); /* those already started */
        for (int r = 0; r < L->n; r++)
            L->ranks[r].reported = 1; /* the caller learns from st */
    }
    return st;
}
