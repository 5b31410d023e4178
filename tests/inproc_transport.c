/* inproc_transport.c — see inproc_transport.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inproc_transport.h"

typedef struct msg {
    int src, dst, tag;
    size_t len;
    struct msg *next;
    char data[];
} msg_t;

struct dt_request {
    int is_recv, done, peer, tag;
    void *buf;
    size_t len;
    dt_status_t st;
    struct dt_request *next; /* pending receives of one rank, post order */
    /* Every request not yet freed by test/wait, of the whole world: those
     * a timed-out wait left (they stay valid) are freed with the world,
     * as a transport's fini voids them. */
    struct dt_request *all_prev, *all_next;
};

typedef struct rank_ctx {
    inproc_world_t *w;
    int rank;
    dt_request_t *pending, **pending_tail;
    msg_t *inbox, **inbox_tail; /* messages to this rank, send order */
    pthread_cond_t arrived;     /* signalled when the inbox grows     */
} rank_ctx_t;

struct inproc_world {
    int size;
    pthread_mutex_t lock;
    rank_ctx_t *ranks;
    dt_request_t *all;
};

/* Caller holds the lock. */
static void track(inproc_world_t *w, dt_request_t *q)
{
    q->all_prev = NULL;
    q->all_next = w->all;
    if (w->all)
        w->all->all_prev = q;
    w->all = q;
}

static void untrack_and_free(inproc_world_t *w, dt_request_t *q)
{
    pthread_mutex_lock(&w->lock);
    if (q->all_prev)
        q->all_prev->all_next = q->all_next;
    else
        w->all = q->all_next;
    if (q->all_next)
        q->all_next->all_prev = q->all_prev;
    pthread_mutex_unlock(&w->lock);
    free(q);
}

dt_status_t inproc_world_new(int size, inproc_world_t **out)
{
    inproc_world_t *w = calloc(1, sizeof *w);
    if (!w || !(w->ranks = calloc((size_t)size, sizeof *w->ranks))) {
        free(w);
        return DT_ERR_NOMEM;
    }
    w->size = size;
    pthread_mutex_init(&w->lock, NULL);
    for (int r = 0; r < size; r++) {
        w->ranks[r].w = w;
        w->ranks[r].rank = r;
        w->ranks[r].pending_tail = &w->ranks[r].pending;
        w->ranks[r].inbox_tail = &w->ranks[r].inbox;
        pthread_cond_init(&w->ranks[r].arrived, NULL);
    }
    *out = w;
    return DT_OK;
}

size_t inproc_unreceived(inproc_world_t *w)
{
    size_t n = 0;
    for (int r = 0; r < w->size; r++)
        for (msg_t *m = w->ranks[r].inbox; m; m = m->next)
            n++;
    return n;
}

void inproc_world_free(inproc_world_t *w)
{
    if (!w)
        return;
    for (int r = 0; r < w->size; r++)
        for (msg_t *m = w->ranks[r].inbox, *next; m; m = next) {
            next = m->next;
            free(m);
        }
    for (dt_request_t *q = w->all, *next; q; q = next) {
        next = q->all_next;
        free(q);
    }
    pthread_mutex_destroy(&w->lock);
    for (int r = 0; r < w->size; r++)
        pthread_cond_destroy(&w->ranks[r].arrived);
    free(w->ranks);
    free(w);
}

void *inproc_rank_ctx(inproc_world_t *w, int rank) { return &w->ranks[rank]; }

/* Match this rank's pending receives, oldest first, with the oldest
 * message of the same source and tag. Caller holds the lock. */
static void match(rank_ctx_t *rc)
{
    for (dt_request_t **pq = &rc->pending; *pq;) {
        dt_request_t *q = *pq;
        msg_t **pm = &rc->inbox;
        while (*pm && !((*pm)->src == q->peer && (*pm)->tag == q->tag))
            pm = &(*pm)->next;
        if (!*pm) {
            pq = &q->next;
            continue;
        }
        msg_t *m = *pm;
        *pm = m->next;
        if (!*pm)
            rc->inbox_tail = pm;
        q->st = m->len == q->len ? DT_OK : DT_ERR_INVALID;
        if (q->st == DT_OK && m->len)
            memcpy(q->buf, m->data, m->len);
        free(m);
        q->done = 1;
        *pq = q->next;
        if (!*pq)
            rc->pending_tail = pq;
    }
}

