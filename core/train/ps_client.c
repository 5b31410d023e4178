/* ps_client.c — the workers' side of [train] mode = async: pushes,
 * pulls and the liveness of the servers they wait on (protocol: ps.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dt/clock.h>
#include <dt/dt.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include <dt/store.h>
#include "coll/coll.h"
#include "coll/transport_call.h"
#include "plugin/plugin_loader.h"
#include "ps_beat.h"
#include "ps_common.h"

/* ======================================================================
 * Client (workers)
 * ====================================================================== */

struct dt_ps_client {
    dt_comm_t *c;
    int W, S;
    size_t n;
    ctl_t *out, *in;       /* per server                              */
    dt_request_t **reqs;   /* 4 per server                            */
    int *owner;            /* the server of each of reqs              */
    double wait;
    /* A push in flight (dt_ps_push_begin): its requests, the gradients
     * being sent (a copy: backward rewrites the caller's), the fresh
     * parameters arriving, and where they go when it completes. */
    size_t inflight;       /* requests posted, 0: none                */
    float *sendbuf, *fresh, *dst;
    /* Liveness: a receive of each server's "held" notices stays posted;
     * when each server last answered or sent one. */
    ps_live_t live;
    ctl_t *note;
    dt_request_t **note_req;
    double *heard;
    dt_store_t *store;     /* for the failure record                  */
    dt_ps_beat_t beat;     /* while it works alone (ps_beat.h)        */
    ps_hook_t hook;
    uint64_t pushes;
    double pull_sleep;     /* test hook DT_TEST_PS_PULL_SLEEP         */
};

static dt_status_t post_notes(dt_ps_client_t *c)
{
    for (int s = 0; s < c->S; s++)
        DT_CHECK(ps_irecv(c->c, c->W + s, c->note[s], sizeof(ctl_t),
                       PS_TAG_HELD, &c->note_req[s]));
    return DT_OK;
}

static dt_status_t client_alloc(dt_ps_client_t *c)
{
    size_t S = (size_t)c->S;
    c->out = calloc(S, sizeof *c->out);
    c->in = calloc(S, sizeof *c->in);
    c->reqs = calloc(4 * S, sizeof *c->reqs);
    c->owner = calloc(4 * S, sizeof *c->owner);
    c->note = calloc(S, sizeof *c->note);
    c->note_req = calloc(S, sizeof *c->note_req);
    c->heard = calloc(S, sizeof *c->heard);
    return c->out && c->in && c->reqs && c->owner && c->note &&
                   c->note_req && c->heard
               ? DT_OK
               : DT_ERR_NOMEM;
}

dt_status_t dt_ps_client_new(int nworkers, int nservers, size_t nparams,
                             dt_ps_client_t **out)
{
    *out = NULL;
    dt_ps_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return DT_ERR_NOMEM;
    c->c = dt_worker_comm();
    c->W = nworkers;
    c->S = nservers;
    c->n = nparams;
    c->live = ps_live_from_env();
    c->hook = ps_hook_from_env();
    const char *ps = getenv("DT_TEST_PS_PULL_SLEEP");
    c->pull_sleep = ps && *ps ? atof(ps) : 0.0;
    dt_status_t st = c->c ? client_alloc(c) : DT_ERR_INVALID;
    if (st == DT_OK)
        st = post_notes(c);
    if (st != DT_OK) {
        dt_ps_client_free(c);
        return st;
    }
    dt_ps_beat_init(&c->beat, c->live);
    dt_ps_beat_start(&c->beat); /* until its first request */
    *out = c;
    return DT_OK;
}

/* The notices' receives stay posted: nothing comes on them after DONE's
 * answer (a server notifies only a worker it holds), and after a failure
 * the transport is not used again. */
void dt_ps_client_free(dt_ps_client_t *c)
{
    if (!c)
        return;
    dt_ps_beat_free(&c->beat);
    dt_store_close(c->store);
    free(c->sendbuf);
    free(c->fresh);
    free(c->out);
    free(c->in);
    free(c->reqs);
    free(c->owner);
    free(c->note);
    free(c->note_req);
    free(c->heard);
    free(c);
}

double dt_ps_wait_seconds(const dt_ps_client_t *c)
{
    return c ? c->wait : 0.0;
}

