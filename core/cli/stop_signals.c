/* stop_signals.c — the self-pipe behind stop_signals.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "stop_signals.h"

/* SIGQUIT (Ctrl-\) and SIGUSR2 killed dtctl without a word, its last
 * output lines lost, the job left to the workers' guards. */
static const int stop_signos[] = {SIGINT,  SIGTERM, SIGHUP,
                                  SIGQUIT, SIGUSR1, SIGUSR2};
#define NSTOP (sizeof stop_signos / sizeof stop_signos[0])

static int self_pipe[2] = {-1, -1};
/* A stop signal came (stays set). Set by the handler in whichever thread
 * the signal lands, read by others (the storage plugins' per-host threads
 * poll stop_signals_pending): an atomic, which volatile sig_atomic_t is
 * not between threads (lock-free, so the handler may store it). */
static int pending;
static struct sigaction saved[NSTOP], saved_pipe, saved_tstp;
/* What a SIGTSTP does now (stop_tstp_mode_t): read by the handler in
 * whichever thread it lands. */
static int tstp_mode = STOP_TSTP_ALONE;
/* A SIGTSTP that stop_signals_take read while it was kept for the
 * supervisor: put back in the pipe when the supervisor starts. Main
 * thread only (take and the mode's switch). */
static int tstp_taken_while_kept;
/* SIGCONTs received, and their count when the last SIGTSTP came: a
 * CONT since then (kill -TSTP then -CONT before the supervisor looked, or
 * a second Ctrl-Z before fg) means "do not stop now". */
static unsigned conts, conts_at_tstp;
static struct sigaction saved_cont;

static void on_cont(int signo)
{
    (void)signo;
    __atomic_add_fetch(&conts, 1, __ATOMIC_ACQ_REL);
}

/* Stop dtctl alone as a SIGTSTP without a handler would: the kernel's
 * default action, which it drops in an orphaned process group (raising
 * SIGSTOP froze dtctl under docker run -it or srun --pty, where nothing
 * can continue it). Async-signal-safe: also called from the handler. */
static void stop_alone(void)
{
    struct sigaction dfl, mine;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGTSTP, &dfl, &mine);
    sigset_t tstp, old;
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &tstp, &old); /* blocked in its handler */
    raise(SIGTSTP); /* returns on SIGCONT, or at once when dropped */
    sigprocmask(SIG_SETMASK, &old, NULL);
    sigaction(SIGTSTP, &mine, NULL);
}

static void on_stop_signal(int signo)
{
    int saved_errno = errno;
    if (signo == SIGTSTP) {
        __atomic_store_n(&conts_at_tstp,
                         __atomic_load_n(&conts, __ATOMIC_ACQUIRE),
                         __ATOMIC_RELEASE);
        if (__atomic_load_n(&tstp_mode, __ATOMIC_ACQUIRE) ==
            STOP_TSTP_ALONE) {
            stop_alone();
            errno = saved_errno;
            return;
        }
    } else {
        __atomic_store_n(&pending, 1, __ATOMIC_RELEASE);
    }
    unsigned char b = (unsigned char)signo;
    ssize_t w = write(self_pipe[1], &b, 1); /* full pipe: one is enough */
    (void)w;
    errno = saved_errno;
}

/* A SIGHUP that dtctl was started with ignored stays ignored: `nohup
 * dtctl run ... &` must outlive the logout. SIGINT is taken even then
 * (sh ignores it for a script's background commands, yet a Ctrl-C that
 * ends the script should not leave its jobs running unwatched), and
 * SIGTERM and SIGUSR1 are a scheduler's stop or preemption. */
static int ignored_by_caller(int signo, const struct sigaction *old)
{
    return signo == SIGHUP && old->sa_handler == SIG_IGN;
}

dt_status_t stop_signals_install(void)
{
    if (pipe2(self_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        dt_error("cannot create the signal pipe: %s", strerror(errno));
        return DT_ERR_IO;
    }
    __atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: a signal cuts the launcher's poll() short. */
    for (size_t i = 0; i < NSTOP; i++) {
        sigaction(stop_signos[i], NULL, &saved[i]);
        if (!ignored_by_caller(stop_signos[i], &saved[i]))
            sigaction(stop_signos[i], &sa, NULL);
    }
    /* A shell without job control ignores SIGTSTP for its children. */
    sigaction(SIGTSTP, NULL, &saved_tstp);
    if (saved_tstp.sa_handler != SIG_IGN)
        sigaction(SIGTSTP, &sa, NULL);
    struct sigaction cont;
    memset(&cont, 0, sizeof cont);
    cont.sa_handler = on_cont;
    sigemptyset(&cont.sa_mask);
    cont.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &cont, &saved_cont);
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &saved_pipe);
    return DT_OK;
}

int stop_signals_take(void)
{
    unsigned char b;
    if (self_pipe[0] < 0)
        return 0;
    while (read(self_pipe[0], &b, 1) == 1) {
        if (b != SIGTSTP)
            return b;
        int mode = __atomic_load_n(&tstp_mode, __ATOMIC_ACQUIRE);
        if (mode == STOP_TSTP_FORWARD)
            return b;
        if (mode == STOP_TSTP_KEEP)
            tstp_taken_while_kept = 1; /* the supervisor's, later */
        else if (!__atomic_load_n(&pending, __ATOMIC_ACQUIRE) &&
                 !stop_signals_continued_since_tstp())
            stop_alone(); /* no worker runs: dtctl alone */
        /* else: kept while a start failed, then a Ctrl-C (which ends
         * dtctl: stopping first would hold it until fg) or a SIGCONT
         * (which cancels it): dropped */
    }
    return 0;
}

int stop_signals_continued_since_tstp(void)
{
    return __atomic_load_n(&conts, __ATOMIC_ACQUIRE) !=
           __atomic_load_n(&conts_at_tstp, __ATOMIC_ACQUIRE);
}

void stop_signals_tstp_mode(stop_tstp_mode_t mode)
{
    int was = __atomic_exchange_n(&tstp_mode, (int)mode, __ATOMIC_ACQ_REL);
    /* A kept one still in the pipe reaches the supervisor's take; one
     * that take read meanwhile goes back in. */
    if (was == STOP_TSTP_KEEP && mode == STOP_TSTP_FORWARD &&
        tstp_taken_while_kept && self_pipe[1] >= 0) {
        unsigned char b = SIGTSTP;
        ssize_t w = write(self_pipe[1], &b, 1);
        (void)w;
    }
    /* Read while kept, and no supervisor comes (the start failed):
     * dropped, as no worker runs that a stop would hold. */
    tstp_taken_while_kept = 0;
}

int stop_signals_pending(void)
{
    return __atomic_load_n(&pending, __ATOMIC_ACQUIRE) != 0;
}

void stop_signals_restore(void)
{
    if (self_pipe[0] < 0)
        return;
    for (size_t i = 0; i < NSTOP; i++)
        sigaction(stop_signos[i], &saved[i], NULL);
    sigaction(SIGTSTP, &saved_tstp, NULL);
    sigaction(SIGCONT, &saved_cont, NULL);
    sigaction(SIGPIPE, &saved_pipe, NULL);
    close(self_pipe[0]);
    close(self_pipe[1]);
    self_pipe[0] = self_pipe[1] = -1;
}
