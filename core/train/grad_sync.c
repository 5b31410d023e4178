/* grad_sync.c — the communication thread and its bucket queue. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "grad_sync.h"
#include "metrics/metrics.h"

typedef struct bucket {
    size_t lo, hi; /* float range [lo, hi) */
    double *sum;   /* or, when set: sum hi doubles here (dt_grad_sync_sum) */
    dt_redop_t op;   /* DT_AVG, or DT_SUM of scaled gradients          */
} bucket_t;

struct dt_grad_sync {
    float *grads;        /* the model's buffer (device or host)          */
    float *buf;          /* what is reduced: grads, or the host staging  */
    size_t n;
    dt_device_t *dev;
    int staged;          /* grads on the device, buf a host copy         */
    size_t bucket_floats;
    int world;
    double scale;        /* > 0: scale then DT_SUM (unequal shares)      */
    size_t pending_hi;   /* [ready_lo, pending_hi) not yet in a bucket   */
    size_t ready_lo;     /* everything at or above this is final         */
    size_t step_buckets; /* buckets sent in the step under way        */
    size_t last_buckets; /* ... and in the last finished step          */

    pthread_t thread;
    int thread_up;
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* work queued, or stop                         */
    pthread_cond_t done_cv;
    bucket_t *queue;     /* ring of at most n buckets                    */
    size_t qcap, qhead, qlen;
    size_t queued, finished;
    dt_status_t error;
    int stop;
};

