/* ps_beat.h — a worker's heartbeat in [train] mode = async: while it
 * works alone (its setup, an evaluation, a checkpoint) a thread of its
 * own adds 1 to "ps/beat/RANK" in the job's store every half period, and
 * the parameter servers see it alive (ps_server.c). Internal to libdt.
 *
 * The store connection is a dt_ps_link_t (ps_link.h), as the servers'
 * is: one that broke (a reset, a reply cut short) or could not be opened
 * is opened again at the first beat after it rested a period. The beat
 * once kept a broken handle for the rest of the job, each beat logging
 * the client's "connection unusable" error every half period and never
 * reaching the servers again. One warning per stretch of failure, one
 * line when the store takes the beats again. */
#ifndef DT_TRAIN_PS_BEAT_H
#define DT_TRAIN_PS_BEAT_H

#include <pthread.h>

#include "ps_common.h"
#include "ps_link.h"

typedef struct dt_ps_beat {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int on, stop, ready;
    ps_live_t live;
    dt_ps_link_t link; /* the store: opened by dt_ps_beat_init */
    char key[32];      /* "ps/beat/RANK" */
} dt_ps_beat_t;

/* The store is opened here, on the caller's thread: opened by the beat
 * thread, a slow store would hold the worker's first request
 * (dt_ps_beat_stop joins the thread) for up to [cluster] timeout. 0 when
 * the thread cannot be made (no beat then). */
int dt_ps_beat_init(dt_ps_beat_t *b, ps_live_t live);
/* Beat from now on (no-op when beating or not ready). */
void dt_ps_beat_start(dt_ps_beat_t *b);
/* Stop beating; returns once the thread ended (a beat in flight is
 * bounded by half the timeout, at most DT_STORE_FAILURE_WAIT_S). */
void dt_ps_beat_stop(dt_ps_beat_t *b);
/* One beat, as the thread does it (skipped while the link rests after a
 * failure; tests call it directly). */
void dt_ps_beat_once(dt_ps_beat_t *b);
/* Stops it and closes the store. */
void dt_ps_beat_free(dt_ps_beat_t *b);

#endif /* DT_TRAIN_PS_BEAT_H */
