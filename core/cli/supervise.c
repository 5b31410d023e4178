/* supervise.c — the monitor loop of `dtctl run` (see supervise.h). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include <dt/train.h>
#include "oom_hint.h"
#include "stop_signals.h"
#include "pgrp_orphaned.h"
#include "supervise.h"

/* Longest sleep in the launcher's wait(): how fast a stop signal that
 * slipped in just before poll() is noticed. */
#define TICK_MS 100

/* A worker's end, kept past the launcher's event (host copied). */
typedef struct ended {
    dt_worker_exit_t ev;
    char host[256];
} ended_t;

typedef struct monitor {
    const supervise_args_t *a;
    int exit_code;
    int stopping;          /* the stop sent (SIGTERM or SIGINT) */
    int stop_sent;         /* which of them                     */
    int stop_signals;      /* the user's SIGINT/TERM so far */
    int first_signo;       /* the first of them (0: none)   */
    oom_counts_t oom_kills; /* out-of-memory kills so far, at start */
    int killed;            /* SIGKILL sent          */
    int reader_gone;       /* dtctl's output was found closed: handled */
    int other_dt;          /* the store refused a worker: handled      */
    long long kill_at;     /* when to send SIGKILL  */
    long long give_up_at;  /* when to stop waiting  */
    long long linger_at;   /* after dt_finalize: when to stop the rest */
    /* After a first failure: which failure is the root one? */
    int deciding;
    long long decide_at;   /* decide with what is known by then */
    ended_t first;         /* the first failure seen */
    int have_culprit;
    supervise_culprit_t culprit; /* the workers' record */
    /* Every rank's end so far (hosts stay the launcher's until its fini):
     * the named rank may have ended before the first failure, e.g. with
     * code 0 while the others still needed it. */
    dt_worker_exit_t *ends;
    char *ended;
    int nends;
} monitor_t;

static void note_end(monitor_t *m, const dt_worker_exit_t *ev)
{
    if (ev->rank < 0)
        return;
    if (ev->rank >= m->nends) {
        int n = ev->rank + 64;
        dt_worker_exit_t *e = realloc(m->ends, (size_t)n * sizeof *e);
        if (e)
            m->ends = e;
        char *d = e ? realloc(m->ended, (size_t)n) : NULL;
        if (!d)
            return;
        memset(d + m->nends, 0, (size_t)(n - m->nends));
        m->ended = d;
        m->nends = n;
    }
    m->ends[ev->rank] = *ev;
    m->ended[ev->rank] = 1;
}

/* The named rank's end, if it ended already; else NULL. */
static const dt_worker_exit_t *end_of(const monitor_t *m, int rank)
{
    return rank >= 0 && rank < m->nends && m->ended[rank] ? &m->ends[rank]
                                                           : NULL;
}

/* The stop: SIGTERM, or SIGINT for the user's Ctrl-C (interrupts). */
static void begin_stop_with(monitor_t *m, int signo)
{
    if (m->stopping)
        return;
    m->stopping = 1;
    m->stop_sent = signo;
    m->kill_at = dt_clock_now_ms() + (long long)(m->a->kill_grace * 1000.0);
    m->a->ops->signal(m->a->ctx, signo);
}

