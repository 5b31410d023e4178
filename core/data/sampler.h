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
 * positions below n only, and shards differ in length by at most one.
 *
 * An epoch may also start at a position `start` of its order (a job
 * resumed at another world size in the middle of an epoch: the positions
 * before start were seen by the previous workers): the same rules then
 * apply to the remaining positions start..n-1 (padding wraps within
 * them), so the epoch still sees every sample once, apart from padding. */
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
    size_t start;        /* ... and the position it started at (0)        */
    size_t count;        /* samples of this rank in every whole epoch     */
    size_t epoch_count;  /* samples of this rank in `epoch` (from start)  */
    size_t *indices;     /* count entries: this rank's shard              */
    size_t *order;       /* scratch: the epoch's global order             */
} dt_sampler_t;

dt_status_t dt_sampler_init(dt_sampler_t *s, size_t n, int rank, int world,
                            uint64_t seed, bool shuffle, bool pad);
/* Compute this rank's shard of the given epoch. */
dt_status_t dt_sampler_set_epoch(dt_sampler_t *s, uint64_t epoch);
/* The same for an epoch that starts at position start (< n) of its order:
 * epoch_count = dt_sampler_count_from(n, world, start, ...) entries. */
dt_status_t dt_sampler_set_epoch_from(dt_sampler_t *s, uint64_t epoch,
                                      size_t start);
/* Samples of rank `rank` in an epoch of n that starts at `start`. */
size_t dt_sampler_count_from(size_t n, int rank, int world, size_t start,
                             bool pad);
void dt_sampler_free(dt_sampler_t *s);

/* The permutation of 0..n-1 for (seed, epoch): Fisher-Yates driven by a
 * counter-based generator, identical on every platform. */
void dt_shuffle_indices(size_t *order, size_t n, uint64_t seed,
                        uint64_t epoch);

#endif /* DT_DATA_SAMPLER_H */
