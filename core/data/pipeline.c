/* pipeline.c — loader threads and a ring of batch buffers between the
 * sampler and the training step.
 *
 * Batches are numbered from the last seek: sequence number q is batch
 * (base_step + q) mod steps of epoch base_epoch + (base_step + q) div
 * steps, and lives in slot q mod nslots. Loaders claim sequence numbers in
 * order under the mutex (copying the batch's indices out of the sampler,
 * which moves to the next epoch only when its first batch is claimed),
 * then gather outside it. A slot is free again when the step asks for the
 * batch after the one it holds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dt/clock.h>
#include <dt/log.h>
#include "pipeline.h"
#include "sampler.h"

enum { SLOT_FREE, SLOT_LOADING, SLOT_READY };

typedef struct slot {
    float *x;
    int32_t *y;
    int state;
    uint64_t seq;
    size_t count, global;
    uint64_t epoch, step;
    dt_status_t st;
} slot_t;

typedef struct loader {
    dt_pipeline_t *p;
    pthread_t thread;
    size_t *idx;             /* the claimed batch's indices                */
    uint8_t *scratch;        /* one sample's augmented pixels              */
} loader_t;

struct dt_pipeline {
    const dt_dataset_t *ds;
    dt_pipeline_opts_t o;
    dt_sampler_t smp;        /* the epoch of the latest claim              */
    uint64_t steps;
    size_t nslots;
    slot_t *slots;
    loader_t *loaders;       /* threads entries; [0] also serves threads=0 */
    int nthreads;            /* started                                    */

    dt_device_t *pin;        /* slots in its pinned memory (dt_pipeline_pin) */

    pthread_mutex_t mu;
    pthread_cond_t work;     /* loaders: something to claim, or stop       */
    pthread_cond_t done;     /* a batch is ready, or the loaders are idle  */
    bool started;            /* a seek happened                            */
    bool seeking, stop;
    uint64_t base_epoch, base_step;
    /* A resumed epoch that starts at a position of its order (another
     * world size wrote the checkpoint): part_steps batches (0: none). */
    uint64_t part_epoch, part_steps;
    size_t part_start;
    uint64_t next_claim;     /* next sequence number to load               */
    uint64_t next_take;      /* next sequence number the step takes        */
    bool held;               /* the step holds next_take - 1               */
    int busy;                /* loaders between claim and ready            */
};

uint64_t dt_pipeline_steps(const dt_pipeline_t *p) { return p->steps; }

static void position(const dt_pipeline_t *p, uint64_t seq, uint64_t *epoch,
                     uint64_t *step)
{
    uint64_t e = p->base_epoch, at = p->base_step + seq;
    if (p->part_steps && e == p->part_epoch) {
        if (at < p->part_steps) {
            *epoch = e;
            *step = at;
            return;
        }
        at -= p->part_steps;
        e++;
    }
    *epoch = e + at / p->steps;
    *step = at % p->steps;
}

static bool past_end(const dt_pipeline_t *p, uint64_t seq)
{
    uint64_t e, s;
    position(p, seq, &e, &s);
    return p->o.end_epoch && e >= p->o.end_epoch;
}

/* Under the mutex: copy batch seq's indices into idx; fills the slot's
 * sequence number (even on error) and position. */
static dt_status_t claim(dt_pipeline_t *p, uint64_t seq, size_t *idx,
                         slot_t *sl)
{
    uint64_t e, s;
    /* First: dt_pipeline_next waits for this seq, also to get an error */
    sl->seq = seq;
    position(p, seq, &e, &s);
    size_t from = p->part_steps && e == p->part_epoch ? p->part_start : 0;
    dt_status_t st = DT_OK;
    if (p->smp.epoch != e || p->smp.start != from)
        st = dt_sampler_set_epoch_from(&p->smp, e, from);
    size_t at = 0, b = 0, g = 0;
    if (st == DT_OK)
        dt_sampler_step(&p->smp, p->o.batch, s, &at, &b, &g);
    if (st == DT_OK && (b > p->o.max_batch || at + b > p->smp.epoch_count))
        st = DT_ERR_INTERNAL;
    if (st != DT_OK) {
        dt_error("data pipeline: no sample order for batch %llu of epoch "
                 "%llu (from position %zu): %s; internal error, please "
                 "report", (unsigned long long)s, (unsigned long long)e,
                 from, dt_status_str(st));
        return st;
    }
    memcpy(idx, p->smp.indices + at, b * sizeof *idx);
    sl->count = b;
    sl->global = g;
    sl->epoch = e;
    sl->step = s;
    return DT_OK;
}