static void begin_stop(monitor_t *m)
{
    begin_stop_with(m, SIGTERM);
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

/* [train] mode = async: ranks from here on are parameter servers. */
static int first_server = -1;

void supervise_set_first_server(int rank)
{
    first_server = rank;
}

/* " (parameter server k)" for a server's rank, else "". */
static const char *role_of(int rank, char *buf, size_t len)
{
    if (first_server < 0 || rank < first_server)
        return "";
    snprintf(buf, len, " (parameter server %d)", rank - first_server);
    return buf;
}

static void describe(const dt_worker_exit_t *ev, char *who, size_t len)
{
    const char *host = ev->host ? ev->host : "?";
    char role[48];
    if (ev->rank >= 0)
        snprintf(who, len, "rank %d%s on %s", ev->rank,
                 role_of(ev->rank, role, sizeof role), host);
    else
        snprintf(who, len, "the job on %s", host);
}

static void keep(ended_t *e, const dt_worker_exit_t *ev)
{
    e->ev = *ev;
    snprintf(e->host, sizeof e->host, "%s", ev->host ? ev->host : "?");
    e->ev.host = e->host;
}

/* A rank killed by the signal its own crash report named (crash_site.h)
 * died in that plugin op: the closing line says which. */
static void how_it_ended(const monitor_t *m, const dt_worker_exit_t *ev,
                         char *buf, size_t len)
{
    const char *site =
        ev->signaled ? crash_sites_of(m->a->crashes, ev->rank, ev->signo)
                     : NULL;
    if (ev->signaled)
        snprintf(buf, len, "was killed by signal %d (%s)%s%s", ev->signo,
                 strsignal(ev->signo), site ? " in " : "", site ? site : "");
    else
        snprintf(buf, len, "exited with code %d", ev->code);
}

/* dt-train's own exit codes in words (dt/train.h), after the cause: a
 * bare 65 told nothing of what it means. */
static const char *trainer_code_meaning(const dt_worker_exit_t *ev,
                                        int trainer)
{
    if (trainer && !ev->signaled && ev->code == DT_TRAIN_EXIT_FINAL)
        return " (dt-train's code for a failure a restart would repeat: a "
               "configuration error, a model too large for the memory, a "
               "data set in a wrong format or layout or training that "
               "diverged; its error above says which)";
    return "";
}

static int status_of(const dt_worker_exit_t *ev)
{
    return ev->signaled ? 128 + ev->signo : ev->code;
}

/* The root failure is known (root: its end, or NULL for a rank the
 * workers named that has not ended: hung): say it, and stop the job. */
static void decide(monitor_t *m, const dt_worker_exit_t *root)
{
    const dt_worker_exit_t *first = &m->first.ev;
    char who[320], how[320], fwho[320], fhow[320];
    char cause[sizeof m->a->result->cause];
    m->deciding = 0;
    describe(first, fwho, sizeof fwho);
    how_it_ended(m, first, fhow, sizeof fhow);
    if (root) {
        describe(root, who, sizeof who);
        how_it_ended(m, root, how, sizeof how);
        m->exit_code = status_of(root);
        if (m->exit_code == 0) {
            m->exit_code = status_of(first);
            snprintf(cause, sizeof cause, "%s left the job early: it exited "
                     "with code 0 while the others still needed it", who);
        } else {
            snprintf(cause, sizeof cause, "%s %s", who, how);
        }
        dt_error("%s%s", cause, trainer_code_meaning(root, m->a->trainer));
        if (root->signaled && root->signo == SIGKILL && !m->stopping &&
            !m->killed)
            oom_hint(who, root->host ? root->host : "?", &m->oom_kills);
        if (root->rank != first->rank)
            dt_info("%s %s after it (it is not the root cause)", fwho, fhow);
    } else {
        const supervise_culprit_t *c = &m->culprit;
        if (strcmp(c->how, "hung") == 0) {
            m->exit_code = SUPERVISE_EXIT_HUNG;
            char role[48];
            snprintf(cause, sizeof cause, "rank %d%s on %s hung", c->rank,
                     role_of(c->rank, role, sizeof role), c->host);
            dt_error("%s: it went silent for the transport's timeout while "
                     "rank %d waited on it (stopped, hung or unreachable; the "
                     "workers agree); %s %s after it",
                     cause, c->detector, fwho, fhow);
        } else {
            m->exit_code = status_of(first);
            char role[48];
            role_of(c->rank, role, sizeof role);
            snprintf(cause, sizeof cause, "rank %d%s on %s failed (%s, as "
                     "rank %d found)", c->rank, role, c->host, c->how,
                     c->detector);
            dt_error("rank %d%s on %s failed (%s, as rank %d found; it has "
                     "not ended yet); %s %s after it", c->rank, role,
                     c->host, c->how, c->detector, fwho, fhow);
        }
    }
    /* The restart decision and its log line get the root cause. */
    if (m->a->result) {
        snprintf(m->a->result->cause, sizeof m->a->result->cause, "%s",
                 cause);
        m->a->result->root_rank = root ? root->rank : m->culprit.rank;
        snprintf(m->a->result->root_host, sizeof m->a->result->root_host,
                 "%s", root ? (root->host ? root->host : "")
                            : m->culprit.host);
    }
    dt_info("stopping the other workers (SIGTERM, then SIGKILL after %gs)",
            m->a->kill_grace);
    begin_stop(m);
}

/* Killed by a signal that is no orderly stop: a crash, kill -9, the OOM
 * killer. SIGTERM, SIGINT and SIGHUP are what schedulers (srun, mpirun,
 * qdel) and dtctl send the other ranks once one has failed, so a rank
 * they end is a consequence, not the root. */
static int killed_abruptly(const dt_worker_exit_t *ev)
{
    return ev->signaled && ev->signo != SIGTERM && ev->signo != SIGINT &&
           ev->signo != SIGHUP;
}

/* A first failure: decide at once when it is the root cause, else wait a
 * little for the end of the rank that is. */
static void first_failure(monitor_t *m, const dt_worker_exit_t *ev)
{
    keep(&m->first, ev);
    m->deciding = 1;
    m->have_culprit = m->a->culprit &&
                      m->a->culprit(m->a->culprit_arg, &m->culprit) == 1;
    if (m->have_culprit) {
        const dt_worker_exit_t *done = end_of(m, m->culprit.rank);
        if (m->culprit.rank == ev->rank) {
            decide(m, &m->first.ev);
        } else if (done) {
            decide(m, done);
        } else if (strcmp(m->culprit.how, "hung") == 0) {
            decide(m, NULL); /* it will not end by itself */
        } else {
            m->decide_at = dt_clock_now_ms() + SUPERVISE_ROOT_WAIT_MS;
        }
        return;
    }
    if (killed_abruptly(ev)) /* nothing says otherwise: a root */
        decide(m, &m->first.ev);
    else
        m->decide_at = dt_clock_now_ms() + SUPERVISE_SIGNAL_WAIT_MS;
}

/* The time to wait for the root failure is over. */
static void decide_late(monitor_t *m)
{
    if (!m->deciding)
        return;
    /* Maybe recorded meanwhile (a hang found after a first exit). */
    if (!m->have_culprit && m->a->culprit)
        m->have_culprit = m->a->culprit(m->a->culprit_arg, &m->culprit) == 1;
    if (m->have_culprit && end_of(m, m->culprit.rank))
        decide(m, end_of(m, m->culprit.rank));
    else if (m->have_culprit && m->culprit.rank != m->first.ev.rank)
        decide(m, NULL);
    else
        decide(m, &m->first.ev);
}

/* Exit 75: preempted, checkpoint written, resumable (supervise.h). */
static int preempted(const monitor_t *m, const dt_worker_exit_t *ev)
{
    if (ev->signaled || ev->code != SUPERVISE_EXIT_PREEMPTED)
        return 0;
    return m->a->trainer || m->first_signo == SIGTERM ||
           m->first_signo == SIGUSR1;
}

/* A rank exited 0: once every rank has reached dt_finalize, the others
 * have the linger to exit too (supervise_args_t.finalized). */
static void linger_after(monitor_t *m)
{
    const supervise_args_t *a = m->a;
    if (m->linger_at || m->stopping || m->deciding || !a->finalized ||
        a->finalized(a->finalized_arg) != 1)
        return;
    m->linger_at = dt_clock_now_ms() + (long long)(a->linger * 1000.0);
}

/* The linger is over: the ranks still running are stuck after their
 * training ended everywhere. Named, stopped; the job's status stands. */
static void linger_over(monitor_t *m)
{
    char list[160] = "";
    size_t at = 0;
    int n = 0;
    for (int r = 0; r < m->a->np; r++) {
        if (end_of(m, r))
            continue;
        if (n++ < 8 && at < sizeof list)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%d",
                                   n == 1 ? "" : ", ", r);
    }
    if (n > 8 && at < sizeof list)
        snprintf(list + at, sizeof list - at, " and %d more", n - 8);
    dt_warn("rank%s %s still running %g s after every rank reached "
            "dt_finalize and a rank exited ([cluster] timeout): stuck in "
            "its teardown (stopped, or hung in a transport's or CUDA's "
            "shutdown or on a file system); stopping %s (SIGTERM, SIGKILL "
            "after %gs). Training ended on every rank: the job succeeded",
            n == 1 ? "" : "s", list, m->a->linger, n == 1 ? "it" : "them",
            m->a->kill_grace);
    begin_stop(m);
}

