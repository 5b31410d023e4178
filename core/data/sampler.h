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
 * them), so the epoch still sees every sample once, apart from padding.
 *
 * Unequal shares ([cluster] work_load, dt_sampler_set_shares): the padded
 * order is cut into global batches of world x batch positions (the last
 * one shorter, as with equal shares: the same global batches), and each
 * global batch of G positions is split by dt_split_shares: rank r takes
 * the contiguous run of its b_r positions after those of ranks 0..r-1.
 * Equal weights keep the interleaved layout above, bit for bit. */
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
    /* Unequal shares (NULL weights: equal shares, the layout above). */
    double *weights;     /* world entries, > 0                            */
    size_t batch;        /* per-rank batch of the equal split             */
    size_t cap;          /* entries allocated in indices                  */
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

/* Split a global batch of `total` samples over world ranks in proportion
 * to weights (> 0): out[r] = round(total x w_r / sum w) by largest
 * remainders (ties to the lower rank), so the shares sum to total exactly;
 * then every rank with 0 takes one from the largest share (total >= world
 * keeps every rank at least 1 sample). Deterministic: the same on every
 * rank. Equal weights and total divisible by world: total / world each. */
void dt_split_shares(size_t total, const double *weights, int world,
                     size_t *out);
/* Unequal shares from the next dt_sampler_set_epoch*: weights has world
 * entries (> 0, copied); NULL or all equal: the equal layout. batch is the
 * per-rank batch of the equal split (world x batch is the global batch).
 * Invalidates the computed epoch. */
dt_status_t dt_sampler_set_shares(dt_sampler_t *s, size_t batch,
                                  const double *weights);
/* Where step `step` of the computed epoch lies in indices: *at, *count;
 * *global (may be NULL): the samples of that step over all ranks. Equal
 * shares: at = step x batch. */
void dt_sampler_step(const dt_sampler_t *s, size_t batch, uint64_t step,
                     size_t *at, size_t *count, size_t *global);
/* Steps of an epoch of n that starts at start: the same for every rank
 * and for equal or unequal shares. */
uint64_t dt_sampler_steps_from(size_t n, int world, size_t batch,
                               size_t start);

/* The permutation of 0..n-1 for (seed, epoch): Fisher-Yates driven by a
 * counter-based generator, identical on every platform. */
void dt_shuffle_indices(size_t *order, size_t n, uint64_t seed,
                        uint64_t epoch);

#endif /* DT_DATA_SAMPLER_H */