/* Gather, decode (an image folder with decode = loader), augment and
 * normalize one batch; outside the mutex. */
static dt_status_t load(dt_pipeline_t *p, loader_t *l, slot_t *sl)
{
    return dt_augment_gather(p->ds, &p->o.aug, sl->epoch, l->idx, sl->count,
                             l->scratch, sl->x, sl->y);
}

static bool can_claim(const dt_pipeline_t *p)
{
    uint64_t oldest = p->held ? p->next_take - 1 : p->next_take;
    return p->started && !p->seeking &&
           p->next_claim < oldest + p->nslots && !past_end(p, p->next_claim);
}

static void *loader_main(void *arg)
{
    loader_t *l = arg;
    dt_pipeline_t *p = l->p;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !can_claim(p))
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop)
            break;
        uint64_t seq = p->next_claim++;
        slot_t *sl = &p->slots[seq % p->nslots];
        sl->state = SLOT_LOADING;
        sl->st = claim(p, seq, l->idx, sl);
        p->busy++;
        pthread_mutex_unlock(&p->mu);
        if (sl->st == DT_OK)
            sl->st = load(p, l, sl);
        pthread_mutex_lock(&p->mu);
        p->busy--;
        sl->state = SLOT_READY;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void stop_threads(dt_pipeline_t *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->loaders[i].thread, NULL);
    p->nthreads = 0;
}

