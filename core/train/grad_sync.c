/* grad_sync.c — the communication thread and its bucket queue.
 *
 * Three paths (grad_sync.h): host gradients are reduced in place; device
 * gradients are reduced in place in device memory when the transport reads
 * it (nccl), with an event per bucket that the communication stream waits
 * for; otherwise each bucket is copied device to pinned host memory on a
 * copy stream as soon as it is final, reduced there and copied back once
 * at the end. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "coll/coll.h"
#include "grad_sync.h"
#include "metrics/metrics.h"
#include "nn/device_step.h"

typedef enum sync_path {
    PATH_HOST,   /* gradients in host memory: reduced in place         */
    PATH_DEVICE, /* device memory, reduced there (no host copy)        */
    PATH_STAGED  /* device memory, per-bucket copies to pinned memory  */
} sync_path_t;

typedef struct bucket {
    size_t lo, hi; /* float range [lo, hi) */
    double *sum;   /* or, when set: sum hi doubles here (dt_grad_sync_sum) */
    dt_redop_t op;   /* DT_AVG, or DT_SUM of scaled gradients          */
    void *ev;      /* device paths: the bucket is final once ev happened */
    float scale;   /* staged path: host scaling on the comm thread (>0) */
} bucket_t;

struct dt_grad_sync {
    float *grads;        /* the model's buffer (device or host)          */
    float *buf;          /* what is reduced: grads, or the host staging  */
    size_t n;
    dt_device_t *dev;
    sync_path_t path;
    dt_grad_sync_comm_t comm;
    void *comm_stream;   /* device path: the collectives' stream         */
    void *copy_stream;   /* staged path: device-to-host copies           */
    void *done_ev;       /* device paths: the reduction finished         */
    void **events;       /* one per bucket of a step (same every step)   */
    size_t nevents;
    size_t bucket_floats;
    int world;
    double scale;        /* > 0: scale then DT_SUM (unequal shares)      */
    size_t pending_hi;   /* [ready_lo, pending_hi) not yet in a bucket   */
    size_t ready_lo;     /* everything at or above this is final         */
    size_t step_buckets; /* buckets sent in the step under way        */
    size_t last_buckets; /* ... and in the last finished step          */
    size_t step_d2h, last_d2h; /* gradient copies device to host         */

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

/* Host scaling (unequal shares) of floats [lo, hi) of the host buffer. */
static void scale_host(float *buf, float f, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        buf[i] *= f;
}

/* One bucket, on whichever thread runs it (the comm thread, or finish). */
static dt_status_t reduce_bucket(dt_grad_sync_t *s, const bucket_t *b)
{
    if (b->sum)
        return s->comm.allreduce(s->comm.arg, b->sum, b->sum, b->hi,
                                 DT_FLOAT64, DT_SUM, DT_MEM_HOST, NULL);
    size_t count = b->hi - b->lo;
    switch (s->path) {
    case PATH_HOST:
        break;
    case PATH_DEVICE:
        /* The collectives' stream waits for the backward kernels that
         * wrote the bucket (no host wait); the transport runs on it. */
        DT_CHECK(dt_device_stream_wait(s->dev, s->comm_stream, b->ev));
        return s->comm.allreduce(s->comm.arg, s->grads + b->lo,
                                 s->grads + b->lo, count, DT_FLOAT32, b->op,
                                 s->dev->mem, s->comm_stream);
    case PATH_STAGED:
        /* The bucket's copy into pinned memory is done once ev is. */
        DT_CHECK(dt_device_event_sync(s->dev, b->ev));
        if (b->scale > 0)
            scale_host(s->buf, b->scale, b->lo, b->hi);
        break;
    }
    return s->comm.allreduce(s->comm.arg, s->buf + b->lo, s->buf + b->lo,
                             count, DT_FLOAT32, b->op, DT_MEM_HOST, NULL);
}

static void *comm_main(void *arg)
{
    dt_grad_sync_t *s = arg;
    /* cudaSetDevice is per thread: the transport and the copies below run
     * on the trainer's GPU, not GPU 0. */
    dt_status_t cur = s->path != PATH_HOST ? dt_device_make_current(s->dev)
                                           : DT_OK;
    pthread_mutex_lock(&s->mu);
    if (cur != DT_OK)
        s->error = cur;
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
        if (prev == DT_OK)
            st = reduce_bucket(s, &b);
        pthread_mutex_lock(&s->mu);
        if (st != DT_OK && s->error == DT_OK)
            s->error = st;
        s->finished++;
        pthread_cond_broadcast(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* dt_allreduce_mem over the worker's comm; host memory through
 * dt_allreduce, as before the device paths existed. */
static dt_status_t world_allreduce(void *arg, const void *send, void *recv,
                                   size_t count, dt_dtype_t t, dt_redop_t op,
                                   dt_mem_t mem, void *stream)
{
    (void)arg;
    if (mem == DT_MEM_HOST)
        return dt_allreduce(send, recv, count, t, op);
    return dt_allreduce_mem(send, recv, count, t, op, mem, stream);
}

dt_status_t dt_grad_sync_new(float *grads, size_t n, dt_device_t *dev,
                             size_t bucket_bytes, int world,
                             dt_grad_sync_t **out)
{
    dt_grad_sync_comm_t comm = {
        .allreduce = world_allreduce,
        .device_mem = dt_comm_device_path(dt_worker_comm()) == DT_PATH_DEVICE,
    };
    return dt_grad_sync_new_comm(grads, n, dev, bucket_bytes, world, &comm,
                                 out);
}

dt_status_t dt_grad_sync_new_comm(float *grads, size_t n, dt_device_t *dev,
                                  size_t bucket_bytes, int world,
                                  const dt_grad_sync_comm_t *comm,
                                  dt_grad_sync_t **out)
{
    *out = NULL;
    dt_grad_sync_t *s = calloc(1, sizeof *s);
    if (!s)
        return DT_ERR_NOMEM;
    s->grads = s->buf = grads;
    s->n = n;
    s->dev = dev;
    s->comm = *comm;
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
    if (!(s->queue = calloc(s->qcap, sizeof *s->queue)) ||
        !(s->events = calloc(s->qcap, sizeof *s->events)))
        goto fail;
    if (dev && dev->mem != DT_MEM_HOST) {
        s->path = comm->device_mem ? PATH_DEVICE : PATH_STAGED;
        if ((st = dt_device_event_new(dev, &s->done_ev)) != DT_OK)
            goto fail;
        if (s->path == PATH_DEVICE)
            st = dt_device_stream_new(dev, &s->comm_stream);
        else if ((st = dt_device_stream_new(dev, &s->copy_stream)) == DT_OK)
            st = dt_device_host_alloc(dev, n * sizeof(float),
                                      (void **)&s->buf);
        if (st != DT_OK)
            goto fail;
    }
    /* The thread takes no signals: the worker's handlers (preempt.c) run
     * in the training thread, as with the loaders (pipeline.c). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, comm_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
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

/* Device paths: the event of the step's next bucket (created on the first
 * step; bucket boundaries are the same every step). */
static dt_status_t next_event(dt_grad_sync_t *s, void **ev)
{
    size_t i = s->step_buckets;
    if (i >= s->qcap) {
        dt_error("more than %zu gradient buckets in one step: internal "
                 "error, please report", s->qcap);
        return DT_ERR_INTERNAL;
    }
    if (i >= s->nevents) {
        DT_CHECK(dt_device_event_new(s->dev, &s->events[i]));
        s->nevents = i + 1;
    }
    *ev = s->events[i];
    return DT_OK;
}

/* Device paths: the bucket [lo, hi) is final on the compute stream. Scale
 * it there (device path) or queue its copy to pinned memory (staged), and
 * record the event the reduction waits for. */
static dt_status_t bucket_final(dt_grad_sync_t *s, size_t lo, size_t hi,
                                void **ev)
{
    DT_CHECK(next_event(s, ev));
    if (s->path == PATH_DEVICE) {
        if (s->scale > 0)
            DT_CHECK(dt_device_scale(s->dev, s->grads + lo, (float)s->scale,
                                     hi - lo, NULL));
        return dt_device_event_record(s->dev, *ev, NULL);
    }
    /* Staged: the copy stream waits for the compute stream, copies, and
     * the event marks the copy done. Backward goes on meanwhile. */
    DT_CHECK(dt_device_event_record(s->dev, *ev, NULL));
    DT_CHECK(dt_device_stream_wait(s->dev, s->copy_stream, *ev));
    DT_CHECK(dt_device_copy_async(s->dev, s->buf + lo, s->grads + lo,
                                  (hi - lo) * sizeof(float), s->copy_stream));
    s->step_d2h++;
    return dt_device_event_record(s->dev, *ev, s->copy_stream);
}

static dt_status_t enqueue(dt_grad_sync_t *s, size_t lo, size_t hi,
                           double *sum)
{
    void *ev = NULL;
    if (!sum && s->path != PATH_HOST)
        DT_CHECK(bucket_final(s, lo, hi, &ev));
    pthread_mutex_lock(&s->mu);
    if (s->qlen == s->qcap) {
        pthread_mutex_unlock(&s->mu);
        dt_error("gradient bucket queue overflow (%zu buckets): internal "
                 "error, please report", s->qcap);
        return DT_ERR_INTERNAL;
    }
    s->queue[(s->qhead + s->qlen) % s->qcap] =
        (bucket_t){lo, hi, sum, s->scale > 0 ? DT_SUM : DT_AVG, ev,
                   s->path == PATH_STAGED && s->scale > 0 ? (float)s->scale
                                                           : 0.0f};
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

/* Unequal shares: this rank's part of the global mean, before DT_SUM.
 * Host gradients only: the device paths scale per bucket (bucket_final,
 * reduce_bucket). */
static void scale_range(dt_grad_sync_t *s, size_t lo, size_t hi)
{
    if (s->scale <= 0 || s->world <= 1 || s->path != PATH_HOST)
        return;
    scale_host(s->buf, (float)s->scale, lo, hi);
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
        /* The model reported nothing (or not all): the rest is final now
         * (and joins the last bucket). */
        scale_range(s, 0, s->ready_lo);
        s->ready_lo = 0;
    }
    if (s->world > 1) {
        pthread_mutex_lock(&s->mu);
        while (s->finished < s->queued)
            pthread_cond_wait(&s->done_cv, &s->mu);
        st = s->error;
        pthread_mutex_unlock(&s->mu);
        /* The last bucket has nothing left to overlap with: reduce it
         * here, with the communication thread idle, rather than hand it
         * over and wait for it (two thread wake-ups a step, which a small
         * model that fits in one bucket pays on every step). Every rank
         * still issues the buckets in the same order. */
        if (st == DT_OK && s->pending_hi > 0) {
            bucket_t b = {0, s->pending_hi, NULL,
                          s->scale > 0 ? DT_SUM : DT_AVG, NULL, 0.0f};
            if (s->path != PATH_HOST) {
                st = bucket_final(s, 0, s->pending_hi, &b.ev);
                if (s->path == PATH_STAGED && s->scale > 0)
                    b.scale = (float)s->scale;
            }
            if (st == DT_OK)
                st = reduce_bucket(s, &b);
            s->step_buckets++;
        }
        /* Device paths: the compute stream (the optimizer next) waits for
         * the reduction, or for the copy of the averages back. */
        if (st == DT_OK && s->path == PATH_STAGED)
            st = dt_device_copy_async(s->dev, s->grads, s->buf,
                                      s->n * sizeof(float), NULL);
        if (st == DT_OK && s->path == PATH_DEVICE) {
            st = dt_device_event_record(s->dev, s->done_ev, s->comm_stream);
            if (st == DT_OK)
                st = dt_device_stream_wait(s->dev, NULL, s->done_ev);
        }
    }
    s->pending_hi = s->ready_lo = s->n;
    s->last_buckets = s->step_buckets;
    s->step_buckets = 0;
    s->last_d2h = s->step_d2h;
    s->step_d2h = 0;
    if (wait_seconds)
        *wait_seconds = dt_clock_now() - t0;
    return st;
}

size_t dt_grad_sync_buckets(const dt_grad_sync_t *s) { return s->last_buckets; }

size_t dt_grad_sync_d2h_copies(const dt_grad_sync_t *s) { return s->last_d2h; }

const char *dt_grad_sync_path(const dt_grad_sync_t *s)
{
    switch (s->path) {
    case PATH_DEVICE:
        return "reduced in place in device memory";
    case PATH_STAGED:
        return "copied per bucket to pinned host memory";
    case PATH_HOST:
        break;
    }
    return "reduced in place in host memory";
}

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
    if (s->path == PATH_STAGED && s->buf != s->grads)
        dt_device_host_free(s->dev, s->buf);
    for (size_t i = 0; i < s->nevents; i++)
        dt_device_event_free(s->dev, s->events[i]);
    if (s->dev) {
        dt_device_event_free(s->dev, s->done_ev);
        dt_device_stream_free(s->dev, s->comm_stream);
        dt_device_stream_free(s->dev, s->copy_stream);
    }
    free(s->events);
    free(s->queue);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