static dt_status_t in_init(const dt_config_t *cfg,
                           const dt_transport_args_t *a, void **ctx)
{
    return DT_ERR_UNSUPPORTED; /* instances come from inproc_rank_ctx */
}

static uint32_t in_caps(void *ctx) { return 0; }

static dt_status_t in_isend(void *ctx, int peer, const void *buf, size_t len,
                            dt_mem_t mem, int tag, dt_request_t **req)
{
    rank_ctx_t *rc = ctx;
    inproc_world_t *w = rc->w;
    if (peer < 0 || peer >= w->size)
        return DT_ERR_INVALID;
    msg_t *m = malloc(sizeof *m + len);
    dt_request_t *q = calloc(1, sizeof *q);
    if (!m || !q) {
        free(m);
        free(q);
        return DT_ERR_NOMEM;
    }
    m->src = rc->rank;
    m->dst = peer;
    m->tag = tag;
    m->len = len;
    m->next = NULL;
    if (len)
        memcpy(m->data, buf, len);
    q->done = 1;
    rank_ctx_t *to = &w->ranks[peer];
    pthread_mutex_lock(&w->lock);
    track(w, q);
    *to->inbox_tail = m;
    to->inbox_tail = &m->next;
    pthread_cond_signal(&to->arrived);
    pthread_mutex_unlock(&w->lock);
    *req = q;
    return DT_OK;
}

static dt_status_t in_irecv(void *ctx, int peer, void *buf, size_t len,
                            dt_mem_t mem, int tag, dt_request_t **req)
{
    rank_ctx_t *rc = ctx;
    if (peer < 0 || peer >= rc->w->size)
        return DT_ERR_INVALID;
    dt_request_t *q = calloc(1, sizeof *q);
    if (!q)
        return DT_ERR_NOMEM;
    q->is_recv = 1;
    q->peer = peer;
    q->tag = tag;
    q->buf = buf;
    q->len = len;
    pthread_mutex_lock(&rc->w->lock);
    track(rc->w, q);
    *rc->pending_tail = q;
    rc->pending_tail = &q->next;
    match(rc);
    pthread_mutex_unlock(&rc->w->lock);
    *req = q;
    return DT_OK;
}

static dt_status_t in_test(void *ctx, dt_request_t *req, int *done)
{
    rank_ctx_t *rc = ctx;
    pthread_mutex_lock(&rc->w->lock);
    match(rc);
    int fin = req->done;
    pthread_mutex_unlock(&rc->w->lock);
    *done = fin;
    if (!fin)
        return DT_OK;
    dt_status_t st = req->st;
    untrack_and_free(rc->w, req);
    return st;
}

static dt_status_t in_wait(void *ctx, dt_request_t **reqs, size_t n,
                           int timeout_ms)
{
    rank_ctx_t *rc = ctx;
    inproc_world_t *w = rc->w;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int ms = timeout_ms < 0 ? 60000 : timeout_ms;
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->lock);
    for (;;) {
        match(rc);
        size_t fin = 0;
        for (size_t i = 0; i < n; i++)
            fin += reqs[i]->done != 0;
        if (fin == n)
            break;
        if (pthread_cond_timedwait(&rc->arrived, &w->lock, &until) ==
            ETIMEDOUT) {
            pthread_mutex_unlock(&w->lock);
            return DT_ERR_TIMEOUT;
        }
    }
    pthread_mutex_unlock(&w->lock);
    dt_status_t st = DT_OK;
    for (size_t i = 0; i < n; i++) {
        if (reqs[i]->st != DT_OK)
            st = reqs[i]->st;
        untrack_and_free(w, reqs[i]);
    }
    return st;
}

static void in_fini(void *ctx) {}

const dt_transport_ops_t inproc_ops = {
    .size = sizeof(dt_transport_ops_t),
    .init = in_init,
    .caps = in_caps,
    .isend = in_isend,
    .irecv = in_irecv,
    .test = in_test,
    .wait = in_wait,
    .fini = in_fini,
};
