/* sampler.c — distributed sampler: per-epoch shuffle, padding, sharding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "sampler.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound) without modulo bias (rejection of the short tail). */
static uint64_t below(uint64_t *state, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do
        r = splitmix64(state);
    while (r >= limit);
    return r % bound;
}

void dt_shuffle_indices(size_t *order, size_t n, uint64_t seed,
                        uint64_t epoch)
{
    /* Mix seed and epoch so neighbouring seeds/epochs give unrelated
     * streams. */
    uint64_t mix = seed;
    uint64_t state = splitmix64(&mix) ^ (epoch * 0xd1342543de82ef95ull);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)below(&state, i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

dt_status_t dt_sampler_init(dt_sampler_t *s, size_t n, int rank, int world,
                            uint64_t seed, bool shuffle, bool pad)
{
    memset(s, 0, sizeof *s);
    if (world < 1 || rank < 0 || rank >= world) {
        dt_error("sampler: rank %d is not in 0..%d", rank, world - 1);
        return DT_ERR_INVALID;
    }
    if (n == 0) {
        dt_error("sampler: the data set is empty");
        return DT_ERR_INVALID;
    }
    s->n = n;
    s->rank = rank;
    s->world = world;
    s->seed = seed;
    s->shuffle = shuffle;
    s->pad = pad;
    s->count = dt_sampler_count_from(n, rank, world, 0, pad);
    s->epoch_count = s->count;
    s->cap = s->count ? s->count : 1;
    s->indices = malloc(s->cap * sizeof *s->indices);
    s->order = malloc(n * sizeof *s->order);
    if (!s->indices || !s->order) {
        dt_sampler_free(s);
        return DT_ERR_NOMEM;
    }
    s->epoch = UINT64_MAX; /* no epoch computed yet */
    return DT_OK;
}

size_t dt_sampler_count_from(size_t n, int rank, int world, size_t start,
                             bool pad)
{
    if (world < 1 || start >= n)
        return 0;
    size_t m = n - start, w = (size_t)world, r = (size_t)rank;
    return pad ? (m + w - 1) / w : (m > r ? (m - r + w - 1) / w : 0);
}

dt_status_t dt_sampler_set_epoch(dt_sampler_t *s, uint64_t epoch)
{
    return dt_sampler_set_epoch_from(s, epoch, 0);
}

dt_status_t dt_sampler_set_epoch_from(dt_sampler_t *s, uint64_t epoch,
                                      size_t start)
{
    if (!s->order || start >= s->n)
        return DT_ERR_INVALID;
    if (s->shuffle)
        dt_shuffle_indices(s->order, s->n, s->seed, epoch);
    else
        for (size_t i = 0; i < s->n; i++)
            s->order[i] = i;
    /* Position p of the padded order (counted from start) is
     * order[start + p mod (n - start)] (wrapping). */
    size_t m = s->n - start;
    if (s->weights) {
        size_t w = (size_t)s->world, B = w * s->batch;
        size_t T = (m + w - 1) / w * w; /* the padded positions */
        size_t k = 0, *share = malloc(w * sizeof *share);
        if (!share)
            return DT_ERR_NOMEM;
        for (size_t g = 0; g < T; g += B) {
            size_t G = T - g < B ? T - g : B, off = g;
            dt_split_shares(G, s->weights, s->world, share);
            for (int r = 0; r < s->rank; r++)
                off += share[r];
            for (size_t j = 0; j < share[s->rank] && k < s->cap; j++)
                s->indices[k++] = s->order[start + (off + j) % m];
        }
        free(share);
        s->epoch_count = k;
        s->epoch = epoch;
        s->start = start;
        return DT_OK;
    }
    s->epoch_count = dt_sampler_count_from(s->n, s->rank, s->world, start,
                                           s->pad);
    for (size_t k = 0; k < s->epoch_count; k++) {
        size_t p = (size_t)s->rank + k * (size_t)s->world;
        s->indices[k] = s->order[start + p % m];
    }
    s->epoch = epoch;
    s->start = start;
    return DT_OK;
}

void dt_split_shares(size_t total, const double *weights, int world,
                     size_t *out)
{
    double sum = 0.0;
    for (int r = 0; r < world; r++)
        sum += weights[r];
    size_t given = 0;
    for (int r = 0; r < world; r++) {
        double ideal = (double)total * weights[r] / sum;
        size_t f = (size_t)floor(ideal);
        if (f > total)
            f = total;
        out[r] = f;
        given += f;
    }
    /* The rest, one each, to the largest remainders (lower rank first). */
    while (given < total) {
        int best = 0;
        double bf = -1.0;
        for (int r = 0; r < world; r++) {
            double frac = (double)total * weights[r] / sum - (double)out[r];
            if (frac > bf) {
                bf = frac;
                best = r;
            }
        }
        out[best]++;
        given++;
    }
    while (given > total) { /* rounding of floor() above: cannot, but safe */
        int big = 0;
        for (int r = 1; r < world; r++)
            if (out[r] > out[big])
                big = r;
        out[big]--;
        given--;
    }
    /* Nobody idle: a rank with 0 takes one from the largest share. */
    for (int r = 0; r < world && total >= (size_t)world; r++) {
        if (out[r] > 0)
            continue;
        int big = 0;
        for (int q = 1; q < world; q++)
            if (out[q] > out[big])
                big = q;
        out[big]--;
        out[r]++;
    }
}

dt_status_t dt_sampler_set_shares(dt_sampler_t *s, size_t batch,
                                  const double *weights)
{
    bool equal = true;
    for (int r = 0; weights && r < s->world; r++) {
        if (!(weights[r] > 0.0) || !isfinite(weights[r]))
            return DT_ERR_INVALID;
        if (weights[r] != weights[0])
            equal = false;
    }
    if (batch == 0)
        return DT_ERR_INVALID;
    free(s->weights);
    s->weights = NULL;
    s->batch = batch;
    s->epoch = UINT64_MAX;
    s->count = dt_sampler_count_from(s->n, s->rank, s->world, 0, s->pad);
    s->epoch_count = s->count;
    if (!weights || equal || s->world == 1 || !s->pad)
        return DT_OK;
    s->weights = malloc((size_t)s->world * sizeof *s->weights);
    if (!s->weights)
        return DT_ERR_NOMEM;
    memcpy(s->weights, weights, (size_t)s->world * sizeof *s->weights);
    /* Any share fits in the padded order's length. */
    size_t w = (size_t)s->world, T = (s->n + w - 1) / w * w;
    if (s->cap < T) {
        size_t *v = realloc(s->indices, T * sizeof *v);
        if (!v)
            return DT_ERR_NOMEM;
        s->indices = v;
        s->cap = T;
    }
    /* count: this rank's samples in a whole epoch (from position 0). */
    size_t B = w * batch, *share = malloc(w * sizeof *share);
    if (!share)
        return DT_ERR_NOMEM;
    s->count = 0;
    for (size_t g = 0; g < T; g += B) {
        dt_split_shares(T - g < B ? T - g : B, s->weights, s->world, share);
        s->count += share[s->rank];
    }
    free(share);
    s->epoch_count = s->count;
    return DT_OK;
}

void dt_sampler_step(const dt_sampler_t *s, size_t batch, uint64_t step,
                     size_t *at, size_t *count, size_t *global)
{
    size_t w = (size_t)s->world;
    if (!s->weights) {
        size_t a = (size_t)step * batch;
        size_t c = a < s->epoch_count ? s->epoch_count - a : 0;
        *at = a;
        *count = c < batch ? c : batch;
        if (global) {
            /* Equal shares: every rank the same count (pad), or that of
             * each rank summed (no pad). */
            size_t g = 0;
            for (int r = 0; r < s->world; r++) {
                size_t cr = dt_sampler_count_from(s->n, r, s->world,
                                                  s->start, s->pad);
                size_t ar = cr > a ? cr - a : 0;
                g += ar < batch ? ar : batch;
            }
            *global = g;
        }
        return;
    }
    size_t m = s->n - s->start, T = (m + w - 1) / w * w, B = w * batch;
    size_t share[w], full[w];
    dt_split_shares(B, s->weights, s->world, full);
    size_t g = (size_t)step * B;
    size_t G = g < T ? (T - g < B ? T - g : B) : 0;
    if (G)
        dt_split_shares(G, s->weights, s->world, share);
    else
        memset(share, 0, sizeof share);
    *at = (size_t)step * full[s->rank];
    *count = share[s->rank];
    if (global)
        *global = G;
}

uint64_t dt_sampler_steps_from(size_t n, int world, size_t batch,
                               size_t start)
{
    if (world < 1 || batch == 0 || start >= n)
        return 0;
    size_t w = (size_t)world, m = n - start;
    return ((m + w - 1) / w + batch - 1) / batch;
}

void dt_sampler_free(dt_sampler_t *s)
{
    if (!s)
        return;
    free(s->weights);
    free(s->indices);
    free(s->order);
    memset(s, 0, sizeof *s);
}