static void *comm_main(void *arg)
{
    dt_grad_sync_t *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->qlen && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->qlen && s->stop)
            break;
        bucket_t b = s->queue[s->qhead];
        s->qhead = (s->qhead + 1) % s->qcap;
        s->qlen--;
        dt_status_t prev = s->error;
        pthread_mutex_unlock(&s->mu);
        dt_status_t st = DT_OK;
        /* After a failure the job stops: skip the rest, peers time out. */
        if (prev == DT_OK && b.sum)
            st = dt_allreduce(b.sum, b.sum, b.hi, DT_FLOAT64, DT_SUM);
        else if (prev == DT_OK)
            st = dt_allreduce(s->buf + b.lo, s->buf + b.lo, b.hi - b.lo,
                              DT_FLOAT32, b.op);
        pthread_mutex_lock(&s->mu);
        if (st != DT_OK && s->error == DT_OK)
            s->error = st;
        s->finished++;
        pthread_cond_broadcast(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

dt_status_t dt_grad_sync_new(float *grads, size_t n, dt_device_t *dev,
                             size_t bucket_bytes, int world,
                             dt_grad_sync_t **out)
{
    *out = NULL;
    dt_grad_sync_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    s->grads = s->buf = grads;
    s->n = n;
    s->dev = dev;
    s->world = world;
    s->bucket_floats = bucket_bytes / sizeof(float);
    if (s->bucket_floats == 0)
        s->bucket_floats = 1;
    s->pending_hi = s->ready_lo = n;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    *out = s;
    if (world <= 1)
        return DT_OK;
    dt_status_t st = DT_ERR_NOMEM;
    s->qcap = n + 1;
    if (s->qcap > 4096)
        s->qcap = 4096; /* more buckets than layers cannot happen (and at
                           most one dt_grad_sync_sum waits behind them) */
    if (!(s->queue = calloc(s->qcap, sizeof *s->queue)))
        goto fail;
    if (dev && dev->mem != DT_MEM_HOST) {
        s->staged = 1;
        if ((st = dt_device_host_alloc(dev, n * sizeof(float),
                                       (void **)&s->buf)) != DT_OK)
            goto fail;
    }
    if (pthread_create(&s->thread, NULL, comm_main, s) != 0) {
        dt_error("cannot start the gradient communication thread");
        st = DT_ERR_INTERNAL;
        goto fail;
    }
    s->thread_up = 1;
    return DT_OK;
fail:
    dt_grad_sync_free(s);
    *out = NULL;
    return st;
}

static dt_status_t enqueue(dt_grad_sync_t *s, size_t lo, size_t hi,
                           double *sum)
{
    pthread_mutex_lock(&s->mu);
    if (s->qlen == s->qcap) {
        pthread_mutex_unlock(&s->mu);
        dt_error("gradient bucket queue overflow (%zu buckets): internal "
                 "error, please report", s->qcap);
        return DT_ERR_INTERNAL;
    }
    s->queue[(s->qhead + s->qlen) % s->qcap] =
        (bucket_t){lo, hi, sum, s->scale > 0 ? DT_SUM : DT_AVG};
    s->qlen++;
    s->queued++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (!sum)
        s->step_buckets++;
    return DT_OK;
}

dt_status_t dt_grad_sync_sum(void *arg, double *buf, size_t n)
{
    dt_grad_sync_t *s = arg;
    if (s->world <= 1)
        return DT_OK;
    DT_CHECK(enqueue(s, 0, n, buf));
    pthread_mutex_lock(&s->mu);
    size_t ticket = s->queued; /* done when everything up to it is */
    while (s->finished < ticket)
        pthread_cond_wait(&s->done_cv, &s->mu);
    dt_status_t st = s->error;
    pthread_mutex_unlock(&s->mu);
    return st;
}

void dt_grad_sync_set_scale(dt_grad_sync_t *s, double scale)
{
    s->scale = scale;
}

/* Unequal shares: this rank's part of the global mean, before DT_SUM. */
static void scale_range(dt_grad_sync_t *s, size_t lo, size_t hi)
{
    if (s->scale <= 0 || s->world <= 1)
        return;
    float f = (float)s->scale;
    for (size_t i = lo; i < hi; i++)
        s->buf[i] *= f;
}

dt_status_t dt_grad_sync_ready(void *arg, size_t offset, size_t len)
{
    dt_grad_sync_t *s = arg;
    if (offset + len != s->ready_lo) {
        dt_error("gradients became ready out of order ([%zu, %zu) after "
                 "%zu): internal error, please report",
                 offset, offset + len, s->ready_lo);
        return DT_ERR_INTERNAL;
    }
    s->ready_lo = offset;
    if (s->world <= 1)
        return DT_OK;
    if (s->staged)
        DT_CHECK(dt_device_copy(s->dev, s->buf + offset, DT_MEM_HOST,
                                s->grads + offset, s->dev->mem,
                                len * sizeof(float)));
    scale_range(s, offset, offset + len);
    if (s->pending_hi - offset >= s->bucket_floats) {
        DT_CHECK(enqueue(s, offset, s->pending_hi, NULL));
        s->pending_hi = offset;
    }
    return DT_OK;
}

dt_status_t dt_grad_sync_finish(dt_grad_sync_t *s, double *wait_seconds)
{
    double t0 = dt_clock_now();
    dt_status_t st = DT_OK;
    if (s->ready_lo != 0) {
        /* The model reported nothing (or not all): the rest is final now. */
        if (s->staged && s->world > 1)
            st = dt_device_copy(s->dev, s->buf, DT_MEM_HOST, s->grads,
                                s->dev->mem, s->ready_lo * sizeof(float));
        scale_range(s, 0, s->ready_lo);
        s->ready_lo = 0;
    }
    if (s->world > 1) {
        pthread_mutex_lock(&s->mu);
        while (s->finished < s->queued)
            pthread_cond_wait(&s->done_cv, &s->mu);
        if (st == DT_OK)
            st = s->error;
        pthread_mutex_unlock(&s->mu);
        /* The last bucket has nothing left to overlap with: reduce it
         * here, with the communication thread idle, rather than hand it
         * over and wait for it (two thread wake-ups a step, which a small
         * model that fits in one bucket pays on every step). Every rank
         * still issues the buckets in the same order. */
        if (st == DT_OK && s->pending_hi > 0) {
            st = dt_allreduce(s->buf, s->buf, s->pending_hi, DT_FLOAT32,
                              s->scale > 0 ? DT_SUM : DT_AVG);
            s->step_buckets++;
        }
        if (st == DT_OK && s->staged)
            st = dt_device_copy(s->dev, s->grads, s->dev->mem, s->buf,
                                DT_MEM_HOST, s->n * sizeof(float));
    }
    s->pending_hi = s->ready_lo = s->n;
    s->last_buckets = s->step_buckets;
    s->step_buckets = 0;
    if (wait_seconds)
        *wait_seconds = dt_clock_now() - t0;
    return st;
}

size_t dt_grad_sync_buckets(const dt_grad_sync_t *s) { return s->last_buckets; }

void dt_grad_sync_free(dt_grad_sync_t *s)
{
    if (!s)
        return;
    if (s->thread_up) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    if (s->staged && s->buf)
        dt_device_host_free(s->dev, s->buf);
    free(s->queue);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
