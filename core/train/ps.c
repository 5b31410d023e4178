/* ps.c — parameter servers and their clients for [train] mode = async
 * (protocol: ps.h; design: docs/TRAINING.md, "Asynchronous training"). */
#define _GNU_SOURCE
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
#include "coll/coll.h"
#include "plugin/plugin_loader.h"
#include "ps.h"

extern char **environ;

enum { PS_TAG_CTL = 0x50530001, PS_TAG_DATA, PS_TAG_REPLY };
enum { PS_INIT = 1, PS_JOIN, PS_PUSH, PS_PULL, PS_SAVE, PS_DONE };
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

dt_status_t dt_ps_serve(dt_config_t *cfg, int nworkers, int nservers)
{
    server_t v;
    memset(&v, 0, sizeof v);
    v.c = dt_worker_comm();
    v.W = nworkers;
    v.S = nservers;
    v.rank = dt_rank();
    v.sid = v.rank - nworkers;
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
    v.ctl = calloc((size_t)v.W, sizeof *v.ctl);
    v.req = calloc((size_t)v.W, sizeof *v.req);
    v.count = calloc((size_t)v.W, sizeof *v.count);
    v.pending = calloc((size_t)v.W, sizeof *v.pending);
    v.held = calloc((size_t)v.W, sizeof *v.held);
    v.done = calloc((size_t)v.W, sizeof *v.done);
    dt_status_t st = v.ctl && v.req && v.count && v.pending && v.held &&
                             v.done
                         ? DT_OK
                         : DT_ERR_NOMEM;
    for (int w = 0; st == DT_OK && w < v.W; w++)
        st = irecv(v.c, w, v.ctl[w], sizeof(ctl_t), PS_TAG_CTL,
                           &v.req[w]);
    int idle = 0;
    while (st == DT_OK && v.ndone < v.W) {
        int progress = 0;
        for (int w = 0; st == DT_OK && w < v.W; w++) {
            if (!v.req[w])
                continue;
            int done = 0;
            st = v.c->ops->test(v.c->ctx, v.req[w], &done);
            if (st != DT_OK) {
                v.req[w] = NULL; /* freed by the failed test */
                dt_error("parameter server %d: lost worker %d (%s)", v.sid, w,
                         dt_status_str(st));
                break;
            }
            if (!done)
                continue;
            v.req[w] = NULL;
            progress = 1;
            st = handle(&v, cfg, w);
            if (st == DT_OK && !v.done[w])
                st = irecv(v.c, w, v.ctl[w], sizeof(ctl_t),
                                   PS_TAG_CTL, &v.req[w]);
        }
        if (progress) {
            idle = 0;
        } else if (++idle > 64) {
            /* Polls yield the CPU (ranks may outnumber cores): 50 us
             * while requests keep coming, 1 ms once idle for a while. */
            struct timespec ts = {0, idle > 2000 ? 1000000 : 50000};
            nanosleep(&ts, NULL);
        }
    }
    if (st == DT_OK)
        dt_info("parameter server %d (rank %d): %llu pushes applied from %d "
                "worker%s; max_staleness %d: %llu replies held, largest lead "
                "answered %llu", v.sid, v.rank,
                (unsigned long long)v.pushes, v.W, v.W == 1 ? "" : "s", v.K,
                (unsigned long long)v.holds,
                (unsigned long long)v.max_lead);
    if (v.opt_state)
        v.opt->destroy(v.opt_state);
    free(v.params);
    free(v.grad);
    free(v.ctl);
    free(v.req);
    free(v.count);
    free(v.pending);
    free(v.held);
    free(v.done);
    return st;
}

/* ======================================================================
 * Client (workers)
 * ====================================================================== */