static void on_exit_event(monitor_t *m, const dt_worker_exit_t *ev)
{
    output_lines_flush_rank(m->a->lines, ev->rank);
    note_end(m, ev);
    char who[320];
    describe(ev, who, sizeof who);
    supervise_result_t *res = m->a->result;
    if (!failed(ev)) {
        dt_debug("%s finished", who);
        linger_after(m);
        return;
    }
    if (preempted(m, ev)) {
        if (res)
            res->npreempted++;
        /* the checkpoint is named at the end (a diverged state has none) */
        dt_info("%s was preempted: resumable (exit code %d)", who,
                ev->code);
        /* After a failure (still deciding which is the root, or stopping)
         * the failure's status stands. */
        if (m->deciding)
            return;
        if (!m->stopping && m->exit_code == 0)
            m->exit_code = ev->code;
        begin_stop(m);
        return;
    }
    if (m->deciding) {
        if (m->have_culprit ? ev->rank == m->culprit.rank
                            : killed_abruptly(ev)) {
            ended_t root;
            keep(&root, ev);
            decide(m, &root.ev);
        } else {
            dt_debug("%s %s (after the first failure)", who,
                     ev->signaled ? "was killed by a signal"
                                  : "exited with an error");
        }
        return;
    }
    if (m->stopping) { /* expected: we are stopping the job */
        if (ev->signaled)
            dt_debug("%s stopped by signal %d", who, ev->signo);
        else
            dt_debug("%s exited with code %d while stopping", who, ev->code);
        return;
    }
    first_failure(m, ev);
}

