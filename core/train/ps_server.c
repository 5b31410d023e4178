/* ps_server.c — the parameter servers of [train] mode = async: each
 * holds a shard of the parameters and the optimizer's state, applies the
 * workers' pushes and answers their pulls (protocol: ps.h; design:
 * docs/TRAINING.md, "Asynchronous training"). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
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
#include "plugin/plugin_crash.h"
#include "plugin/plugin_loader.h"
#include "ps_common.h"
#include "opt_call.h"
#include "ps_link.h"

/* ======================================================================
 * Server
 * ====================================================================== */

typedef struct server {
    dt_comm_t *c;
    int W, S, sid, rank;
    int K;                     /* max_staleness; 0: unbounded          */
    int init;
    size_t nparams, lo, n;     /* the shard: [lo, lo + n)              */
    float *params, *grad;
    const dt_plugin_t *plugin;
    const dt_optimizer_ops_t *opt;
    void *opt_state;
    uint64_t steps;            /* optimizer steps applied              */
    dt_ps_pos_t pos;
    ctl_t *ctl;                /* W control blocks being received      */
    dt_request_t **req;
    uint64_t *count;           /* pushes per worker                    */
    int *pending, *held, *done;
    int ndone;
    uint64_t holds, max_lead, pushes;
    long die_after;            /* test hook: SIGKILL itself after N    */
    ps_hook_t hook;
    /* Liveness: when each worker last spoke or was answered (0 until the
     * first request of any worker), each one's beat as last read (-1:
     * unread) and when, the next round of "held" notices. */
    ps_live_t live;
    double *heard, *beat_at, next_notice;
    double looked;             /* when the last sweep began            */
    int64_t *beat;
    int started;
    dt_ps_link_t link;         /* the store, for the beats and records */
} server_t;

static uint64_t lead_of(const server_t *v, int w)
{
    uint64_t min = UINT64_MAX;
    for (int i = 0; i < v->W; i++)
        if (!v->done[i] && v->count[i] < min)
            min = v->count[i];
    return min == UINT64_MAX || v->count[w] < min ? 0 : v->count[w] - min;
}

/* A "held" notice to worker w: the server is alive, w keeps waiting. */
static dt_status_t notify(server_t *v, int w)
{
    ctl_t h = {PS_HELD, (uint64_t)v->sid, (uint64_t)v->pending[w]};
    dt_request_t *r;
    DT_CHECK(ps_isend(v->c, w, h, sizeof h, PS_TAG_HELD, &r));
    return ps_wait_all(v->c, &r, 1);
}

/* To every worker still training but w: the server is busy with w, not
 * hung. */
static dt_status_t notify_others(server_t *v, int w)
{
    for (int i = 0; i < v->W; i++)
        if (i != w && !v->done[i])
            DT_CHECK(notify(v, i));
    return DT_OK;
}

/* Wait for k requests to or from worker w, in slices of a period. A
 * stopped w holds the server in the middle of a transfer (a shard larger
 * than the sockets' buffers): meanwhile the other workers get "held"
 * notices, so that they do not take the server for hung, and w, stuck
 * for [cluster] timeout, is named (ps_record_hung). As for the workers
 * (ps_client.c, await), a transfer counts as heard when it completes. */
static dt_status_t wait_on(server_t *v, int w, dt_request_t **r, size_t k,
                           const char *what)
{
    int ms = (int)(v->live.period * 1000.0);
    double t0 = dt_clock_now();
    for (;;) {
        dt_status_t st = k ? dt_transport_wait(v->c, r, k, ms) : DT_OK;
        if (st != DT_ERR_TIMEOUT)
            return st;
        double quiet = dt_clock_now() - t0;
        if (quiet >= v->live.timeout) {
            dt_error("parameter server %d (rank %d): worker %d (rank %d) "
                     "went silent in the middle of a transfer: it %s in "
                     "%.1f s ([cluster] timeout %g s): hung, stopped or "
                     "unreachable", v->sid, v->rank, w, w, what, quiet,
                     v->live.timeout);
            ps_record_hung(&v->link.store, v->live.timeout, w);
            return DT_ERR_TIMEOUT;
        }
        DT_CHECK(notify_others(v, w));
    }
}