struct dt_ps_client {
    dt_comm_t *c;
    int W, S;
    size_t n;
    ctl_t *out, *in;       /* per server                              */
    dt_request_t **reqs;   /* 4 per server                            */
    double wait;
    /* A push in flight (dt_ps_push_begin): its requests, the gradients
     * being sent (a copy: backward rewrites the caller's), the fresh
     * parameters arriving, and where they go when it completes. */
    size_t inflight;       /* requests posted, 0: none                */
    float *sendbuf, *fresh, *dst;
};

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
    c->out = calloc((size_t)nservers, sizeof *c->out);
    c->in = calloc((size_t)nservers, sizeof *c->in);
    c->reqs = calloc(4 * (size_t)nservers, sizeof *c->reqs);
    if (!c->c || !c->out || !c->in || !c->reqs) {
        dt_ps_client_free(c);
        return c->c ? DT_ERR_NOMEM : DT_ERR_INVALID;
    }
    *out = c;
    return DT_OK;
}

void dt_ps_client_free(dt_ps_client_t *c)
{
    if (!c)
        return;
    free(c->sendbuf);
    free(c->fresh);
    free(c->out);
    free(c->in);
    free(c->reqs);
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
        size_t lo, hi;
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
    }
    *posted = k;
    return st;
}

/* Wait for k posted requests (st: how posting went). */
static dt_status_t complete(dt_ps_client_t *c, size_t k, dt_status_t st,
                            int patient)
{
    double t0 = dt_clock_now();
    dt_status_t ws;
    /* patient: the answer may take longer than the transport's timeout
     * (DONE waits for the slowest worker); a dead server still fails it. */
    do
        ws = k ? c->c->ops->wait(c->c->ctx, c->reqs, k,
                                 patient ? 1000 : -1)
               : DT_OK;
    while (patient && ws == DT_ERR_TIMEOUT);
    if (st == DT_OK)
        st = ws;
    c->wait += dt_clock_now() - t0;
    if (st != DT_OK)
        dt_error("rank %d: a request to the parameter servers (ranks %d..%d) "
                 "failed (%s); the transport's message above names the rank",
                 dt_rank(), c->W, c->W + c->S - 1, dt_status_str(st));
    return st;
}

/* A push still in flight completes first: every other request waits for
 * it (one request per server at a time), and its parameters land. */
static dt_status_t drain(dt_ps_client_t *c)
{
    if (!c->inflight)
        return DT_OK;
    size_t k = c->inflight;
    c->inflight = 0;
    DT_CHECK(complete(c, k, DT_OK, 0));
    memcpy(c->dst, c->fresh, c->n * sizeof(float));
    return DT_OK;
}

static dt_status_t exchange(dt_ps_client_t *c, const float *send, float *recv,
                            int patient)
{
    size_t k = 0;
    DT_CHECK(drain(c));
    dt_status_t st = post(c, send, recv, &k);
    return complete(c, k, st, patient);
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
    DT_CHECK(exchange(c, NULL, params, 0));
    *pos = (dt_ps_pos_t){c->in[0][2], c->in[0][3], c->in[0][4],
                         c->in[0][5]};
    return DT_OK;
}

dt_status_t dt_ps_push_pull(dt_ps_client_t *c, float *params,
                            const float *grads, float lr, uint64_t step)
{
    set_all(c, PS_PUSH, fbits((double)lr), step);
    return exchange(c, grads, params, 0);
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
        return complete(c, k, st, 0);
    c->inflight = k;
    c->dst = params;
    return DT_OK;
}

dt_status_t dt_ps_push_end(dt_ps_client_t *c)
{
    return drain(c);
}

dt_status_t dt_ps_pull(dt_ps_client_t *c, float *params)
{
    set_all(c, PS_PULL, 0, 0);
    return exchange(c, NULL, params, 0);
}

dt_status_t dt_ps_done(dt_ps_client_t *c, float *params)
{
    set_all(c, PS_DONE, 0, 0);
    return exchange(c, NULL, params, 1);
}

dt_status_t dt_ps_save(dt_ps_client_t *c, float *params, void **opt,
                       size_t *opt_len, uint64_t *steps)
{
    for (int s = 0; s < c->S; s++)
        opt[s] = NULL;
    set_all(c, PS_SAVE, 0, 0);
    DT_CHECK(exchange(c, NULL, params, 0));
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
    return st;
}
