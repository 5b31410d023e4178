/* preempt.c — the preemption request and its watchdog (see preempt.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#include "preempt.h"

static volatile sig_atomic_t requested, agreed, installed, busy;
static volatile long grace_ms = 2000;
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
    if (!requested) {
        requested = signo;
        if (!agreed && !busy)
            arm(grace_ms);
    }
    errno = saved_errno;
}

/* The vote never came: die by the signal that asked, as without us. */
static void on_watchdog(int signo)
{
    (void)signo;
    int sig = requested ? requested : SIGTERM;
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
    if (installed)
        return;
    requested = agreed = busy = 0; /* (a run that failed while busy) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_request;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, &saved_term);
    sigaction(SIGUSR1, &sa, &saved_usr1);
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, &saved_alrm);
    installed = 1;
}

void dt_preempt_restore(void)
{
    if (!installed)
        return;
    arm(0);
    sigaction(SIGTERM, &saved_term, NULL);
    sigaction(SIGUSR1, &saved_usr1, NULL);
    sigaction(SIGALRM, &saved_alrm, NULL);
    installed = 0;
}

int dt_preempt_requested(void) { return requested; }

void dt_preempt_agreed(void)
{
    agreed = 1;
    arm(0);
}

void dt_preempt_set_grace_ms(long ms) { grace_ms = ms > 0 ? ms : 1; }

void dt_preempt_busy(bool on)
{
    if (!installed)
        return;
    busy = on;
    if (on)
        arm(0);
    else if (requested && !agreed)
        arm(grace_ms); /* the request waits for the next vote from now */
}