void dt_pipeline_free(dt_pipeline_t *p)
{
    if (!p)
        return;
    stop_threads(p);
    int nl = p->o.threads > 0 ? p->o.threads : 1;
    for (int i = 0; p->loaders && i < nl; i++) {
        free(p->loaders[i].idx);
        free(p->loaders[i].scratch);
    }
    for (size_t i = 0; p->slots && i < p->nslots; i++) {
        if (p->pin) {
            dt_device_host_free(p->pin, p->slots[i].x);
            dt_device_host_free(p->pin, p->slots[i].y);
            continue;
        }
        free(p->slots[i].x);
        free(p->slots[i].y);
    }
    free(p->loaders);
    free(p->slots);
    dt_sampler_free(&p->smp);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* The ring's batch buffers: nslots x max_batch x sample_len floats. */
static dt_status_t alloc_slots(dt_pipeline_t *p)
{
    size_t len = p->ds->sample_len, b = p->o.max_batch;
    bool fits = len == 0 || b <= SIZE_MAX / sizeof(float) / len;
    for (size_t i = 0; fits && i < p->nslots; i++) {
        p->slots[i].x = malloc(b * len * sizeof(float));
        p->slots[i].y = malloc(b * sizeof(int32_t));
        if (!p->slots[i].x || !p->slots[i].y)
            fits = false;
    }
    if (fits)
        return DT_OK;
    bool ring = p->o.threads > 0;
    double bytes = (double)p->nslots * (double)b * (double)len * 4.0;
    dt_error("data pipeline: cannot allocate %.0f bytes (%.1f MiB) for the "
             "batch buffers (%zu buffer%s of %zu samples x %zu floats): set "
             "a smaller [train] batch_size%s", bytes, bytes / 1048576.0,
             p->nslots, ring ? "s, [data] prefetch + 1," : "", b, len,
             ring ? " or [data] prefetch" : "");
    return DT_ERR_NOMEM;
}

dt_status_t dt_pipeline_new(const dt_dataset_t *ds,
                            const dt_pipeline_opts_t *opts,
                            dt_pipeline_t **out)
{
    *out = NULL;
    if (!ds || !opts || opts->batch == 0 || opts->threads < 0 ||
        opts->prefetch < 1)
        return DT_ERR_INVALID;
    dt_pipeline_t *p = calloc(1, sizeof *p);
    if (!p)
        return DT_ERR_NOMEM;
    p->ds = ds;
    p->o = *opts;
    p->o.weights = NULL;
    if (p->o.max_batch < p->o.batch)
        p->o.max_batch = p->o.batch;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    dt_status_t st = dt_sampler_init(&p->smp, ds->n, opts->rank, opts->world,
                                     opts->seed, true, true);
    if (st != DT_OK) {
        dt_pipeline_free(p);
        return st;
    }
    if (st == DT_OK)
        st = dt_sampler_set_shares(&p->smp, opts->batch, opts->weights);
    if (st != DT_OK) {
        dt_pipeline_free(p);
        return st;
    }
    p->steps = dt_sampler_steps_from(ds->n, opts->world, opts->batch, 0);
    /* threads = 0: one buffer, filled inside next(). */
    p->nslots = opts->threads > 0 ? (size_t)opts->prefetch + 1 : 1;
    int nl = opts->threads > 0 ? opts->threads : 1;
    size_t len = ds->sample_len;
    p->slots = calloc(p->nslots, sizeof *p->slots);
    p->loaders = calloc((size_t)nl, sizeof *p->loaders);
    st = p->slots && p->loaders ? DT_OK : DT_ERR_NOMEM;
    if (st == DT_OK)
        st = alloc_slots(p);
    for (int i = 0; st == DT_OK && i < nl; i++) {
        p->loaders[i].p = p;
        p->loaders[i].idx = malloc(p->o.max_batch * sizeof(size_t));
        p->loaders[i].scratch = malloc(len ? len : 1);
        if (!p->loaders[i].idx || !p->loaders[i].scratch)
            st = DT_ERR_NOMEM;
    }
    /* Loaders take no signals: the worker's handlers run in its own
     * thread, as before. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; st == DT_OK && i < opts->threads; i++) {
        int rc = pthread_create(&p->loaders[i].thread, NULL, loader_main,
                                &p->loaders[i]);
        if (rc != 0) {
            dt_error("data loader thread %d of %d could not start (%s)",
                     i + 1, opts->threads, strerror(rc));
            st = DT_ERR_IO;
        } else {
            p->nthreads++;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (st != DT_OK) {
        dt_pipeline_free(p);
        return st;
    }
    *out = p;
    return DT_OK;
}

dt_status_t dt_pipeline_pin(dt_pipeline_t *p, dt_device_t *dev)
{
    if (!dev || dev->mem == DT_MEM_HOST || p->pin)
        return DT_OK;
    size_t xb = p->o.max_batch * p->ds->sample_len * sizeof(float),
           yb = p->o.max_batch * sizeof(int32_t);
    pthread_mutex_lock(&p->mu);
    if (p->started) {
        pthread_mutex_unlock(&p->mu);
        dt_error("dt_pipeline_pin after a seek: internal error, please "
                 "report");
        return DT_ERR_INTERNAL;
    }
    /* All or nothing: the new buffers first, then the swap. */
    dt_status_t st = DT_OK;
    void **nx = calloc(p->nslots, sizeof *nx),
         **ny = calloc(p->nslots, sizeof *ny);
    if (!nx || !ny)
        st = DT_ERR_NOMEM;
    for (size_t i = 0; st == DT_OK && i < p->nslots; i++) {
        st = dt_device_host_alloc(dev, xb, &nx[i]);
        if (st == DT_OK)
            st = dt_device_host_alloc(dev, yb, &ny[i]);
    }
    for (size_t i = 0; i < p->nslots && nx && ny; i++) {
        if (st != DT_OK) {
            dt_device_host_free(dev, nx[i]);
            dt_device_host_free(dev, ny[i]);
            continue;
        }
        free(p->slots[i].x);
        free(p->slots[i].y);
        p->slots[i].x = nx[i];
        p->slots[i].y = ny[i];
    }
    if (st == DT_OK)
        p->pin = dev;
    pthread_mutex_unlock(&p->mu);
    free(nx);
    free(ny);
    return st;
}

dt_status_t dt_pipeline_seek(dt_pipeline_t *p, uint64_t epoch, uint64_t step)
{
    return dt_pipeline_seek_from(p, epoch, 0, step);
}

uint64_t dt_pipeline_steps_from(const dt_pipeline_t *p, size_t start)
{
    return dt_sampler_steps_from(p->ds->n, p->o.world, p->o.batch, start);
}

dt_status_t dt_pipeline_set_shares(dt_pipeline_t *p, const double *weights)
{
    if (weights) {
        size_t share[p->o.world];
        dt_split_shares((size_t)p->o.world * p->o.batch, weights,
                        p->o.world, share);
        for (int r = 0; r < p->o.world; r++)
            if (share[r] > p->o.max_batch)
                return DT_ERR_INVALID;
    }
    pthread_mutex_lock(&p->mu);
    p->seeking = true;
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    dt_status_t st = dt_sampler_set_shares(&p->smp, p->o.batch, weights);
    p->started = false; /* until the seek that must follow */
    p->seeking = false;
    pthread_mutex_unlock(&p->mu);
    return st;
}

dt_status_t dt_pipeline_seek_from(dt_pipeline_t *p, uint64_t epoch,
                                  size_t start, uint64_t step)
{
    uint64_t part = 0;
    if (start >= p->ds->n)
        return DT_ERR_INVALID;
    if (start > 0) {
        part = dt_pipeline_steps_from(p, start);
        if (step >= part) { /* past the partial epoch: the next ones */
            step -= part;
            epoch++;
            start = 0;
            part = 0;
        }
    }
    if (step >= p->steps) {
        epoch += step / p->steps;
        step %= p->steps;
    }
    pthread_mutex_lock(&p->mu);
    /* Let the batches in hand finish; none is claimed meanwhile. */
    p->seeking = true;
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    for (size_t i = 0; i < p->nslots; i++)
        p->slots[i].state = SLOT_FREE;
    p->base_epoch = epoch;
    p->base_step = step;
    p->part_epoch = epoch;
    p->part_start = start;
    p->part_steps = part;
    p->next_claim = p->next_take = 0;
    p->held = false;
    p->started = true;
    p->seeking = false;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    return DT_OK;
}

static void fill(dt_batch_t *b, const slot_t *sl)
{
    b->x = sl->x;
    b->y = sl->y;
    b->count = sl->count;
    b->global = sl->global;
    b->epoch = sl->epoch;
    b->step = sl->step;
}

dt_status_t dt_pipeline_next(dt_pipeline_t *p, dt_batch_t *batch,
                             double *wait_seconds)
{
    double t0 = dt_clock_now();
    dt_status_t st = DT_OK;
    memset(batch, 0, sizeof *batch);
    if (wait_seconds)
        *wait_seconds = 0.0;
    pthread_mutex_lock(&p->mu);
    uint64_t seq = p->next_take;
    if (!p->started || past_end(p, seq)) {
        pthread_mutex_unlock(&p->mu);
        dt_error("data pipeline: %s", p->started
                                          ? "no batch after the last epoch"
                                          : "next batch before a seek");
        return DT_ERR_INVALID;
    }
    slot_t *sl = &p->slots[seq % p->nslots];
    if (p->nthreads == 0) {
        /* Synchronous: this thread is the loader. */
        st = claim(p, seq, p->loaders[0].idx, sl);
        if (st == DT_OK)
            st = load(p, &p->loaders[0], sl);
        sl->st = st;
        sl->state = SLOT_READY;
    } else {
        /* The batch before this one is done with: its slot is free. */
        p->held = false;
        pthread_cond_broadcast(&p->work);
        while (!(sl->state == SLOT_READY && sl->seq == seq))
            pthread_cond_wait(&p->done, &p->mu);
        st = sl->st;
    }
    p->next_take = seq + 1;
    p->held = true;
    pthread_mutex_unlock(&p->mu);
    if (st == DT_OK)
        fill(batch, sl);
    if (wait_seconds)
        *wait_seconds = dt_clock_now() - t0;
    return st;
}

dt_status_t dt_pipeline_opts_from_config(const dt_config_t *cfg,
                                         dt_pipeline_opts_t *opts)
{
    long long threads = 1, prefetch = 2;
    DT_CHECK(dt_config_get_int(cfg, "data", "loader_threads", &threads));
    DT_CHECK(dt_config_get_int(cfg, "data", "prefetch", &prefetch));
    const char *where = "default";
    if (threads < 0 || threads > 64) {
        dt_config_origin(cfg, "data", "loader_threads", NULL, &where);
        dt_error("%s: [data] loader_threads = %lld: use 0 (load in the "
                 "training thread) to 64", where, threads);
        return DT_ERR_CONFIG;
    }
    if (prefetch < 1 || prefetch > 64) {
        dt_config_origin(cfg, "data", "prefetch", NULL, &where);
        dt_error("%s: [data] prefetch = %lld: batches loaded ahead of the "
                 "step, 1 to 64", where, prefetch);
        return DT_ERR_CONFIG;
    }
    opts->threads = (int)threads;
    opts->prefetch = (int)prefetch;
    return DT_OK;
}