/* One request to every server: the control block c->out[s] (type set by
 * the caller), payload from send (its shard) when not NULL, and when recv
 * is not NULL the answer's control block into c->in[s] and the shard into
 * recv. */
static dt_status_t post(dt_ps_client_t *c, const float *send, float *recv,
                        size_t *posted)
{
    size_t k = 0;
    dt_status_t st = DT_OK;
    for (int s = 0; st == DT_OK && s < c->S; s++) {
        size_t lo, hi, k0 = k;
        dt_ps_shard(c->n, c->S, s, &lo, &hi);
        int peer = c->W + s;
        if (recv) {
            st = ps_irecv(c->c, peer, c->in[s], sizeof(ctl_t),
                               PS_TAG_REPLY, &c->reqs[k]);
            if (st == DT_OK)
                st = ps_irecv(c->c, peer, recv + lo,
                                   (hi - lo) * sizeof(float), PS_TAG_REPLY,
                                   &c->reqs[++k]);
            if (st == DT_OK)
                k++;
        }
        if (st == DT_OK)
            st = ps_isend(c->c, peer, c->out[s], sizeof(ctl_t),
                               PS_TAG_CTL, &c->reqs[k]);
        if (st == DT_OK)
            k++;
        if (st == DT_OK && send) {
            st = ps_isend(c->c, peer, send + lo,
                               (hi - lo) * sizeof(float), PS_TAG_DATA,
                               &c->reqs[k]);
            if (st == DT_OK)
                k++;
        }
        for (size_t i = k0; i < k; i++)
            c->owner[i] = s;
    }
    *posted = k;
    return st;
}

/* Take every "held" notice that came (and post the next receive): the
 * server that sent it is alive. */
static dt_status_t take_notes(dt_ps_client_t *c, double now)
{
    for (int s = 0; s < c->S; s++) {
        while (c->note_req[s]) {
            int done = 0;
            dt_status_t st = dt_transport_test(c->c, c->note_req[s], &done);
            if (st != DT_OK)
                c->note_req[s] = NULL; /* freed by the failed test */
            DT_CHECK(st);
            if (!done)
                break;
            c->heard[s] = now;
            DT_CHECK(ps_irecv(c->c, c->W + s, c->note[s], sizeof(ctl_t),
                           PS_TAG_HELD, &c->note_req[s]));
        }
    }
    return DT_OK;
}

/* Finished requests out of the list (test frees them); a server that
 * finished one answered. On a failure the rest stay listed. */
static dt_status_t prune(dt_ps_client_t *c, size_t *k, double now)
{
    size_t j = 0, i = 0;
    dt_status_t st = DT_OK;
    for (; i < *k && st == DT_OK; i++) {
        int done = 0;
        st = dt_transport_test(c->c, c->reqs[i], &done);
        if (st == DT_OK && done)
            c->heard[c->owner[i]] = now;
        if (st != DT_OK || done)
            continue; /* freed */
        c->reqs[j] = c->reqs[i];
        c->owner[j++] = c->owner[i];
    }
    for (; i < *k; i++) {
        c->reqs[j] = c->reqs[i];
        c->owner[j++] = c->owner[i];
    }
    *k = j;
    return st;
}

static dt_status_t server_silent(dt_ps_client_t *c, int s, double quiet)
{
    char who[64];
    dt_error("rank %d: %s went silent: no answer and no \"held\" notice "
             "for %.1f s ([cluster] timeout %g s): hung, stopped or "
             "unreachable", dt_rank(), ps_role(c->W, c->W + s, who, sizeof who),
             quiet, c->live.timeout);
    ps_record_hung(&c->store, c->live.timeout, c->W + s);
    return DT_ERR_TIMEOUT;
}

/* Wait for k posted requests, in slices of a period: a server that owes
 * one of them shows it is alive by answering or by a "held" notice (it
 * holds the answer on purpose: max_staleness, DONE); one silent for the
 * timeout is hung. A dead one fails the transport's wait. */
