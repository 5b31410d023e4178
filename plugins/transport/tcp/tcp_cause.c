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
 * gone fails at once, and one that does not answer at all (a stopped
 * dtctl, its host cut off from this one) is found by a bounded write
 * first (store_answers); either way the rank then reports what it saw
 * itself. Every later request waits at most CAUSE_PROBE_S for its answer
 * too: the store may stop after it answered the probe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include <dt/store.h>
#include "tcp.h"

/* How long a rank that lost the election waits for the winner's record. */
#define CAUSE_WAIT_S 2.0
/* How long a failing rank waits for the store to take one write before it
 * gives up on the store for this failure (store_answers): the same bound
 * as every failure path's (dt/store.h), well above what a loaded store
 * takes (8 ranks on 2 cores under the sanitizers), so the failure record,
 * which names the culprit, is kept but for a stopped or unreachable
 * dtctl. */
#define CAUSE_PROBE_S DT_STORE_FAILURE_WAIT_S

static void cause_key(const tcp_ctx_t *c, const char *what, char *key,
                      size_t len)
{
    snprintf(key, len, "tcp/%lld/cause/%s", c->epoch, what);
}

/* The store holds "failed_rank detecting_rank how". */
static int parse_cause(const tcp_ctx_t *c, const void *val, size_t len,
                       int *failed, int *detector, char *how)
{
    char text[64], h[TCP_HOW_MAX] = "";
    int f = -1, d = -1;
    snprintf(text, sizeof text, "%.*s", (int)(len < 63 ? len : 63),
             (const char *)val);
    if (len == 0 || sscanf(text, "%d %d %15s", &f, &d, h) < 2 || f < 0 ||
        f >= c->size || d < 0 || d >= c->size)
        return 0;
    *failed = f;
    *detector = d;
    snprintf(how, TCP_HOW_MAX, "%s", h);
    return 1;
}

/* A store error means it is gone (or its connection is): stop using it,
 * so no later step of this failure waits on it. A timeout of a look (a
 * GET) may only mean that the key is unset: it keeps the store. */
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

/* A write or an add is answered at once: its timeout means that the store
 * stopped answering since the probe (dtctl stopped, its host cut off):
 * stop using it, as store_answers does. */
static int store_took(tcp_ctx_t *c, dt_status_t st, const char *what)
{
    if (st != DT_ERR_TIMEOUT)
        return store_usable(c, st);
    dt_warn("tcp: rank %d: the rendezvous store did not answer %s within "
            "%.0f s: is dtctl stopped or its host unreachable? Reporting "
            "this rank's own view of the failure",
            c->rank, what, CAUSE_PROBE_S);
    c->store = NULL;
    return 0;
}

/* Whether the store answers at all, asked once with a write bounded by
 * CAUSE_PROBE_S. The failure path's requests once waited up to the store
 * client's I/O limit (60 s) each, and the reply owed for a wait record
 * that timed out (wait_put) made each of them wait that long: a rank
 * whose host lost its link to dtctl's exited some 3 minutes after its
 * own timeout, holding its GPU, and its rank 0 the checkpoint lock a
 * restart needs. Each is bounded by CAUSE_PROBE_S now as well (a store
 * that stops after the probe answered). The write reads any owed reply
 * first, so a store that was only slow for a while is still used. */
static int store_answers(tcp_ctx_t *c)
{
    if (!c->store)
        return 0;
    if (c->store_answered)
        return 1;
    char key[96];
    snprintf(key, sizeof key, "tcp/%lld/probe/%d", c->epoch, c->rank);
    dt_status_t st = dt_store_set_bounded(c->store, key, "1", 1,
                                          CAUSE_PROBE_S);
    if (st == DT_OK) {
        c->store_answered = 1;
        return 1;
    }
    dt_warn("tcp: rank %d: the rendezvous store did not answer within "
            "%.0f s (%s): is dtctl stopped or its host unreachable? "
            "Reporting this rank's own view of the failure",
            c->rank, CAUSE_PROBE_S, dt_status_str(st));
    c->store = NULL;
    return 0;
}

static int lookup(tcp_ctx_t *c, double wait, int *failed, int *detector,
                  char *how)
{
    char key[96];
    void *val = NULL;
    size_t len = 0;
    cause_key(c, "rank", key, sizeof key);
    dt_status_t st = dt_store_get_bounded(c->store, key, wait, CAUSE_PROBE_S,
                                          &val, &len);
    int found =
        st == DT_OK && parse_cause(c, val, len, failed, detector, how);
    free(val);
    store_usable(c, st);
    return found;
}