static dt_status_t reply(server_t *v, int w, int type, const void *extra,
                         size_t extra_len)
{
    ctl_t h = {(uint64_t)type, v->steps, v->pos.epoch,
               v->pos.step_in_epoch, v->pos.epoch_start,
               v->pos.global_step, extra_len, 0};
    dt_request_t *r[3];
    size_t k = 0;
    DT_CHECK(ps_isend(v->c, w, h, sizeof h, PS_TAG_REPLY, &r[k++]));
    dt_status_t st = ps_isend(v->c, w, v->params, v->n * sizeof(float),
                                   PS_TAG_REPLY, &r[k]);
    if (st == DT_OK)
        k++;
    if (st == DT_OK && extra_len) {
        st = ps_isend(v->c, w, extra, extra_len, PS_TAG_REPLY, &r[k]);
        if (st == DT_OK)
            k++;
    }
    dt_status_t ws = wait_on(v, w, r, k, "did not take its answer");
    v->heard[w] = dt_clock_now(); /* its silence starts with the answer */
    return st != DT_OK ? st : ws;
}

/* Answer every held request whose worker is within the bound now. */
static dt_status_t answer_pending(server_t *v)
{
    if (!v->init)
        return DT_OK;
    for (int w = 0; w < v->W; w++) {
        if (!v->pending[w])
            continue;
        if (v->pending[w] == PS_DONE) {
            /* Answered once every worker is done: nobody leaves early
             * (dt_finalize's barrier is bounded by the job timeout). */
            if (v->ndone < v->W)
                continue;
            v->pending[w] = 0;
            DT_CHECK(reply(v, w, PS_DONE, NULL, 0));
            continue;
        }
        uint64_t lead = lead_of(v, w);
        if (v->K > 0 && lead > (uint64_t)v->K) {
            if (!v->held[w]) {
                v->held[w] = 1;
                v->holds++;
                dt_debug("parameter server %d: worker %d held at push %llu "
                         "(%llu ahead of the slowest, max_staleness %d)",
                         v->sid, w, (unsigned long long)v->count[w],
                         (unsigned long long)lead, v->K);
            }
            continue;
        }
        if (lead > v->max_lead)
            v->max_lead = lead;
        int type = v->pending[w];
        v->pending[w] = 0;
        v->held[w] = 0;
        DT_CHECK(reply(v, w, type, NULL, 0));
    }
    return DT_OK;
}

static dt_status_t recv_from(server_t *v, int w, void *buf, size_t len)
{
    dt_request_t *r;
    DT_CHECK(ps_irecv(v->c, w, buf, len, PS_TAG_DATA, &r));
    return wait_on(v, w, &r, 1, "did not send the rest of its request");
}

static dt_status_t create_opt(server_t *v, dt_config_t *cfg)
{
    const char *name = "sgd";
    char section[160];
    DT_CHECK(dt_config_get_string(cfg, "train", "optimizer", &name));
    DT_CHECK(dt_plugin_load(DT_KIND_OPTIMIZER, name, &v->plugin, NULL));
    v->opt = v->plugin->ops;
    snprintf(section, sizeof section, "optimizer.%s", name);
    if (v->plugin->keys) {
        DT_CHECK(dt_config_add_schema(cfg, section, v->plugin->keys));
        DT_CHECK(dt_config_load_env(cfg, environ));
    }
    dt_plugin_call_t was = dt_plugin_call_begin(v->plugin, "create");
    dt_status_t st = v->opt->create(cfg, v->n ? v->n : 1, DT_MEM_HOST,
                                    &v->opt_state);
    dt_plugin_call_end(was);
    if (st != DT_OK) {
        v->opt_state = NULL;
        dt_error("parameter server %d: optimizer '%s' could not be created "
                 "for %zu parameters (%s)", v->sid, name, v->n,
                 dt_status_str(st));
    }
    return st;
}