static dt_status_t await(dt_ps_client_t *c, size_t k, double t0)
{
    int ms = (int)(c->live.period * 1000.0);
    for (int s = 0; s < c->S; s++)
        c->heard[s] = t0;
    for (;;) {
        dt_status_t st = dt_transport_wait(c->c, c->reqs, k, ms);
        if (st != DT_ERR_TIMEOUT)
            return st;
        double now = dt_clock_now();
        st = take_notes(c, now);
        if (st == DT_OK)
            st = prune(c, &k, now);
        if (st != DT_OK || k == 0) {
            if (k) /* the transport failed: this frees them */
                dt_transport_wait(c->c, c->reqs, k, 0);
            return st;
        }
        for (size_t i = 0; i < k; i++)
            if (now - c->heard[c->owner[i]] >= c->live.timeout)
                return server_silent(c, c->owner[i],
                                     now - c->heard[c->owner[i]]);
    }
}

/* Wait for k posted requests (st: how posting went). */
static dt_status_t complete(dt_ps_client_t *c, size_t k, dt_status_t st)
{
    double t0 = dt_clock_now();
    dt_status_t ws = DT_OK;
    if (k && st == DT_OK)
        ws = await(c, k, t0);
    else if (k) /* posting failed: free what was posted */
        ws = dt_transport_wait(c->c, c->reqs, k, -1);
    if (st == DT_OK)
        st = ws;
    c->wait += dt_clock_now() - t0;
    if (st != DT_OK)
        dt_error("rank %d: a request to the parameter servers (ranks %d..%d) "
                 "failed (%s); the message above names the rank",
                 dt_rank(), c->W, c->W + c->S - 1, dt_status_str(st));
    return st;
}

/* Before any request: the beat stops (the requests speak for this worker
 * now), and a push still in flight completes first: every other request
 * waits for it (one request per server at a time), and its parameters
 * land. */
static dt_status_t drain(dt_ps_client_t *c)
{
    dt_ps_beat_stop(&c->beat);
    if (!c->inflight)
        return DT_OK;
    size_t k = c->inflight;
    c->inflight = 0;
    DT_CHECK(complete(c, k, DT_OK));
    memcpy(c->dst, c->fresh, c->n * sizeof(float));
    return DT_OK;
}

static dt_status_t exchange(dt_ps_client_t *c, const float *send, float *recv)
{
    size_t k = 0;
    DT_CHECK(drain(c));
    dt_status_t st = post(c, send, recv, &k);
    return complete(c, k, st);
}

static void set_all(dt_ps_client_t *c, int type, uint64_t a, uint64_t b)
{
    for (int s = 0; s < c->S; s++) {
        memset(c->out[s], 0, sizeof(ctl_t));
        c->out[s][0] = (uint64_t)type;
        c->out[s][1] = a;
        c->out[s][2] = b;
    }
}

dt_status_t dt_ps_init_servers(dt_ps_client_t *c, const float *params,
                               void *const *opt, const size_t *opt_len,
                               uint64_t opt_steps, const dt_ps_pos_t *pos)
{
    size_t k = 0;
    dt_status_t st = DT_OK;
    dt_ps_beat_stop(&c->beat);
    for (int s = 0; s < c->S; s++) {
        memset(c->out[s], 0, sizeof(ctl_t));
        c->out[s][0] = PS_INIT;
        c->out[s][1] = c->n;
        c->out[s][2] = opt && opt[s] ? opt_len[s] : 0;
        c->out[s][3] = pos->global_step;
        c->out[s][4] = pos->epoch;
        c->out[s][5] = pos->step_in_epoch;
        c->out[s][6] = pos->epoch_start;
        c->out[s][7] = c->out[s][2] ? opt_steps : 0;
    }
    /* Control block, shard, optimizer state: 3 per server at most. */
    dt_request_t **r = calloc(3 * (size_t)c->S, sizeof *r);
    if (!r)
        return DT_ERR_NOMEM;
    for (int s = 0; st == DT_OK && s < c->S; s++) {
        size_t lo, hi;
        dt_ps_shard(c->n, c->S, s, &lo, &hi);
        st = ps_isend(c->c, c->W + s, c->out[s], sizeof(ctl_t),
                           PS_TAG_CTL, &r[k]);
        if (st == DT_OK)
            st = ps_isend(c->c, c->W + s, params + lo,
                               (hi - lo) * sizeof(float), PS_TAG_DATA,
                               &r[++k]);
        if (st == DT_OK)
            k++;
        if (st == DT_OK && c->out[s][2]) {
            st = ps_isend(c->c, c->W + s, opt[s], opt_len[s],
                               PS_TAG_DATA, &r[k]);
            if (st == DT_OK)
                k++;
        }
    }
    dt_status_t ws = ps_wait_all(c->c, r, k);
    free(r);
    return st != DT_OK ? st : ws;
}

