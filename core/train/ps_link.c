/* ps_link.c — a connection to the job's store for the heartbeats (a
 * server's looks, a worker's beats), opened again after a failure
 * (ps_link.h). */
#include <dt/clock.h>
#include <dt/dt.h>
#include <dt/log.h>
#include "ps_common.h"
#include "ps_link.h"

int dt_ps_link_resting(const dt_ps_link_t *l, double now, double period)
{
    return l->silent && now - l->silent_at < period;
}

/* A store that cannot be reached: said once (after the client's own
 * line, the first time), and then tried again quietly. */
static dt_status_t unreachable(dt_ps_link_t *l, const char *skipped)
{
    if (!l->silent)
        dt_warn("rank %d: no connection to the rendezvous store for the "
                "workers' heartbeats (dtctl stopped, or its host cut "
                "off?): %s skipped, a new connection is tried each "
                "period (said once)",
                dt_rank(), skipped);
    l->silent = 1;
    l->silent_at = dt_clock_now();
    return DT_ERR_PEER;
}

/* The first try says why it failed (the client's line), later ones only
 * at debug level: unreachable() said it once. */
static dt_status_t connect_link(dt_ps_link_t *l, double wait,
                               const char *skipped)
{
    l->store = l->tried ? ps_store_reopen(wait) : ps_store_open(wait);
    l->tried = 1;
    return l->store ? DT_OK : unreachable(l, skipped);
}

dt_status_t dt_ps_link_open(dt_ps_link_t *l, double wait)
{
    if (!l->store) {
        l->store = ps_store_open(wait); /* says why not */
        l->tried = 1;
    }
    return l->store ? DT_OK : DT_ERR_PEER;
}

dt_status_t dt_ps_link_add(dt_ps_link_t *l, const char *key, int64_t delta,
                           double wait, int64_t *n)
{
    /* a look is an add of 0 (a server's), a beat one of 1 (a worker's) */
    if (!l->store && connect_link(l, wait, delta ? "beats" : "looks") != DT_OK)
        return DT_ERR_PEER;
    dt_status_t st = ps_beat_add(l->store, key, delta, wait, &l->silent, n);
    if (st == DT_OK)
        return DT_OK;
    l->silent_at = dt_clock_now();
    /* Broken (not timed out): the handle refuses every later request;
     * the next look opens a new one. */
    if (st == DT_ERR_PEER) {
        dt_store_close(l->store);
        l->store = NULL;
    }
    return st;
}

dt_status_t dt_ps_link_look(dt_ps_link_t *l, const char *key, double wait,
                            int64_t *n)
{
    return dt_ps_link_add(l, key, 0, wait, n);
}

void dt_ps_link_close(dt_ps_link_t *l)
{
    dt_store_close(l->store);
    l->store = NULL;
}
