/* ps_link.h — a thread's own connection to the job's store for the
 * heartbeats of [train] mode = async: a parameter server's looks at the
 * workers' beats (ps_server.c), a worker's beats (ps_beat.c). Internal to
 * libdt.
 *
 * Opened at the first look (or by dt_ps_link_open). One that could not be
 * opened, or whose connection broke, is opened again at the first use
 * after it rested a period (dt_ps_link_resting): a transient failure
 * (dtctl stopped for a while, a link down) must not blind the server to
 * the beats, nor silence a worker's beat, for the rest of the job (a
 * worker evaluating alone would be taken for hung), and a broken handle
 * must not log "connection unusable" at every use. One warning per
 * stretch of failure, one line when the store answers again. */
#ifndef DT_TRAIN_PS_LINK_H
#define DT_TRAIN_PS_LINK_H

#include <stdint.h>

#include <dt/store.h>

typedef struct dt_ps_link {
    dt_store_t *store; /* NULL: not open (yet, or again)                */
    int tried;         /* a connection was tried: later tries are quiet */
    int silent;        /* failed since it warned                        */
    double silent_at;  /* when a look or a connection last failed       */
} dt_ps_link_t;

/* Whether the store failed less than period seconds before now: a look
 * then would cost its wait again; leave the store alone. */
int dt_ps_link_resting(const dt_ps_link_t *l, double now, double period);
/* Open the connection now (the first try: the client says why it
 * failed; a later use tries again). */
dt_status_t dt_ps_link_open(dt_ps_link_t *l, double wait);
/* Add delta to the counter at key, its new value into *n: DT_OK, or why
 * not. wait bounds the connection, when one is opened, and the answer. */
dt_status_t dt_ps_link_add(dt_ps_link_t *l, const char *key, int64_t delta,
                           double wait, int64_t *n);
/* The counter at key (an add of 0). */
dt_status_t dt_ps_link_look(dt_ps_link_t *l, const char *key, double wait,
                            int64_t *n);
void dt_ps_link_close(dt_ps_link_t *l);

#endif /* DT_TRAIN_PS_LINK_H */
