/* sampler.h — which samples this rank sees in an epoch (internal).
 *
 * Semantics of PyTorch's DistributedSampler (drop_last=False):
 * - the epoch's order is a permutation of 0..n-1 seeded by (seed, epoch)
 *   (identity order when shuffle is off), the same on every rank;
 * - it is padded by wrapping around to total = ceil(n / world) * world;
 * - rank r takes positions r, r + world, r + 2*world, ... so every rank
 *   has ceil(n / world) samples, the shards are disjoint apart from the
 *   padding, and together they cover the whole set every epoch.
 * With pad off (evaluation), nothing is repeated: rank r takes the
 * positions below n only, and shards differ in length by at most one. */
#ifndef DT_DATA_SAMPLER_H
#define DT_DATA_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

typedef struct dt_sampler {
    size_t n;            /* data set size                                 */
    int rank, world;
    uint64_t seed;
    bool shuffle, pad;
    uint64_t epoch;      /* the epoch `indices` belongs to                */
    size_t count;        /* samples of this rank in every epoch           */
    size_t *indices;     /* count entries: this rank's shard              */
    size_t *order;       /* scratch: the epoch's global order             */
} dt_sampler_t;

dt_status_t dt_sampler_init(dt_sampler_t *s, size_t n, int rank, int world,
                            uint64_t seed, bool shuffle, bool pad);
/* Compute this rank's shard of the given epoch. */
dt_status_t dt_sampler_set_epoch(dt_sampler_t *s, uint64_t epoch);
void dt_sampler_free(dt_sampler_t *s);

/* The permutation of 0..n-1 for (seed, epoch): Fisher-Yates driven by a
 * counter-based generator, identical on every platform. */
void dt_shuffle_indices(size_t *order, size_t n, uint64_t seed,
                        uint64_t epoch);

#endif /* DT_DATA_SAMPLER_H */