dt_status_t dt_ps_join(dt_ps_client_t *c, float *params, dt_ps_pos_t *pos)
{
    set_all(c, PS_JOIN, 0, 0);
    DT_CHECK(exchange(c, NULL, params));
    *pos = (dt_ps_pos_t){c->in[0][2], c->in[0][3], c->in[0][4],
                         c->in[0][5]};
    return DT_OK;
}

dt_status_t dt_ps_push_pull(dt_ps_client_t *c, float *params,
                            const float *grads, float lr, uint64_t step)
{
    set_all(c, PS_PUSH, ps_fbits((double)lr), step);
    DT_CHECK(exchange(c, grads, params));
    ps_hook_fire(&c->hook, ++c->pushes);
    return DT_OK;
}

dt_status_t dt_ps_push_begin(dt_ps_client_t *c, float *params,
                             const float *grads, float lr, uint64_t step)
{
    DT_CHECK(drain(c));
    if (!c->sendbuf) {
        c->sendbuf = malloc(c->n * sizeof(float));
        c->fresh = malloc(c->n * sizeof(float));
        if (!c->sendbuf || !c->fresh)
            return DT_ERR_NOMEM;
    }
    memcpy(c->sendbuf, grads, c->n * sizeof(float));
    set_all(c, PS_PUSH, ps_fbits((double)lr), step);
    size_t k = 0;
    dt_status_t st = post(c, c->sendbuf, c->fresh, &k);
    if (st != DT_OK)
        return complete(c, k, st);
    c->inflight = k;
    c->dst = params;
    ps_hook_fire(&c->hook, ++c->pushes);
    return DT_OK;
}

dt_status_t dt_ps_push_end(dt_ps_client_t *c)
{
    return drain(c);
}

/* Rank 0 evaluates alone next: it beats meanwhile. */
dt_status_t dt_ps_pull(dt_ps_client_t *c, float *params)
{
    set_all(c, PS_PULL, 0, 0);
    DT_CHECK(exchange(c, NULL, params));
    dt_ps_beat_start(&c->beat);
    if (c->pull_sleep > 0) { /* test hook: a longer evaluation */
        struct timespec ts = {(time_t)c->pull_sleep,
                              (long)((c->pull_sleep -
                                      (double)(time_t)c->pull_sleep) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return DT_OK;
}

dt_status_t dt_ps_done(dt_ps_client_t *c, float *params)
{
    set_all(c, PS_DONE, 0, 0);
    return exchange(c, NULL, params);
}

/* Rank 0 writes the checkpoint alone next: it beats meanwhile. */
dt_status_t dt_ps_save(dt_ps_client_t *c, float *params, void **opt,
                       size_t *opt_len, uint64_t *steps)
{
    for (int s = 0; s < c->S; s++)
        opt[s] = NULL;
    set_all(c, PS_SAVE, 0, 0);
    DT_CHECK(exchange(c, NULL, params));
    size_t k = 0;
    dt_status_t st = DT_OK;
    for (int s = 0; st == DT_OK && s < c->S; s++) {
        opt_len[s] = (size_t)c->in[s][6];
        if (!(opt[s] = malloc(opt_len[s] ? opt_len[s] : 1)))
            st = DT_ERR_NOMEM;
        else if (opt_len[s]) {
            st = ps_irecv(c->c, c->W + s, opt[s], opt_len[s],
                               PS_TAG_REPLY, &c->reqs[k]);
            if (st == DT_OK)
                k++;
        }
    }
    dt_status_t ws = ps_wait_all(c->c, c->reqs, k);
    *steps = c->in[0][1];
    if (st == DT_OK)
        st = ws;
    if (st != DT_OK)
        for (int s = 0; s < c->S; s++) {
            free(opt[s]);
            opt[s] = NULL;
        }
    else
        dt_ps_beat_start(&c->beat);
    return st;
}

