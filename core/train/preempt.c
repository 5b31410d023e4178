/* preempt.c — the preemption request and its watchdog (see preempt.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#include "preempt.h"

/* The handler runs in whichever thread the kernel picks: the trainer's,
 * or one OpenBLAS started (dt's own threads block signals; OpenBLAS's do
 * not, and exist even at [train] threads = 1). So the flags it
 * shares with the training thread are atomics (lock-free: fine in a
 * handler), which volatile sig_atomic_t is not between threads; and a
 * handler on another thread may test busy and agreed just before the
 * training thread sets them and arm the watchdog just after it disarmed
 * it, so the watchdog tests them again when it fires. */
#define LOAD(v) __atomic_load_n(&(v), __ATOMIC_SEQ_CST)
#define STORE(v, x) __atomic_store_n(&(v), (x), __ATOMIC_SEQ_CST)
static int requested, agreed, installed, busy;
static long grace_ms = 2000;
static struct sigaction saved_term, saved_usr1, saved_alrm;

static void arm(long ms)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = ms / 1000;
    it.it_value.tv_usec = (ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &it, NULL);
}

static void on_request(int signo)
{
    int saved_errno = errno;
    int none = 0;
    if (__atomic_compare_exchange_n(&requested, &none, signo, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
        !LOAD(agreed) && !LOAD(busy))
        arm(LOAD(grace_ms));
    errno = saved_errno;
}

/* The vote never came: die by the signal that asked, as without us. */
static void on_watchdog(int signo)
{
    (void)signo;
    /* Armed by a handler on another thread as the training thread agreed
     * or went busy: that disarmed it first; busy's end arms it again. */
    if (LOAD(agreed) || LOAD(busy))
        return;
    int sig = LOAD(requested);
    if (!sig)
        sig = SIGTERM;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}

void dt_preempt_install(void)
{
    if (LOAD(installed))
        return;
    STORE(requested, 0); /* (a run that failed while busy) */
    STORE(agreed, 0);
    STORE(busy, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_request;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, &saved_term);
    sigaction(SIGUSR1, &sa, &saved_usr1);
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, &saved_alrm);
    STORE(installed, 1);
}

void dt_preempt_restore(void)
{
    if (!LOAD(installed))
        return;
    arm(0);
    sigaction(SIGTERM, &saved_term, NULL);
    sigaction(SIGUSR1, &saved_usr1, NULL);
    sigaction(SIGALRM, &saved_alrm, NULL);
    STORE(installed, 0);
}

int dt_preempt_requested(void) { return LOAD(requested); }

void dt_preempt_agreed(void)
{
    STORE(agreed, 1);
    arm(0);
}

void dt_preempt_set_grace_ms(long ms) { STORE(grace_ms, ms > 0 ? ms : 1); }

void dt_preempt_busy(bool on)
{
    if (!LOAD(installed))
        return;
    STORE(busy, (int)on);
    if (on)
        arm(0);
    else if (LOAD(requested) && !LOAD(agreed))
        arm(LOAD(grace_ms)); /* the request waits for the next vote from now */
}