static void on_stop_signal(monitor_t *m, int signo)
{
    if (m->a->result && !m->a->result->stop_signo)
        m->a->result->stop_signo = signo;
    /* The user's second signal kills at once; a stop begun by dtctl (a
     * failure decided, before or right here) is not their first. */
    int again = m->stop_signals++ > 0;
    if (!again)
        m->first_signo = signo;
    if (m->deciding)
        decide_late(m);
    if (!again) {
        if (m->exit_code == 0)
            m->exit_code = 128 + signo;
        if (m->stopping) { /* a failure's stop is under way: it stands */
            dt_warn("received %s: the job is stopping already (SIGKILL "
                    "%gs after its SIGTERM; send it again to kill at once)",
                    strsignal(signo), m->a->kill_grace);
            return;
        }
        int as_is = signo == SIGINT && m->a->interrupts;
        if (as_is)
            dt_warn("received %s: stopping the job (SIGINT to every "
                    "worker, as from a terminal: Python raises "
                    "KeyboardInterrupt; SIGKILL after %gs; send it again "
                    "to kill at once)",
                    strsignal(signo), m->a->kill_grace);
        else
            dt_warn("received %s: stopping the job (SIGTERM to every "
                    "worker, SIGKILL after %gs; send it again to kill at "
                    "once)",
                    strsignal(signo), m->a->kill_grace);
        begin_stop_with(m, as_is ? SIGINT : SIGTERM);
    } else if (!m->killed) {
        dt_warn("received %s again: killing the workers now",
                strsignal(signo));
        kill_now(m);
    }
}

/* Nobody reads dtctl's stdout (or stderr) any more (`dtctl run ... |
 * head` after head ended). A writer in a shell pipeline would die of
 * SIGPIPE; the job's output would only be dropped from here on, so the
 * job stops like on a stop signal (no restart) and dtctl exits 141, as a
 * writer killed by SIGPIPE does, unless a failure's status stands. The
 * message goes to stderr, which is usually still read. ended: every
 * worker ended already (only its last lines were lost). */
