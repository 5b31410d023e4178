/* sampler.c — distributed sampler: per-epoch shuffle, padding, sharding. */
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
    s->indices = malloc((s->count ? s->count : 1) * sizeof *s->indices);
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

void dt_sampler_free(dt_sampler_t *s)
{
    if (!s)
        return;
    free(s->indices);
    free(s->order);
    memset(s, 0, sizeof *s);
}
