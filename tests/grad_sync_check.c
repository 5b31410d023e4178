/* grad_sync_check.c — the trainer's gradient averaging (core/train/
 * grad_sync.c) on every rank of a real job (tests/grad_sync.sh runs it
 * under dtctl run): ranges reported from the end of the buffer towards its
 * start, in uneven pieces, become buckets that the communication thread
 * averages while "backward" goes on; after finish every float is the mean
 * over ranks, for several steps with new values; every rank used the same
 * number of buckets; a range out of order is refused. Prints one ok line
 * and exits 0, or names the first wrong float and exits 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <dt/dt.h>
#include "train/grad_sync.h"

#define N 1000
#define BUCKET_FLOATS 64

static float value(int rank, int step, size_t i)
{
    return (float)(rank * 1000 + step * 7) + (float)i * 0.5f;
}

int main(void)
{
    if (dt_init() != DT_OK)
        return 1;
    int rank = dt_rank(), world = dt_size();
    static float grads[N];
    dt_grad_sync_t *s;
    if (dt_grad_sync_new(grads, N, NULL, BUCKET_FLOATS * sizeof(float), world,
                         &s) != DT_OK)
        return 1;
    /* Uneven layer sizes, last layer first, as a model reports them; the
     * first 20 floats stay short of a bucket, for finish to reduce. */
    static const size_t pieces[] = {3, 100, 37, 1, 64, 250, 5, 140, 380, 20};
    int bad = 0;
    for (int step = 0; step < 3 && !bad; step++) {
        for (size_t i = 0; i < N; i++)
            grads[i] = value(rank, step, i);
        size_t hi = N;
        for (size_t p = 0; hi > 0; p++) {
            size_t len = pieces[p % (sizeof pieces / sizeof *pieces)];
            if (len > hi)
                len = hi;
            if (dt_grad_sync_ready(s, hi - len, len) != DT_OK)
                return 1;
            hi -= len;
        }
        if (dt_grad_sync_finish(s, NULL) != DT_OK)
            return 1;
        for (size_t i = 0; i < N && !bad; i++) {
            double want = 0;
            for (int r = 0; r < world; r++)
                want += value(r, step, i);
            want /= world;
            if (fabs(grads[i] - want) > 1e-3) {
                fprintf(stderr, "rank %d step %d: grads[%zu] = %g, want %g\n",
                        rank, step, i, (double)grads[i], want);
                bad = 1;
            }
        }
    }
    /* The same buckets on every rank (collectives stay matched), and more
     * than one: averaging overlapped the reports. */
    double b[2] = {(double)dt_grad_sync_buckets(s),
                   -(double)dt_grad_sync_buckets(s)};
    if (dt_allreduce(b, b, 2, DT_FLOAT64, DT_MAX) != DT_OK)
        return 1;
    size_t buckets = dt_grad_sync_buckets(s);
    if (!bad && (b[0] != (double)buckets || -b[1] != (double)buckets)) {
        fprintf(stderr, "rank %d: %zu buckets, others between %g and %g\n",
                rank, buckets, -b[1], b[0]);
        bad = 1;
    }
    if (!bad && world > 1 && buckets < 2) {
        fprintf(stderr, "rank %d: %zu bucket(s) for %d floats in buckets of "
                "%d\n", rank, buckets, N, BUCKET_FLOATS);
        bad = 1;
    }
    /* A range that does not end where the last one began is a bug in the
     * model: refused, not averaged. */
    if (!bad && world > 1 &&
        dt_grad_sync_ready(s, 0, 10) != DT_ERR_INTERNAL) {
        fprintf(stderr, "rank %d: an out-of-order range was accepted\n", rank);
        bad = 1;
    }
    dt_grad_sync_free(s);
    if (!bad)
        printf("ok: rank %d of %d averaged 3 steps in %zu buckets\n", rank,
               world, buckets);
    dt_finalize();
    return bad;
}