static void on_reader_gone(monitor_t *m, int ended)
{
    int which = output_lines_reader_gone(m->a->lines);
    if (!which || m->reader_gone)
        return;
    m->reader_gone = 1;
    const char *stream = which == 1 ? "standard output" : "standard error";
    if (m->a->result && !m->a->result->stop_signo)
        m->a->result->stop_signo = SIGPIPE;
    if (m->exit_code == 0 && !m->deciding)
        m->exit_code = 128 + SIGPIPE;
    if (ended) {
        dt_error("nobody reads dtctl's %s any more (its reader ended, e.g. "
                 "`| head`): the workers' last output was lost", stream);
        return;
    }
    if (m->stopping || m->deciding)
        return; /* stopping already: the workers' output is dropped */
    dt_error("nobody reads dtctl's %s any more (its reader ended, e.g. "
             "`| head`): stopping the job (SIGTERM to every worker, SIGKILL "
             "after %gs; exit status %d, as for SIGPIPE)",
             stream, m->a->kill_grace, 128 + SIGPIPE);
    begin_stop(m);
}

/* The store refused a worker of another dt (its error line says who and
 * what to do): that is the cause, whatever the workers' ends say (the
 * refused one exits 1, an old one blames the job token), and a restart
 * would meet it again. Checked before each exit is handled: the store
 * counts the refusal before the worker learns of it. */
static void check_other_dt(monitor_t *m)
{
    const supervise_args_t *a = m->a;
    if (m->other_dt || !a->refused || !a->refused(a->refused_arg))
        return;
    m->other_dt = 1;
    m->deciding = 0;
    m->exit_code = SUPERVISE_EXIT_OTHER_DT;
    if (a->result) {
        snprintf(a->result->cause, sizeof a->result->cause,
                 "a worker runs another dt than dtctl (see the rendezvous "
                 "store's line above)");
        a->result->root_rank = -1;
        a->result->final = 1;
    }
    dt_error("stopping the job: a worker runs another dt than this dtctl "
             "(the rendezvous store's line above says which and what to "
             "do); exit status %d", SUPERVISE_EXIT_OTHER_DT);
    begin_stop(m);
}

/* Ctrl-Z (SIGTSTP): the workers stop with dtctl and continue with it, as
 * one job at the terminal. Left running they trained on unwatched, their
 * output piling up in dtctl's pipes. The deadlines move by the time
 * stopped: a grace or a wait is not used up while nothing ran. A launcher
 * that cannot stop its workers (or a host whose workers did not follow)
 * is said so: "the workers are stopped too" would be a lie. */
static void suspend_job(monitor_t *m)
{
    const supervise_args_t *a = m->a;
    if (stop_signals_continued_since_tstp())
        return; /* continued before we looked: nothing to stop */
    /* No shell can continue an orphaned group: the kernel drops a
     * terminal's stop for it, and so do we (docker run -it, srun --pty) */
    if (dt_pgrp_orphaned()) {
        dt_info("SIGTSTP (Ctrl-Z) ignored: no job control here (an orphaned "
                "process group: nothing could continue the job)");
        return;
    }
    if (!a->suspends) {
        dt_warn("stopped (SIGTSTP, Ctrl-Z): dtctl alone; the workers keep "
                "running (%s); fg or kill -CONT %d continues dtctl",
                a->no_suspend ? a->no_suspend : "the launcher cannot stop "
                                                "them",
                (int)getpid());
        raise(SIGSTOP); /* returns on SIGCONT */
        dt_info("continued");
        return;
    }
    int all_stopped = a->ops->signal(a->ctx, SIGSTOP) == DT_OK;
    /* fg or kill -CONT while the launcher stopped the workers (ssh, mpi
     * and slurm wait up to 5 s for them): stopping dtctl now would leave
     * it and the workers stopped, with no CONT left to come. */
    if (stop_signals_continued_since_tstp()) {
        if (a->ops->signal(a->ctx, SIGCONT) == DT_OK)
            dt_info("SIGTSTP (Ctrl-Z), then SIGCONT while the workers were "
                    "being stopped: they continue, and dtctl runs on");
        else
            dt_warn("SIGTSTP (Ctrl-Z), then SIGCONT while the workers were "
                    "being stopped: dtctl runs on; the workers the launcher "
                    "named above may stay stopped (a stop of the job ends "
                    "them)");
        return;
    }
    if (all_stopped)
        dt_info("stopped (SIGTSTP, Ctrl-Z): the workers are stopped too; fg "
                "or kill -CONT %d continues them", (int)getpid());
    else
        dt_warn("stopped (SIGTSTP, Ctrl-Z): dtctl and the workers, but "
                "not those named above (they keep running); fg or kill -CONT "
                "%d continues them all", (int)getpid());
    long long stopped_at = dt_clock_now_ms();
    raise(SIGSTOP); /* returns on SIGCONT */
    long long away = dt_clock_now_ms() - stopped_at;
    if (a->ops->signal(a->ctx, SIGCONT) == DT_OK)
        dt_info("continued: the workers continue too");
    else
        dt_warn("continued: dtctl; the workers the launcher named above "
                "may stay stopped (a stop of the job ends them)");
    if (!all_stopped)
        return; /* some ran on: their time was used */
    m->kill_at += away;
    m->give_up_at += away;
    if (m->linger_at)
        m->linger_at += away;
    m->decide_at += away;
}

