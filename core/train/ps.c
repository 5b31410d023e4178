/* ps.c — parameter servers and their clients for [train] mode = async
 * (protocol: ps.h; design: docs/TRAINING.md, "Asynchronous training"). */
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
#include "plugin/plugin_loader.h"
#include "ps.h"

extern char **environ;

enum { PS_TAG_CTL = 0x50530001, PS_TAG_DATA, PS_TAG_REPLY, PS_TAG_HELD };
enum { PS_INIT = 1, PS_JOIN, PS_PUSH, PS_PULL, PS_SAVE, PS_DONE, PS_HELD };
#define PS_WORDS 8 /* u64 words of a control block */

typedef uint64_t ctl_t[PS_WORDS];

void dt_ps_shard(size_t n, int nservers, int s, size_t *lo, size_t *hi)
{
    *lo = (size_t)((unsigned __int128)n * (unsigned)s / (unsigned)nservers);
    *hi = (size_t)((unsigned __int128)n * (unsigned)(s + 1) /
                   (unsigned)nservers);
}

static uint64_t fbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bitsf(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static dt_status_t isend(dt_comm_t *c, int peer, const void *buf, size_t len,
                         int tag, dt_request_t **req)
{
    return c->ops->isend(c->ctx, peer, buf, len, DT_MEM_HOST, tag, req);
}

static dt_status_t irecv(dt_comm_t *c, int peer, void *buf, size_t len,
                         int tag, dt_request_t **req)
{
    return c->ops->irecv(c->ctx, peer, buf, len, DT_MEM_HOST, tag, req);
}

static dt_status_t wait_all(dt_comm_t *c, dt_request_t **r, size_t n)
{
    return n ? c->ops->wait(c->ctx, r, n, -1) : DT_OK;
}

/* ======================================================================
 * Liveness. A held answer is not silence: a server sends a worker whose
 * request it holds (max_staleness, DONE, a JOIN before INIT) a "held"
 * notice every period, and a worker waits for it as long as they come.
 * A worker working alone (rank 0 evaluating or writing a checkpoint, any
 * worker before its first request) beats a counter in the job's store
 * meanwhile. A worker or server silent for [cluster] timeout otherwise is
 * hung: the rank that finds it says so, records it in the store (dtctl
 * names it) and fails.
 * ====================================================================== */

typedef struct ps_live {
    double timeout; /* [cluster] timeout: silence this long is a hang   */
    double period;  /* notices and checks: a quarter of it, 10 ms..1 s  */
} ps_live_t;

static ps_live_t live_from(const dt_config_t *cfg)
{
    double t = 60.0;
    if (dt_config_get_duration(cfg, "cluster", "timeout", &t) != DT_OK ||
        !(t > 0))
        t = 60.0;
    double p = t / 4;
    return (ps_live_t){t, p < 0.01 ? 0.01 : p > 1.0 ? 1.0 : p};
}

/* A client is made without the job's config: read it the way dt_init
 * does, from the environment dtctl gave every rank. */
static ps_live_t live_from_env(void)
{
    dt_config_t *cfg = NULL;
    ps_live_t l = {60.0, 1.0};
    if (dt_config_new(&cfg) == DT_OK &&
        dt_config_load_env(cfg, environ) == DT_OK)
        l = live_from(cfg);
    dt_config_free(cfg);
    return l;
}

/* A connection of this thread's own to the job's store (dt_init's is not
 * shared); NULL when there is none to reach. */
static dt_store_t *store_open(double timeout)
{
    const char *rdv = getenv("DT_RENDEZVOUS");
    const char *hex = getenv("DT_JOB_TOKEN");
    uint8_t token[DT_TOKEN_BYTES];
    dt_store_t *s = NULL;
    if (!rdv || !*rdv || !hex || dt_token_from_hex(hex, token) != DT_OK)
        return NULL;
    if (dt_store_connect(rdv, token, timeout, &s) != DT_OK)
        s = NULL;
    explicit_bzero(token, sizeof token);
    return s;
}

/* The job's failure record (dt/store.h): rank hung, as this rank found;
 * the first record wins, so every rank and dtctl name the same one. */
static void record_hung(dt_store_t **s, double timeout, int rank)
{
    if (!*s)
        *s = store_open(timeout);
    if (*s)
        dt_store_culprit_record(*s, rank, dt_rank(), "hung");
}

/* "worker 1 (rank 1)", "parameter server 0 (rank 3)". */
static const char *role(int W, int rank, char *buf, size_t len)
{
    if (rank < W)
        snprintf(buf, len, "worker %d (rank %d)", rank, rank);
    else
        snprintf(buf, len, "parameter server %d (rank %d)", rank - W, rank);
    return buf;
}

/* Test hooks (tests/train_async.sh): DT_TEST_PS_SIGNAL_RANK=r makes rank
 * r, after its DT_TEST_PS_SIGNAL_AFTER-th push (default 20; a server: the
 * push it applied), raise DT_TEST_PS_SIGNAL: STOP (the default) or KILL,
 * or with EXIT leave with code 3: a hung, killed or failed worker or
 * server on cue. */
typedef struct ps_hook {
    long after; /* 0: off */
    int sig;    /* 0: exit */
} ps_hook_t;

static ps_hook_t hook_from_env(void)
{
    const char *r = getenv("DT_TEST_PS_SIGNAL_RANK");
    const char *a = getenv("DT_TEST_PS_SIGNAL_AFTER");
    const char *s = getenv("DT_TEST_PS_SIGNAL");
    ps_hook_t h = {0, SIGSTOP};
    if (!r || !*r || atoi(r) != dt_rank())
        return h;
    h.after = a && *a ? atol(a) : 20;
    if (s && strcmp(s, "KILL") == 0)
        h.sig = SIGKILL;
    else if (s && strcmp(s, "EXIT") == 0)
        h.sig = 0;
    return h;
}

static void hook_fire(const ps_hook_t *h, uint64_t pushes)
{
    if (h->after <= 0 || pushes != (uint64_t)h->after)
        return;
    dt_warn("rank %d (pid %ld): test hook DT_TEST_PS_SIGNAL_RANK: %s after "
            "%ld pushes", dt_rank(), (long)getpid(),
            h->sig == SIGKILL ? "SIGKILL" : h->sig ? "SIGSTOP" : "exit 3",
            h->after);
    if (!h->sig)
        _exit(3);
    raise(h->sig);
}

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
    dt_store_t *store;         /* opened when first needed             */
    int store_tried;
} server_t;

