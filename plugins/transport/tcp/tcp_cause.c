/* tcp_cause.c — agree on the root cause of a failure through the
 * rendezvous store, so that every rank names the same failed rank.
 *
 * Why a side channel: a rank that fails closes its connections, and the
 * in-band abort header it sends reaches only peers whose stream is at a
 * message boundary. A peer in the middle of a payload just sees the close
 * and would blame the messenger. So before it closes anything, a failing
 * rank makes sure the store holds the root cause (the first rank to record
 * one wins: an atomic add elects it, then it writes the cause), and a rank
 * that sees a peer close consults the store before it blames that peer.
 * Causality does the rest: whoever closed because of a failure recorded
 * it first, so the record is there by the time the close is seen.
 *
 * Bounded: a lookup does not wait; only a rank that lost the election
 * waits (at most CAUSE_WAIT_S) for the winner's record. A store that is
 * gone fails at once, and the rank then reports what it saw itself. */
#include <stdio.h>
#include <stdlib.h>

#include <dt/log.h>
#include <dt/store.h>
#include "tcp.h"

/* How long a rank that lost the election waits for the winner's record. */
#define CAUSE_WAIT_S 2.0

static void cause_key(const tcp_ctx_t *c, const char *what, char *key,
                      size_t len)
{
    snprintf(key, len, "tcp/%lld/cause/%s", c->epoch, what);
}

/* The store holds "failed_rank detecting_rank". */
static int parse_cause(const tcp_ctx_t *c, const void *val, size_t len,
                       int *failed, int *detector)
{
    int f = -1, d = -1;
    if (len == 0 || sscanf(val, "%d %d", &f, &d) != 2 || f < 0 ||
        f >= c->size || d < 0 || d >= c->size)
        return 0;
    *failed = f;
    *detector = d;
    return 1;
}

/* A store error means it is gone (or its connection is): stop using it,
 * so no later step of this failure waits on it. */
static int store_usable(tcp_ctx_t *c, dt_status_t st)
{
    if (st == DT_OK || st == DT_ERR_TIMEOUT)
        return 1;
    dt_warn("tcp: rank %d: the rendezvous store did not answer (%s); "
            "reporting this rank's own view of the failure",
            c->rank, dt_status_str(st));
    c->store = NULL;
    return 0;
}

static int lookup(tcp_ctx_t *c, double wait, int *failed, int *detector)
{
    char key[96];
    void *val = NULL;
    size_t len = 0;
    cause_key(c, "rank", key, sizeof key);
    dt_status_t st = dt_store_get(c->store, key, wait, &val, &len);
    int found = st == DT_OK && parse_cause(c, val, len, failed, detector);
    free(val);
    store_usable(c, st);
    return found;
}

int tcp_cause_resolve(tcp_ctx_t *c, int suspect, int *failed, int *detector)
{
    if (!c->store)
        return 0;
    if (lookup(c, 0, failed, detector))
        return 1;
    if (suspect < 0 || !c->store)
        return 0;
    char key[96];
    int64_t votes = 0;
    cause_key(c, "votes", key, sizeof key);
    dt_status_t st = dt_store_add(c->store, key, 1, &votes);
    if (!store_usable(c, st) || st != DT_OK)
        return 0;
    if (votes == 1) {
        char val[64];
        int n = snprintf(val, sizeof val, "%d %d", suspect, c->rank);
        cause_key(c, "rank", key, sizeof key);
        st = dt_store_set(c->store, key, val, (size_t)n);
        if (!store_usable(c, st) || st != DT_OK)
            return 0;
        *failed = suspect;
        *detector = c->rank;
        return 1;
    }
    /* Another rank won: its record follows its vote at once. */
    double wait = c->timeout < CAUSE_WAIT_S ? c->timeout : CAUSE_WAIT_S;
    return c->store && lookup(c, wait, failed, detector);
}
