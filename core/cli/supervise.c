/* supervise.c — the monitor loop of `dtctl run` (see supervise.h). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "stop_signals.h"
#include "supervise.h"

/* Longest sleep in the launcher's wait(): how fast a stop signal that
 * slipped in just before poll() is noticed. */
#define TICK_MS 100

typedef struct monitor {
    const supervise_args_t *a;
    int exit_code;
    int stopping;          /* SIGTERM sent          */
    int killed;            /* SIGKILL sent          */
    long long kill_at;     /* when to send SIGKILL  */
    long long give_up_at;  /* when to stop waiting  */
} monitor_t;

static void begin_stop(monitor_t *m)
{
    if (m->stopping)
        return;
    m->stopping = 1;
    m->kill_at = dt_clock_now_ms() + (long long)(m->a->kill_grace * 1000.0);
    m->a->ops->signal(m->a->ctx, SIGTERM);
}

static void kill_now(monitor_t *m)
{
    m->stopping = m->killed = 1;
    m->give_up_at = dt_clock_now_ms() + SUPERVISE_AFTER_KILL_MS;
    m->a->ops->signal(m->a->ctx, SIGKILL);
}

static int failed(const dt_worker_exit_t *ev)
{
    return ev->signaled || ev->code != 0;
}

static void describe(const dt_worker_exit_t *ev, char *who, size_t len)
{
    const char *host = ev->host ? ev->host : "?";
    if (ev->rank >= 0)
        snprintf(who, len, "rank %d on %s", ev->rank, host);
    else
        snprintf(who, len, "the job on %s", host);
}

static void on_exit_event(monitor_t *m, const dt_worker_exit_t *ev)
{
    output_lines_flush_rank(m->a->lines, ev->rank);
    char who[320];
    describe(ev, who, sizeof who);
    if (!failed(ev)) {
        dt_debug("%s finished", who);
        return;
    }
    if (m->stopping) { /* expected: we are stopping the job */
        if (ev->signaled)
            dt_debug("%s stopped by signal %d", who, ev->signo);
        else
            dt_debug("%s exited with code %d while stopping", who, ev->code);
        return;
    }
    if (ev->signaled) {
        m->exit_code = 128 + ev->signo;
        dt_error("%s was killed by signal %d (%s)", who, ev->signo,
                 strsignal(ev->signo));
    } else {
        m->exit_code = ev->code;
        dt_error("%s exited with code %d", who, ev->code);
    }
    dt_info("stopping the other workers (SIGTERM, then SIGKILL after %gs)",
            m->a->kill_grace);
    begin_stop(m);
}

static void on_stop_signal(monitor_t *m, int signo)
{
    if (!m->stopping) {
        if (m->exit_code == 0)
            m->exit_code = 128 + signo;
        dt_warn("received %s: stopping the job (SIGTERM to every worker, "
                "SIGKILL after %gs; send it again to kill at once)",
                strsignal(signo), m->a->kill_grace);
        begin_stop(m);
    } else if (!m->killed) {
        dt_warn("received %s again: killing the workers now",
                strsignal(signo));
        kill_now(m);
    }
}

/* How long the next wait() may sleep. */
static int next_tick(const monitor_t *m)
{
    long long t = TICK_MS;
    if (m->stopping && !m->killed) {
        long long left = m->kill_at - dt_clock_now_ms();
        t = left < 0 ? 0 : left < t ? left : t;
    }
    return (int)t;
}

int supervise_job(const supervise_args_t *a)
{
    monitor_t m = {a, 0, 0, 0, 0, 0};
    for (;;) {
        int signo;
        while ((signo = stop_signals_take()) != 0)
            on_stop_signal(&m, signo);
        if (m.stopping && !m.killed && dt_clock_now_ms() >= m.kill_at) {
            if (a->kill_grace > 0)
                dt_warn("workers still running %gs after SIGTERM "
                        "([cluster] kill_grace); sending SIGKILL",
                        a->kill_grace);
            kill_now(&m);
        }
        if (m.killed && dt_clock_now_ms() >= m.give_up_at) {
            dt_error("workers still did not end %d s after SIGKILL (stuck "
                     "in the kernel?); giving up on them",
                     SUPERVISE_AFTER_KILL_MS / 1000);
            if (m.exit_code == 0)
                m.exit_code = 1;
            break;
        }
        dt_worker_exit_t ev;
        dt_status_t st = a->ops->wait(a->ctx, next_tick(&m), &ev);
        if (st == DT_ERR_TIMEOUT)
            continue;
        if (st == DT_ERR_NOT_FOUND)
            break; /* every worker ended */
        if (st != DT_OK) {
            dt_error("the launcher lost track of the workers: %s; stopping "
                     "the job",
                     dt_status_str(st));
            if (m.exit_code == 0)
                m.exit_code = 1;
            break; /* the launcher's fini kills and reaps what is left */
        }
        on_exit_event(&m, &ev);
    }
    output_lines_flush_all(a->lines);
    return m.exit_code;
}