static uint64_t lead_of(const server_t *v, int w)
{
    uint64_t min = UINT64_MAX;
    for (int i = 0; i < v->W; i++)
        if (!v->done[i] && v->count[i] < min)
            min = v->count[i];
    return min == UINT64_MAX || v->count[w] < min ? 0 : v->count[w] - min;
}

static dt_status_t reply(server_t *v, int w, int type, const void *extra,
                         size_t extra_len)
{
    ctl_t h = {(uint64_t)type, v->steps, v->pos.epoch,
               v->pos.step_in_epoch, v->pos.epoch_start,
               v->pos.global_step, extra_len, 0};
    dt_request_t *r[3];
    size_t k = 0;
    DT_CHECK(isend(v->c, w, h, sizeof h, PS_TAG_REPLY, &r[k++]));
    dt_status_t st = isend(v->c, w, v->params, v->n * sizeof(float),
                                   PS_TAG_REPLY, &r[k]);
    if (st == DT_OK)
        k++;
    if (st == DT_OK && extra_len) {
        st = isend(v->c, w, extra, extra_len, PS_TAG_REPLY, &r[k]);
        if (st == DT_OK)
            k++;
    }
    dt_status_t ws = wait_all(v->c, r, k);
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
    DT_CHECK(irecv(v->c, w, buf, len, PS_TAG_DATA, &r));
    return wait_all(v->c, &r, 1);
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
    dt_status_t st = v->opt->create(cfg, v->n ? v->n : 1, DT_MEM_HOST,
                                    &v->opt_state);
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
        size_t want = v->opt->state_size(v->opt_state);
        if (st == DT_OK && want != opt_len) {
            dt_error("parameter server %d: the checkpoint's optimizer state "
                     "of this shard is %zu bytes, '%s' expects %zu", v->sid,
                     opt_len, v->plugin->name, want);
            st = DT_ERR_INVALID;
        }
        if (st == DT_OK)
            st = v->opt->load(v->opt_state, buf, opt_len);
        free(buf);
        DT_CHECK(st);
    }
    v->steps = h[3];
    v->pos = (dt_ps_pos_t){h[4], h[5], h[6], h[3]};
    v->init = 1;
    dt_info("parameter server %d (rank %d): parameters [%zu, %zu) of %zu, "
            "optimizer %s, max_staleness %d%s", v->sid, v->rank, v->lo,
            v->lo + v->n, v->nparams, v->plugin->name, v->K,
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
        float lr = (float)bitsf(h[1]);
        dt_status_t st = v->opt->step(v->opt_state, v->params, v->grad, lr,
                                      v->steps + 1, NULL);
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
        hook_fire(&v->hook, v->pushes);
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
        size_t len = v->opt->state_size(v->opt_state);
        void *buf = malloc(len ? len : 1);
        if (!buf)
            return DT_ERR_NOMEM;
        dt_status_t st = v->opt->save(v->opt_state, buf, len);
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
    for (int w = 0; w < v->W; w++) {
        if (!v->pending[w])
            continue;
        ctl_t h = {PS_HELD, (uint64_t)v->sid, (uint64_t)v->pending[w]};
        dt_request_t *r;
        DT_CHECK(isend(v->c, w, h, sizeof h, PS_TAG_HELD, &r));
        DT_CHECK(wait_all(v->c, &r, 1));
    }
    return DT_OK;
}