static dt_status_t on_init(server_t *v, dt_config_t *cfg, int w,
                           const ctl_t h)
{
    if (w != 0 || v->init) {
        dt_error("parameter server %d: unexpected INIT from rank %d", v->sid,
                 w);
        return DT_ERR_INTERNAL;
    }
    v->nparams = (size_t)h[1];
    size_t hi;
    dt_ps_shard(v->nparams, v->S, v->sid, &v->lo, &hi);
    v->n = hi - v->lo;
    v->params = malloc((v->n ? v->n : 1) * sizeof(float));
    v->grad = malloc((v->n ? v->n : 1) * sizeof(float));
    if (!v->params || !v->grad)
        return DT_ERR_NOMEM;
    DT_CHECK(recv_from(v, w, v->params, v->n * sizeof(float)));
    DT_CHECK(create_opt(v, cfg));
    size_t opt_len = (size_t)h[2];
    if (opt_len) {
        void *buf = malloc(opt_len);
        if (!buf)
            return DT_ERR_NOMEM;
        dt_status_t st = recv_from(v, w, buf, opt_len);
        size_t want = dt_opt_state_size(v->plugin, v->opt, v->opt_state);
        if (st == DT_OK && want != opt_len) {
            dt_error("parameter server %d: the checkpoint's optimizer state "
                     "of this shard is %zu bytes, '%s' expects %zu", v->sid,
                     opt_len, v->plugin->name, want);
            st = DT_ERR_INVALID;
        }
        if (st == DT_OK)
            st = dt_opt_load(v->plugin, v->opt, v->opt_state, buf, opt_len);
        free(buf);
        DT_CHECK(st);
    }
    /* The optimizer's step number goes on from the state it got (all
     * workers' pushes), or from 0 for a fresh one: rank 0's own step made
     * Adam's bias correction that of a later step. */
    v->steps = opt_len ? h[7] : 0;
    v->pos = (dt_ps_pos_t){h[4], h[5], h[6], h[3]};
    v->init = 1;
    dt_info("parameter server %d (rank %d): parameters [%zu, %zu) of %zu, "
            "optimizer %s %s %llu, max_staleness %d%s", v->sid, v->rank,
            v->lo, v->lo + v->n, v->nparams, v->plugin->name,
            opt_len ? "restored at step" : "fresh from step",
            (unsigned long long)v->steps, v->K,
            v->K ? "" : " (unbounded)");
    return DT_OK;
}

static dt_status_t handle(server_t *v, dt_config_t *cfg, int w)
{
    uint64_t *h = v->ctl[w];
    switch ((int)h[0]) {
    case PS_INIT:
        DT_CHECK(on_init(v, cfg, w, h));
        return answer_pending(v);
    case PS_PUSH: {
        if (!v->init) {
            dt_error("parameter server %d: a push from worker %d before "
                     "INIT", v->sid, w);
            return DT_ERR_INTERNAL;
        }
        DT_CHECK(recv_from(v, w, v->grad, v->n * sizeof(float)));
        float lr = (float)ps_bitsf(h[1]);
        dt_plugin_call_t was = dt_plugin_call_begin(v->plugin, "step");
        dt_status_t st = v->opt->step(v->opt_state, v->params, v->grad, lr,
                                      v->steps + 1, NULL);
        dt_plugin_call_end(was);
        if (st != DT_OK) {
            dt_error("parameter server %d: optimizer '%s' failed at step "
                     "%llu (%s)", v->sid, v->plugin->name,
                     (unsigned long long)v->steps + 1, dt_status_str(st));
            return st;
        }
        v->steps++;
        v->pushes++;
        v->count[w]++;
        if (v->die_after > 0 && v->pushes >= (uint64_t)v->die_after) {
            dt_warn("parameter server %d: test hook DT_TEST_PS_DIE_AFTER=%ld: "
                    "killing myself", v->sid, v->die_after);
            raise(SIGKILL);
        }
        ps_hook_fire(&v->hook, v->pushes);
        v->pending[w] = PS_PUSH;
        return answer_pending(v);
    }
    case PS_JOIN:
    case PS_PULL:
        v->pending[w] = (int)h[0];
        return answer_pending(v);
    case PS_SAVE: {
        if (!v->init)
            return DT_ERR_INTERNAL;
        size_t len = dt_opt_state_size(v->plugin, v->opt, v->opt_state);
        void *buf = malloc(len ? len : 1);
        if (!buf)
            return DT_ERR_NOMEM;
        dt_status_t st = dt_opt_save(v->plugin, v->opt, v->opt_state, buf, len);
        if (st == DT_OK)
            st = reply(v, w, PS_SAVE, buf, len);
        free(buf);
        return st;
    }
    case PS_DONE:
        v->done[w] = 1;
        v->ndone++;
        v->pending[w] = PS_DONE;
        return answer_pending(v);
    default:
        dt_error("parameter server %d: unknown request %llu from rank %d",
                 v->sid, (unsigned long long)h[0], w);
        return DT_ERR_INTERNAL;
    }
}

/* A "held" notice to every worker whose request waits here: it keeps
 * waiting while they come. */
static dt_status_t send_notices(server_t *v)
{
    for (int w = 0; w < v->W; w++)
        if (v->pending[w])
            DT_CHECK(notify(v, w));
    return DT_OK;
}

/* How long a look at a beat waits for the store: half the timeout, at
 * most DT_STORE_FAILURE_WAIT_S. The server serves nobody meanwhile, and
 * its workers take a server silent for the timeout for hung. */
