/* ps_beat.c — a worker's heartbeat thread (ps_beat.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include <dt/clock.h>
#include <dt/dt.h>
#include <dt/log.h>
#include "ps_beat.h"

/* A beat (its connection, when one is opened, and the answer) waits as
 * long as a server's look at it (ps_server.c): half the timeout, at most
 * DT_STORE_FAILURE_WAIT_S. A beat later than that cannot keep the worker
 * from being taken for hung, and dt_ps_beat_stop waits for it. */
static double beat_wait(const dt_ps_beat_t *b)
{
    return ps_failure_wait(b->live.timeout / 2);
}

void dt_ps_beat_once(dt_ps_beat_t *b)
{
    int64_t n;
    /* A failed store is left alone for a period, as the servers leave it
     * (ps_link.h): a store that does not answer costs one wait a period. */
    if (dt_ps_link_resting(&b->link, dt_clock_now(), b->live.period))
        return;
    dt_ps_link_add(&b->link, b->key, 1, beat_wait(b), &n);
}

static void *beat_main(void *arg)
{
    dt_ps_beat_t *b = arg;
    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        pthread_mutex_unlock(&b->mu);
        dt_ps_beat_once(b);
        pthread_mutex_lock(&b->mu);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double at = (double)ts.tv_sec + ts.tv_nsec * 1e-9 +
                    b->live.period / 2;
        ts.tv_sec = (time_t)at;
        ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
        while (!b->stop &&
               pthread_cond_timedwait(&b->cv, &b->mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int dt_ps_beat_init(dt_ps_beat_t *b, ps_live_t live)
{
    pthread_condattr_t ca;
    b->live = live;
    /* Not reached now: the client said why; the beat thread tries again
     * (quietly, then one warning), as after a connection that broke. */
    if (dt_ps_link_open(&b->link, live.timeout) != DT_OK)
        dt_debug("rank %d: no store for the parameter servers' beat yet: "
                 "tried again each period", dt_rank());
    snprintf(b->key, sizeof b->key, "ps/beat/%d", dt_rank());
    if (pthread_condattr_init(&ca) != 0)
        return 0;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int ok = pthread_mutex_init(&b->mu, NULL) == 0;
    if (ok && pthread_cond_init(&b->cv, &ca) != 0) {
        pthread_mutex_destroy(&b->mu);
        ok = 0;
    }
    pthread_condattr_destroy(&ca);
    return b->ready = ok;
}

void dt_ps_beat_start(dt_ps_beat_t *b)
{
    if (!b->ready || b->on)
        return;
    b->stop = 0;
    /* The beat takes no signals: the worker's handlers (preempt.c) run in
     * the training thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    b->on = pthread_create(&b->thread, NULL, beat_main, b) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void dt_ps_beat_stop(dt_ps_beat_t *b)
{
    if (!b->on)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    b->on = 0;
}

void dt_ps_beat_free(dt_ps_beat_t *b)
{
    dt_ps_beat_stop(b);
    if (b->ready) {
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->cv);
        b->ready = 0;
    }
    dt_ps_link_close(&b->link);
}