/* Has worker w beaten its counter in the store since the last look (at
 * most one look per period)? Only a worker working alone beats. */
static int beat_moved(server_t *v, int w, double now)
{
    if (now - v->beat_at[w] < v->live.period)
        return 0;
    v->beat_at[w] = now;
    if (!v->store && !v->store_tried) {
        v->store_tried = 1;
        v->store = store_open(v->live.timeout);
    }
    char key[32];
    int64_t n = 0;
    snprintf(key, sizeof key, "ps/beat/%d", w);
    if (!v->store || dt_store_add(v->store, key, 0, &n) != DT_OK)
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
    record_hung(&v->store, v->live.timeout, w);
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
    if (!v->store && !v->store_tried) {
        v->store_tried = 1;
        v->store = store_open(v->live.timeout);
    }
    if (v->store &&
        dt_store_culprit_get(v->store, 1.0, &rank, &det, how) == DT_OK &&
        rank >= 0)
        dt_error("parameter server %d (rank %d): lost %s: %s, as rank %d "
                 "found (%s)", v->sid, v->rank,
                 role(v->W, rank, who, sizeof who), how, det,
                 dt_status_str(st));
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
        dt_status_t st = v->c->ops->test(v->c->ctx, v->req[w], &done);
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
            DT_CHECK(irecv(v->c, w, v->ctl[w], sizeof(ctl_t), PS_TAG_CTL,
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
        v->opt->destroy(v->opt_state);
    dt_store_close(v->store);
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
        st = irecv(v->c, w, v->ctl[w], sizeof(ctl_t), PS_TAG_CTL,
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
    v.live = live_from(cfg);
    v.hook = hook_from_env();
    long long k = 0;
    DT_CHECK(dt_config_get_int(cfg, "train", "max_staleness", &k));
    v.K = (int)k;
    /* Test hook: die after n pushes, in the first attempt only (so that
     * a job restarted by dtctl --max-restarts can finish). */
    const char *die = getenv("DT_TEST_PS_DIE_AFTER");
    const char *attempt = getenv("DT_RESTART_COUNT");
    v.die_after = die && (!attempt || atoi(attempt) == 0) ? atol(die) : 0;
    if (!v.c) {
        dt_error("parameter server: no transport (a job of one?)");
        return DT_ERR_INVALID;
    }
    dt_status_t st = server_alloc(&v);
    if (st == DT_OK)
        st = serve_loop(&v, cfg);
    if (st == DT_OK)
        dt_info("parameter server %d (rank %d): %llu pushes applied from %d "
                "worker%s; max_staleness %d: %llu replies held, largest lead "
                "answered %llu", v.sid, v.rank,
                (unsigned long long)v.pushes, v.W, v.W == 1 ? "" : "s", v.K,
                (unsigned long long)v.holds,
                (unsigned long long)v.max_lead);
    server_free(&v);
    return st;
}

/* ======================================================================
 * Client (workers)
 * ====================================================================== */

/* A worker working alone beats "ps/beat/RANK" in the job's store from a
 * thread of its own, every half period, until its next request. */
typedef struct ps_beat {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int on, stop, ready;
    ps_live_t live;
    dt_store_t *store;     /* the thread's connection (tried once)     */
    int tried;
    char key[32];
} ps_beat_t;

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
    ps_beat_t beat;
    ps_hook_t hook;
    uint64_t pushes;
    double pull_sleep;     /* test hook DT_TEST_PS_PULL_SLEEP         */
};

static void beat_once(ps_beat_t *b)
{
    if (!b->store && !b->tried) {
        b->tried = 1;
        if (!(b->store = store_open(b->live.timeout)))
            dt_debug("rank %d: no store for the parameter servers' beat: a "
                     "long evaluation may count as silence", dt_rank());
    }
    int64_t n;
    if (b->store)
        dt_store_add(b->store, b->key, 1, &n);
}

static void *beat_main(void *arg)
{
    ps_beat_t *b = arg;
    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        pthread_mutex_unlock(&b->mu);
        beat_once(b);
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

static int beat_init(ps_beat_t *b, ps_live_t live)
{
    pthread_condattr_t ca;
    b->live = live;
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

/* This worker goes on alone for a while (its setup, an evaluation, a
 * checkpoint): the servers see its beat instead of its requests. */
static void beat_start(dt_ps_client_t *c)
{
    ps_beat_t *b = &c->beat;
    if (!b->ready || b->on)
        return;
    b->stop = 0;
    b->on = pthread_create(&b->thread, NULL, beat_main, b) == 0;
}

static void beat_stop(dt_ps_client_t *c)
{
    ps_beat_t *b = &c->beat;
    if (!b->on)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    b->on = 0;
}

static dt_status_t post_notes(dt_ps_client_t *c)
{
    for (int s = 0; s < c->S; s++)
        DT_CHECK(irecv(c->c, c->W + s, c->note[s], sizeof(ctl_t),
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
    c->live = live_from_env();
    c->hook = hook_from_env();
    const char *ps = getenv("DT_TEST_PS_PULL_SLEEP");
    c->pull_sleep = ps && *ps ? atof(ps) : 0.0;
    dt_status_t st = c->c ? client_alloc(c) : DT_ERR_INVALID;
    if (st == DT_OK)
        st = post_notes(c);
    if (st != DT_OK) {
        dt_ps_client_free(c);
        return st;
    }
    beat_init(&c->beat, c->live);
    beat_start(c); /* until its first request */
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
    beat_stop(c);
    if (c->beat.ready) {
        pthread_mutex_destroy(&c->beat.mu);
        pthread_cond_destroy(&c->beat.cv);
    }
    dt_store_close(c->beat.store);
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
            st = irecv(c->c, peer, c->in[s], sizeof(ctl_t),
                               PS_TAG_REPLY, &c->reqs[k]);
            if (st == DT_OK)
                st = irecv(c->c, peer, recv + lo,
                                   (hi - lo) * sizeof(float), PS_TAG_REPLY,
                                   &c->reqs[++k]);
            if (st == DT_OK)
                k++;
        }
        if (st == DT_OK)
            st = isend(c->c, peer, c->out[s], sizeof(ctl_t),
                               PS_TAG_CTL, &c->reqs[k]);
        if (st == DT_OK)
            k++;
        if (st == DT_OK && send) {
            st = isend(c->c, peer, send + lo,
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
            dt_status_t st = c->c->ops->test(c->c->ctx, c->note_req[s],
                                             &done);
            if (st != DT_OK)
                c->note_req[s] = NULL; /* freed by the failed test */
            DT_CHECK(st);
            if (!done)
                break;
            c->heard[s] = now;
            DT_CHECK(irecv(c->c, c->W + s, c->note[s], sizeof(ctl_t),
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
        st = c->c->ops->test(c->c->ctx, c->reqs[i], &done);
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
             "unreachable", dt_rank(), role(c->W, c->W + s, who, sizeof who),
             quiet, c->live.timeout);
    record_hung(&c->store, c->live.timeout, c->W + s);
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
        dt_status_t st = c->c->ops->wait(c->c->ctx, c->reqs, k, ms);
        if (st != DT_ERR_TIMEOUT)
            return st;
        double now = dt_clock_now();
        st = take_notes(c, now);
        if (st == DT_OK)
            st = prune(c, &k, now);
        if (st != DT_OK || k == 0) {
            if (k) /* the transport failed: this frees them */
                c->c->ops->wait(c->c->ctx, c->reqs, k, 0);
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
        ws = c->c->ops->wait(c->c->ctx, c->reqs, k, -1);
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
    beat_stop(c);
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
                               const dt_ps_pos_t *pos)
{
    size_t k = 0;
    dt_status_t st = DT_OK;
    beat_stop(c);
    for (int s = 0; s < c->S; s++) {
        memset(c->out[s], 0, sizeof(ctl_t));
        c->out[s][0] = PS_INIT;
        c->out[s][1] = c->n;
        c->out[s][2] = opt && opt[s] ? opt_len[s] : 0;
        c->out[s][3] = pos->global_step;
        c->out[s][4] = pos->epoch;
        c->out[s][5] = pos->step_in_epoch;
        c->out[s][6] = pos->epoch_start;
    }
    /* Control block, shard, optimizer state: 3 per server at most. */
    dt_request_t **r = calloc(3 * (size_t)c->S, sizeof *r);
    if (!r)
        return DT_ERR_NOMEM;
    for (int s = 0; st == DT_OK && s < c->S; s++) {
        size_t lo, hi;
        dt_ps_shard(c->n, c->S, s, &lo, &hi);
        st = isend(c->c, c->W + s, c->out[s], sizeof(ctl_t),
                           PS_TAG_CTL, &r[k]);
        if (st == DT_OK)
            st = isend(c->c, c->W + s, params + lo,
                               (hi - lo) * sizeof(float), PS_TAG_DATA,
                               &r[++k]);
        if (st == DT_OK)
            k++;
        if (st == DT_OK && c->out[s][2]) {
            st = isend(c->c, c->W + s, opt[s], opt_len[s],
                               PS_TAG_DATA, &r[k]);
            if (st == DT_OK)
                k++;
        }
    }
    dt_status_t ws = wait_all(c->c, r, k);
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
    set_all(c, PS_PUSH, fbits((double)lr), step);
    DT_CHECK(exchange(c, grads, params));
    hook_fire(&c->hook, ++c->pushes);
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
    set_all(c, PS_PUSH, fbits((double)lr), step);
    size_t k = 0;
    dt_status_t st = post(c, c->sendbuf, c->fresh, &k);
    if (st != DT_OK)
        return complete(c, k, st);
    c->inflight = k;
    c->dst = params;
    hook_fire(&c->hook, ++c->pushes);
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
    beat_start(c);
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
            st = irecv(c->c, c->W + s, opt[s], opt_len[s],
                               PS_TAG_REPLY, &c->reqs[k]);
            if (st == DT_OK)
                k++;
        }
    }
    dt_status_t ws = wait_all(c->c, c->reqs, k);
    *steps = c->in[0][1];
    if (st == DT_OK)
        st = ws;
    if (st != DT_OK)
        for (int s = 0; s < c->S; s++) {
            free(opt[s]);
            opt[s] = NULL;
        }
    else
        beat_start(c);
    return st;
}