static double beat_wait(const server_t *v)
{
    return ps_failure_wait(v->live.timeout / 2);
}

/* Has worker w beaten its counter in the store since the last look (at
 * most one look per period)? Only a worker working alone beats. A store
 * that did not answer a look, or could not be reached, is left alone for
 * a period (then tried again, ps_link.h): one silent store costs a sweep
 * one wait, not one per quiet worker. */
static int beat_moved(server_t *v, int w, double now)
{
    if (now - v->beat_at[w] < v->live.period)
        return 0;
    if (dt_ps_link_resting(&v->link, now, v->live.period))
        return 0;
    v->beat_at[w] = now;
    char key[32];
    int64_t n = 0;
    snprintf(key, sizeof key, "ps/beat/%d", w);
    if (dt_ps_link_look(&v->link, key, beat_wait(v), &n) != DT_OK)
        return 0;
    int moved = v->beat[w] >= 0 && n != v->beat[w];
    v->beat[w] = n;
    return moved;
}

static dt_status_t worker_silent(server_t *v, int w, double quiet)
{
    dt_error("parameter server %d (rank %d): worker %d (rank %d) went "
             "silent: nothing from it for %.1f s ([cluster] timeout %g s) "
             "while it was still training: hung, stopped or unreachable",
             v->sid, v->rank, w, w, quiet, v->live.timeout);
    ps_record_hung(&v->link.store, v->live.timeout, w);
    return DT_ERR_TIMEOUT;
}

/* A worker neither waiting here, nor done, nor beating, that sent nothing
 * for the timeout is hung. The bound is two periods longer than a
 * worker's for a server: a worker held by a stopped server goes quiet
 * here too, and the worker should be the one to name that server. */
static dt_status_t watch(server_t *v)
{
    double now = dt_clock_now();
    if (now >= v->next_notice) {
        DT_CHECK(send_notices(v));
        v->next_notice = now + v->live.period;
    }
    for (int w = 0; v->started && w < v->W; w++) {
        if (v->done[w] || v->pending[w])
            continue;
        /* silent until the sweep looked (a long answer in it delays the
         * look at the others, not their requests) */
        double quiet = v->looked - v->heard[w];
        if (quiet < v->live.period)
            continue;
        if (beat_moved(v, w, now))
            v->heard[w] = now;
        else if (quiet >= v->live.timeout + 2 * v->live.period)
            return worker_silent(v, w, quiet);
    }
    return DT_OK;
}

/* The transport failed under a receive: every later test fails too, so
 * the worker tested is not the one lost. The job's failure record names
 * it (the transport wrote it; dt/store.h). */
static void say_lost(server_t *v, dt_status_t st)
{
    int rank = -1, det = -1;
    char how[DT_CULPRIT_HOW_MAX], who[64];
    /* One try, unless the beats' looks found the store unreachable. */
    if (!v->link.store && !v->link.silent)
        v->link.store = ps_store_open(ps_failure_wait(v->live.timeout));
    char finder[32];
    if (v->link.store &&
        dt_store_culprit_get(v->link.store, 1.0, &rank, &det, how) ==
            DT_OK &&
        rank >= 0) {
        if (det == v->rank)
            snprintf(finder, sizeof finder, "this rank");
        else
            snprintf(finder, sizeof finder, "rank %d", det);
        dt_error("parameter server %d (rank %d): lost %s: %s, as %s found "
                 "(%s)", v->sid, v->rank,
                 ps_role(v->W, rank, who, sizeof who), how, finder,
                 dt_status_str(st));
    }
    else
        dt_error("parameter server %d (rank %d): lost a worker (%s); the "
                 "transport's message above names it", v->sid, v->rank,
                 dt_status_str(st));
}

/* Before the first request of any worker nobody is late: the clocks of
 * them all start then. */
static void heard_from(server_t *v, int w)
{
    double now = dt_clock_now();
    for (int i = 0; !v->started && i < v->W; i++)
        v->heard[i] = now;
    v->started = 1;
    v->heard[w] = now;
}

/* One look at every worker's request: each that came is handled and the
 * next one posted. */
static dt_status_t sweep(server_t *v, dt_config_t *cfg, int *progress)
{
    v->looked = dt_clock_now();
    for (int w = 0; w < v->W; w++) {
        if (!v->req[w])
            continue;
        int done = 0;
        dt_status_t st = dt_transport_test(v->c, v->req[w], &done);
        if (st != DT_OK) {
            v->req[w] = NULL; /* freed by the failed test */
            say_lost(v, st);
            return st;
        }
        if (!done)
            continue;
        v->req[w] = NULL;
        *progress = 1;
        heard_from(v, w);
        DT_CHECK(handle(v, cfg, w));
        if (!v->done[w])
            DT_CHECK(ps_irecv(v->c, w, v->ctl[w], sizeof(ctl_t), PS_TAG_CTL,
                           &v->req[w]));
    }
    return DT_OK;
}