/* How long the next wait() may sleep. */
static int next_tick(const monitor_t *m)
{
    long long t = TICK_MS;
    if (m->deciding) {
        long long left = m->decide_at - dt_clock_now_ms();
        t = left < 0 ? 0 : left < t ? left : t;
    }
    if (m->linger_at && !m->stopping) {
        long long left = m->linger_at - dt_clock_now_ms();
        t = left < 0 ? 0 : left < t ? left : t;
    }
    if (m->stopping && !m->killed) {
        long long left = m->kill_at - dt_clock_now_ms();
        t = left < 0 ? 0 : left < t ? left : t;
    }
    return (int)t;
}

int supervise_job(const supervise_args_t *a)
{
    monitor_t m;
    memset(&m, 0, sizeof m);
    m.a = a;
    /* Ctrl-Z comes here even when the workers cannot stop: it says so.
     * One kept while they were being started is taken first. */
    stop_signals_tstp_mode(STOP_TSTP_FORWARD);
    m.oom_kills = a->oom_at_start;
    for (;;) {
        int signo;
        if (m.deciding && dt_clock_now_ms() >= m.decide_at)
            decide_late(&m);
        while ((signo = stop_signals_take()) != 0) {
            if (signo == SIGTSTP)
                suspend_job(&m);
            else
                on_stop_signal(&m, signo);
        }
        if (m.linger_at && !m.stopping && dt_clock_now_ms() >= m.linger_at)
            linger_over(&m);
        if (m.stopping && !m.killed && dt_clock_now_ms() >= m.kill_at) {
            /* dt's trainer stopped by SIGTERM/SIGUSR1 writes a
             * checkpoint first: the kill may cut that write short. */
            int ckpt = a->trainer && (m.first_signo == SIGTERM ||
                                      m.first_signo == SIGUSR1);
            if (a->kill_grace > 0)
                dt_warn("workers still running %gs after %s "
                        "([cluster] kill_grace); sending SIGKILL%s",
                        a->kill_grace,
                        m.stop_sent == SIGINT ? "SIGINT" : "SIGTERM",
                        ckpt ? ": a preemption checkpoint they were "
                               "writing may be lost (the one before it "
                               "stands); raise [cluster] kill_grace above "
                               "a checkpoint's write time"
                             : "");
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
        check_other_dt(&m);
        dt_worker_exit_t ev;
        dt_status_t st = a->ops->wait(a->ctx, next_tick(&m), &ev);
        check_other_dt(&m);
        on_reader_gone(&m, 0);
        if (a->show_prompts)
            output_lines_show_prompt(a->lines, 0);
        output_lines_tick(a->lines); /* progress bars: <= 1 redraw a tick */
        if (st == DT_ERR_TIMEOUT)
            continue;
        if (st == DT_ERR_NOT_FOUND) {
            decide_late(&m);
            break; /* every worker ended */
        }
        if (st != DT_OK) {
            decide_late(&m);
            dt_error("the launcher lost track of the workers: %s; stopping "
                     "the job",
                     dt_status_str(st));
            if (m.exit_code == 0)
                m.exit_code = 1;
            break; /* the launcher's fini kills and reaps what is left */
        }
        on_exit_event(&m, &ev);
    }
    stop_signals_tstp_mode(STOP_TSTP_ALONE);
    output_lines_flush_all(a->lines);
    on_reader_gone(&m, 1);
    free(m.ends);
    free(m.ended);
    return m.exit_code;
}