int tcp_cause_resolve(tcp_ctx_t *c, int suspect, const char *how,
                      int *failed, int *detector, char *found_how)
{
    if (!store_answers(c))
        return 0;
    if (lookup(c, 0, failed, detector, found_how))
        return 1;
    if (suspect < 0 || !c->store)
        return 0;
    char key[96];
    int64_t votes = 0;
    cause_key(c, "votes", key, sizeof key);
    dt_status_t st = dt_store_add_bounded(c->store, key, 1, &votes,
                                          CAUSE_PROBE_S);
    if (!store_took(c, st, "this rank's vote") || st != DT_OK)
        return 0;
    if (votes == 1) {
        char val[64];
        int n = snprintf(val, sizeof val, "%d %d %s", suspect, c->rank, how);
        cause_key(c, "rank", key, sizeof key);
        st = dt_store_set_bounded(c->store, key, val, (size_t)n,
                                  CAUSE_PROBE_S);
        if (!store_took(c, st, "this rank's record") || st != DT_OK)
            return 0;
        *failed = suspect;
        *detector = c->rank;
        snprintf(found_how, TCP_HOW_MAX, "%s", how);
        /* No rank failed when the calls do not match: dtctl learns it
         * from the ranks' exits. */
        if (strcmp(how, TCP_HOW_MISMATCH) == 0)
            return 1;
        /* The job's record for dtctl (first record of any layer wins). */
        if (dt_store_culprit_record_bounded(c->store, suspect, c->rank, how,
                                            CAUSE_PROBE_S) != DT_OK)
            dt_debug("tcp: rank %d: could not record rank %d as the job's "
                     "failure in the store",
                     c->rank, suspect);
        return 1;
    }
    /* Another rank won: its record follows its vote at once. */
    double wait = c->timeout < CAUSE_WAIT_S ? c->timeout : CAUSE_WAIT_S;
    return c->store && lookup(c, wait, failed, detector, found_how);
}

/* ---- who waits on whom --------------------------------------------------- */

static void wait_key(const tcp_ctx_t *c, int rank, char *key, size_t len)
{
    snprintf(key, len, "tcp/%lld/wait/%d", c->epoch, rank);
}

/* A wait record is written from inside a wait: a stopped or unreachable
 * store must not hold up the data path (and its sockets) for long. After
 * one failure this init writes no more (its record may then be stale: a
 * timeout's walk treats a record that stopped moving as the end). */
static void wait_put(tcp_ctx_t *c, int peer)
{
    if (!c->store || c->wait_notes_off)
        return;
    char key[96], val[64];
    wait_key(c, c->rank, key, sizeof key);
    int n = snprintf(val, sizeof val, "%d %lld", peer, ++c->wait_seq);
    dt_status_t st = dt_store_set_bounded(c->store, key, val, (size_t)n,
                                          TCP_WAIT_NOTE_IO_S);
    if (st == DT_OK)
        return;
    c->wait_noted = 0;
    c->wait_notes_off = 1;
    dt_warn("tcp: rank %d: the rendezvous store took no record of this "
            "rank's wait within %.0f s (%s): is dtctl stopped or its host "
            "unreachable? Training goes on; this rank records no more "
            "waits, so a later timeout may name a rank that only waited",
            c->rank, TCP_WAIT_NOTE_IO_S, dt_status_str(st));
}

void tcp_wait_note(tcp_ctx_t *c, int peer)
{
    c->wait_noted = 1;
    wait_put(c, peer);
}

void tcp_wait_clear(tcp_ctx_t *c)
{
    if (!c->wait_noted)
        return;
    c->wait_noted = 0;
    wait_put(c, -1);
}

/* 1 with whom `rank` waits on (and its record's sequence number) when it
 * recorded that it waits; 0: it does not (or no record). */
static int waits_on(tcp_ctx_t *c, int rank, int *on, long long *seq)
{
    char key[96];
    void *val = NULL;
    size_t len = 0;
    if (!c->store)
        return 0;
    wait_key(c, rank, key, sizeof key);
    dt_status_t st = dt_store_get_bounded(c->store, key, 0, CAUSE_PROBE_S,
                                          &val, &len);
    int p = -1;
    long long q = 0;
    char text[64];
    if (st == DT_OK) {
        snprintf(text, sizeof text, "%.*s", (int)(len < 63 ? len : 63),
                 (const char *)val);
        if (sscanf(text, "%d %lld", &p, &q) != 2)
            p = -1;
    }
    free(val);
    if (p < 0 || p >= c->size)
        return 0;
    *on = p;
    *seq = q;
    return 1;
}

static void nap(double seconds)
{
    struct timespec ts = {(time_t)seconds,
                          (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* One walk along the records from peer; returns the end of the chain. */
static int walk(tcp_ctx_t *c, int peer, char *chain, size_t len)
{
    int *next = calloc((size_t)c->size, sizeof *next);
    long long *seq = calloc((size_t)c->size, sizeof *seq);
    char *seen = calloc((size_t)c->size, 1);
    int cur = peer, end = peer;
    size_t off = (size_t)snprintf(chain, len, "%d", peer);
    if (!next || !seq || !seen)
        goto out;
    for (;;) {
        int on;
        if (cur == c->rank || !waits_on(c, cur, &on, &seq[cur])) {
            end = cur == c->rank ? peer : cur;
            break;
        }
        seen[cur] = 1;
        next[cur] = on;
        if (off < len)
            off += (size_t)snprintf(chain + off, len - off, " -> %d", on);
        if (!seen[on]) {
            cur = on;
            continue;
        }
        /* A cycle of waits: one of its records is stale (its rank was
         * stopped while it waited). Live waiters refresh theirs. */
        nap(2 * c->wait_note_after);
        end = peer;
        int r = on;
        do {
            int o;
            long long q;
            if (!waits_on(c, r, &o, &q) || q == seq[r]) {
                end = r;
                break;
            }
            r = next[r];
        } while (r != on);
        break;
    }
out:
    free(next);
    free(seq);
    free(seen);
    return end;
}

int tcp_silent_root(tcp_ctx_t *c, int peer, char *chain, size_t len)
{
    snprintf(chain, len, "%d", peer);
    if (!store_answers(c))
        return peer;
    /* A rank at the end may have started to wait only just now, not long
     * enough to say so: look once it would have. */
    nap(1.5 * c->wait_note_after);
    int end = walk(c, peer, chain, len);
    return c->store ? end : peer;
}