static dt_status_t server_alloc(server_t *v)
{
    size_t W = (size_t)v->W;
    v->ctl = calloc(W, sizeof *v->ctl);
    v->req = calloc(W, sizeof *v->req);
    v->count = calloc(W, sizeof *v->count);
    v->pending = calloc(W, sizeof *v->pending);
    v->held = calloc(W, sizeof *v->held);
    v->done = calloc(W, sizeof *v->done);
    v->heard = calloc(W, sizeof *v->heard);
    v->beat_at = calloc(W, sizeof *v->beat_at);
    v->beat = malloc(W * sizeof *v->beat);
    if (!v->ctl || !v->req || !v->count || !v->pending || !v->held ||
        !v->done || !v->heard || !v->beat_at || !v->beat)
        return DT_ERR_NOMEM;
    for (size_t w = 0; w < W; w++)
        v->beat[w] = -1;
    return DT_OK;
}

static void server_free(server_t *v)
{
    if (v->opt_state)
        dt_opt_destroy(v->plugin, v->opt, v->opt_state);
    dt_ps_link_close(&v->link);
    free(v->params);
    free(v->grad);
    free(v->ctl);
    free(v->req);
    free(v->count);
    free(v->pending);
    free(v->held);
    free(v->done);
    free(v->heard);
    free(v->beat_at);
    free(v->beat);
}

static dt_status_t serve_loop(server_t *v, dt_config_t *cfg)
{
    dt_status_t st = DT_OK;
    for (int w = 0; st == DT_OK && w < v->W; w++)
        st = ps_irecv(v->c, w, v->ctl[w], sizeof(ctl_t), PS_TAG_CTL,
                   &v->req[w]);
    int idle = 0;
    while (st == DT_OK && v->ndone < v->W) {
        int progress = 0;
        st = sweep(v, cfg, &progress);
        if (st == DT_OK)
            st = watch(v);
        if (progress) {
            idle = 0;
        } else if (++idle > 64) {
            /* Polls yield the CPU (ranks may outnumber cores): 50 us
             * while requests keep coming, 1 ms once idle for a while. */
            struct timespec ts = {0, idle > 2000 ? 1000000 : 50000};
            nanosleep(&ts, NULL);
        }
    }
    return st;
}

dt_status_t dt_ps_serve(dt_config_t *cfg, int nworkers, int nservers)
{
    server_t v;
    memset(&v, 0, sizeof v);
    v.c = dt_worker_comm();
    v.W = nworkers;
    v.S = nservers;
    v.rank = dt_rank();
    v.sid = v.rank - nworkers;
    v.live = ps_live_from(cfg);
    v.hook = ps_hook_from_env();
    long long k = 0;
    DT_CHECK(dt_config_get_int(cfg, "train", "max_staleness", &k));
    v.K = (int)k;
    /* Test hook: die after n pushes, in the first attempt only (so that
     * a job restarted by dtctl --max-restarts can finish). */
    const char *die = getenv("DT_TEST_PS_DIE_AFTER");
    const char *attempt = getenv("DT_RESTART_COUNT");
    v.die_after = die && (!attempt || atoi(attempt) == 0) ? atol(die) : 0;
    /* Test hook: the stop dtctl sends once a worker died does not end a
     * server before it has said which worker it lost (its SIGKILL after
     * kill_grace still does). */
    if (getenv("DT_TEST_PS_IGNORE_TERM"))
        signal(SIGTERM, SIG_IGN);
    if (!v.c) {
        dt_error("parameter server: no transport (a job of one?)");
        return DT_ERR_INVALID;
    }
    dt_status_t st = server_alloc(&v);
    if (st == DT_OK)
        st = serve_loop(&v, cfg);
    if (st == DT_OK)
        dt_info("parameter server %d (rank %d): %llu pushes applied from %d "
                "worker%s (optimizer step %llu); max_staleness %d: %llu "
                "replies held, largest lead answered %llu", v.sid, v.rank,
                (unsigned long long)v.pushes, v.W, v.W == 1 ? "" : "s",
                (unsigned long long)v.steps, v.K,
                (unsigned long long)v.holds,
                (unsigned long long)v.max_lead);
    server_free(&v);
    return st;
}

