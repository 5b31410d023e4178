/* test_sampler.c — DistributedSampler semantics: equal shard lengths,
 * disjoint shards that cover the set, padding by wrapping, per-epoch
 * shuffles that every rank agrees on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "data/sampler.h"

/* Every rank's shard of one epoch; returns how often each index appears. */
static size_t *coverage(size_t n, int world, uint64_t seed, uint64_t epoch,
                        bool pad, size_t *total)
{
    size_t *seen = calloc(n, sizeof *seen);
    assert_non_null(seen);
    *total = 0;
    size_t len0 = 0;
    for (int r = 0; r < world; r++) {
        dt_sampler_t s;
        assert_int_equal(dt_sampler_init(&s, n, r, world, seed, true, pad),
                         DT_OK);
        assert_int_equal(dt_sampler_set_epoch(&s, epoch), DT_OK);
        if (pad) {
            /* equal length on every rank: ceil(n / world) */
            assert_int_equal(s.count, (n + (size_t)world - 1) / (size_t)world);
        } else if (r == 0) {
            len0 = s.count;
        } else {
            assert_true(s.count == len0 || s.count + 1 == len0);
        }
        for (size_t k = 0; k < s.count; k++) {
            assert_true(s.indices[k] < n);
            seen[s.indices[k]]++;
        }
        *total += s.count;
        dt_sampler_free(&s);
    }
    return seen;
}

static void test_disjoint_and_covering(void **state)
{
    (void)state;
    const size_t sizes[] = {1, 2, 7, 10, 60, 97, 1000};
    const int worlds[] = {1, 2, 3, 4, 8};
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
        for (size_t b = 0; b < sizeof worlds / sizeof *worlds; b++) {
            size_t n = sizes[a], total;
            int w = worlds[b];
            size_t *seen = coverage(n, w, 42, 3, true, &total);
            size_t padded = (n + (size_t)w - 1) / (size_t)w * (size_t)w;
            assert_int_equal(total, padded);
            /* Every sample at least once; only the padding repeats, so no
             * sample appears more than ceil(padded / n) times. */
            size_t extra = 0, most = (padded + n - 1) / n;
            for (size_t i = 0; i < n; i++) {
                assert_true(seen[i] >= 1);
                assert_true(seen[i] <= most);
                extra += seen[i] - 1;
            }
            assert_int_equal(extra, padded - n);
            free(seen);
            /* without padding: exactly once each */
            seen = coverage(n, w, 42, 3, false, &total);
            assert_int_equal(total, n);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(seen[i], 1);
            free(seen);
        }
}

/* Padding wraps to the start of the epoch's order, as torch does. */
static void test_padding_wraps(void **state)
{
    (void)state;
    size_t n = 10, order[10];
    dt_shuffle_indices(order, n, 7, 1);
    dt_sampler_t s;
    /* 10 samples over 4 ranks: padded to 12 = order + order[0..1] */
    assert_int_equal(dt_sampler_init(&s, n, 3, 4, 7, true, true), DT_OK);
    assert_int_equal(dt_sampler_set_epoch(&s, 1), DT_OK);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.indices[0], order[3]);
    assert_int_equal(s.indices[1], order[7]);
    assert_int_equal(s.indices[2], order[11 % 10]);
    dt_sampler_free(&s);
}

static int is_permutation(const size_t *p, size_t n)
{
    char *seen = calloc(n, 1);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        ok = p[i] < n && !seen[p[i]];
        if (ok)
            seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

static void test_shuffle_per_epoch(void **state)
{
    (void)state;
    enum { N = 500 };
    size_t a[N], b[N], c[N], d[N];
    dt_shuffle_indices(a, N, 1, 0);
    dt_shuffle_indices(b, N, 1, 0);
    dt_shuffle_indices(c, N, 1, 1);
    dt_shuffle_indices(d, N, 2, 0);
    assert_true(is_permutation(a, N));
    assert_true(is_permutation(c, N));
    assert_memory_equal(a, b, sizeof a);      /* same (seed, epoch)  */
    assert_memory_not_equal(a, c, sizeof a);  /* next epoch differs  */
    assert_memory_not_equal(a, d, sizeof a);  /* other seed differs  */
    size_t fixed = 0;
    for (size_t i = 0; i < N; i++)
        fixed += a[i] == i;
    assert_true(fixed < 20); /* a shuffle, not the identity */

    /* Without shuffle the order is 0..n-1 sharded round-robin. */
    dt_sampler_t s;
    assert_int_equal(dt_sampler_init(&s, 9, 1, 2, 5, false, true), DT_OK);
    assert_int_equal(dt_sampler_set_epoch(&s, 4), DT_OK);
    size_t want[5] = {1, 3, 5, 7, 0};
    assert_memory_equal(s.indices, want, sizeof want);
    dt_sampler_free(&s);
}

/* dt_sampler_set_epoch itself: every rank (its own sampler, as in a real
 * job) computes the same order for an epoch, so the shards are disjoint
 * and cover the set; epochs 0 and 1 give different orders and different
 * shards on every rank; going back to epoch 0 gives epoch 0's shard again
 * (the epoch decides, not how many epochs came before). */
static void test_set_epoch_changes_order(void **state)
{
    (void)state;
    enum { N = 96, W = 4, C = N / W };
    dt_sampler_t s[W];
    size_t shard[2][W][C];
    for (int r = 0; r < W; r++)
        assert_int_equal(dt_sampler_init(&s[r], N, r, W, 11, true, true),
                         DT_OK);
    for (int e = 0; e < 2; e++) {
        size_t order[N];
        char seen[N] = {0};
        for (int r = 0; r < W; r++) {
            assert_int_equal(dt_sampler_set_epoch(&s[r], (uint64_t)e), DT_OK);
            assert_int_equal(s[r].epoch, (uint64_t)e);
            assert_int_equal(s[r].count, C);
            memcpy(shard[e][r], s[r].indices, sizeof shard[e][r]);
            for (size_t k = 0; k < C; k++) {
                size_t i = s[r].indices[k];
                assert_true(i < N);
                assert_int_equal(seen[i], 0); /* disjoint: ranks agree */
                seen[i] = 1;
                order[(size_t)r + k * W] = i;
            }
        }
        /* a cover of the set, in a shuffled order */
        size_t fixed = 0;
        for (size_t i = 0; i < N; i++) {
            assert_int_equal(seen[i], 1);
            fixed += order[i] == i;
        }
        assert_true(fixed < N / 4);
    }
    for (int r = 0; r < W; r++) {
        if (memcmp(shard[0][r], shard[1][r], sizeof shard[0][r]) == 0)
            fail_msg("rank %d has the same shard in epochs 0 and 1: "
                     "dt_sampler_set_epoch ignored the epoch", r);
        /* not merely the same samples in another order: the shard of an
         * epoch is a different draw from the set */
        size_t same = 0;
        for (size_t a = 0; a < C; a++)
            for (size_t b = 0; b < C; b++)
                same += shard[0][r][a] == shard[1][r][b];
        assert_true(same < C);
        assert_int_equal(dt_sampler_set_epoch(&s[r], 0), DT_OK);
        assert_memory_equal(s[r].indices, shard[0][r], sizeof shard[0][r]);
        dt_sampler_free(&s[r]);
    }
}

/* One rank with batch 2B sees, step by step, the union of what two ranks
 * with batch B see: the basis of N-invariance at equal global batch. */
static void test_global_batches_match(void **state)
{
    (void)state;
    enum { N = 64, B = 4 };
    dt_sampler_t one, r0, r1;
    assert_int_equal(dt_sampler_init(&one, N, 0, 1, 9, true, true), DT_OK);
    assert_int_equal(dt_sampler_init(&r0, N, 0, 2, 9, true, true), DT_OK);
    assert_int_equal(dt_sampler_init(&r1, N, 1, 2, 9, true, true), DT_OK);
    dt_sampler_set_epoch(&one, 2);
    dt_sampler_set_epoch(&r0, 2);
    dt_sampler_set_epoch(&r1, 2);
    for (size_t step = 0; step < N / (2 * B); step++) {
        size_t got[2 * B], want[2 * B];
        memcpy(want, one.indices + step * 2 * B, sizeof want);
        memcpy(got, r0.indices + step * B, B * sizeof *got);
        memcpy(got + B, r1.indices + step * B, B * sizeof *got);
        /* same set of samples in this step */
        for (size_t i = 0; i < 2 * B; i++) {
            int found = 0;
            for (size_t j = 0; j < 2 * B; j++)
                found |= got[j] == want[i];
            assert_true(found);
        }
    }
    dt_sampler_free(&one);
    dt_sampler_free(&r0);
    dt_sampler_free(&r1);
}

/* A job resumed at another world size in the middle of an epoch: the old
 * workers (world w, batch b) had done `steps` steps, i.e. seen positions
 * 0 .. steps*b*w - 1 of the epoch's order; the new ones (world w2) shard
 * the rest from that position. Over the whole epoch every sample is seen,
 * none by both the old and the new workers, and the only repeats are the
 * new workers' padding (fewer than w2). Also: start 0 is the whole
 * epoch, start >= n is refused. */
static void check_resize(size_t n, int w, size_t b, size_t steps, int w2)
{
    size_t start = steps * b * (size_t)w;
    assert_true(start < n);
    int *old_seen = calloc(n, sizeof *old_seen);
    int *new_seen = calloc(n, sizeof *new_seen);
    assert_non_null(old_seen);
    assert_non_null(new_seen);
    for (int r = 0; r < w; r++) {
        dt_sampler_t s;
        assert_int_equal(dt_sampler_init(&s, n, r, w, 11, true, true), DT_OK);
        assert_int_equal(dt_sampler_set_epoch(&s, 4), DT_OK);
        assert_true(steps * b <= s.count);
        for (size_t k = 0; k < steps * b; k++)
            old_seen[s.indices[k]]++;
        dt_sampler_free(&s);
    }
    size_t total = 0;
    for (int r = 0; r < w2; r++) {
        dt_sampler_t s;
        assert_int_equal(dt_sampler_init(&s, n, r, w2, 11, true, true),
                         DT_OK);
        assert_int_equal(dt_sampler_set_epoch_from(&s, 4, start), DT_OK);
        assert_int_equal(s.start, start);
        assert_int_equal(s.epoch_count,
                         dt_sampler_count_from(n, r, w2, start, true));
        assert_int_equal(s.epoch_count,
                         (n - start + (size_t)w2 - 1) / (size_t)w2);
        for (size_t k = 0; k < s.epoch_count; k++)
            new_seen[s.indices[k]]++;
        total += s.epoch_count;
        /* Back to a whole epoch: the ordinary shard again. */
        assert_int_equal(dt_sampler_set_epoch(&s, 4), DT_OK);
        assert_int_equal(s.epoch_count, s.count);
        assert_int_equal(dt_sampler_set_epoch_from(&s, 4, n), DT_ERR_INVALID);
        dt_sampler_free(&s);
    }
    size_t repeats = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(old_seen[i] <= 1);             /* old: no padding yet */
        assert_true(old_seen[i] + new_seen[i] >= 1); /* nothing skipped    */
        assert_false(old_seen[i] && new_seen[i]);  /* nothing seen twice  */
        if (new_seen[i] > 1)
            repeats += (size_t)new_seen[i] - 1;
    }
    assert_int_equal(total, n - start + repeats);
    assert_true(repeats < (size_t)w2);
    free(old_seen);
    free(new_seen);
}

static void test_resume_other_world(void **state)
{
    (void)state;
    check_resize(1000, 2, 16, 10, 3); /* 320 seen, off the 48 grid      */
    check_resize(1000, 2, 16, 10, 1);
    check_resize(1000, 4, 16, 7, 2);
    check_resize(997, 3, 5, 20, 4);   /* padding at both sizes          */
    check_resize(997, 1, 7, 100, 5);
    check_resize(50, 4, 3, 4, 7);     /* 2 left for 7 workers: repeats  */
}

/* Unequal shares: every global batch split in proportion, shares summing
 * exactly; the ranks' shards together are the same global batches as with
 * equal shares (the same positions of the same order), so an epoch still
 * covers the set once apart from padding. */
static void check_shares(size_t n, int world, size_t batch,
                         const double *w, uint64_t epoch)
{
    uint64_t steps = dt_sampler_steps_from(n, world, batch, 0);
    dt_sampler_t eq[world], un[world];
    for (int r = 0; r < world; r++) {
        assert_int_equal(dt_sampler_init(&eq[r], n, r, world, 9, true, true),
                         DT_OK);
        assert_int_equal(dt_sampler_init(&un[r], n, r, world, 9, true, true),
                         DT_OK);
        assert_int_equal(dt_sampler_set_shares(&un[r], batch, w), DT_OK);
        assert_int_equal(dt_sampler_set_epoch(&eq[r], epoch), DT_OK);
        assert_int_equal(dt_sampler_set_epoch(&un[r], epoch), DT_OK);
    }
    double wsum = 0;
    for (int r = 0; r < world; r++)
        wsum += w[r];
    size_t total = 0;
    for (uint64_t s = 0; s < steps; s++) {
        /* The multiset of this step's indices: equal vs unequal. */
        size_t *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
        size_t ga = 0, gb = 0;
        for (int r = 0; r < world; r++) {
            size_t at, c, g;
            dt_sampler_step(&eq[r], batch, s, &at, &c, &g);
            for (size_t k = 0; k < c; k++)
                a[eq[r].indices[at + k]]++;
            ga += c;
            dt_sampler_step(&un[r], batch, s, &at, &c, &g);
            assert_true(c >= 1);
            assert_true(at + c <= un[r].epoch_count);
            for (size_t k = 0; k < c; k++)
                b[un[r].indices[at + k]]++;
            gb += c;
            /* proportional: within one sample of G w_r / sum w (less
             * the samples the smallest ranks took to keep one each) */
            double ideal = (double)g * w[r] / wsum;
            assert_true((double)c < ideal + 1.0 + 1e-9 || c == 1);
            assert_true((double)c > ideal - (double)world - 1e-9);
        }
        assert_int_equal(ga, gb);
        assert_memory_equal(a, b, n * sizeof *a);
        total += gb;
        free(a);
        free(b);
    }
    assert_int_equal(total, (n + (size_t)world - 1) / (size_t)world *
                                (size_t)world);
    for (int r = 0; r < world; r++) {
        dt_sampler_free(&eq[r]);
        dt_sampler_free(&un[r]);
    }
}

static void test_unequal_shares(void **state)
{
    (void)state;
    double w1[] = {1, 1, 2, 2};
    check_shares(1000, 4, 16, w1, 0);
    check_shares(997, 4, 16, w1, 3); /* a short last global batch */
    double w2[] = {1, 1, 0.48};
    check_shares(600, 3, 64, w2, 1);
    check_shares(61, 3, 64, w2, 2); /* one short global batch only */
    double w3[] = {100, 1, 1};     /* small ranks keep at least one */
    check_shares(300, 3, 8, w3, 0);
}

static void test_split_shares(void **state)
{
    (void)state;
    size_t out[4];
    double w[] = {1, 1, 2, 2};
    dt_split_shares(64, w, 4, out);
    assert_int_equal(out[0], 11); /* 10.67 10.67 21.33 21.33 */
    assert_int_equal(out[1], 11);
    assert_int_equal(out[2], 21);
    assert_int_equal(out[3], 21);
    double e[] = {1, 1, 1};
    dt_split_shares(96, e, 3, out);
    assert_int_equal(out[0], 32);
    assert_int_equal(out[1], 32);
    assert_int_equal(out[2], 32);
    double z[] = {1000, 1, 1};
    dt_split_shares(3, z, 3, out); /* nobody idle */
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 1);
    assert_int_equal(out[2], 1);
}

/* Equal weights: the equal layout, bit for bit (and N = 1). */
static void test_equal_weights_identical(void **state)
{
    (void)state;
    double w[] = {2, 2, 2};
    for (int r = 0; r < 3; r++) {
        dt_sampler_t a, b;
        assert_int_equal(dt_sampler_init(&a, 1001, r, 3, 5, true, true),
                         DT_OK);
        assert_int_equal(dt_sampler_init(&b, 1001, r, 3, 5, true, true),
                         DT_OK);
        assert_int_equal(dt_sampler_set_shares(&b, 16, w), DT_OK);
        assert_null(b.weights);
        assert_int_equal(dt_sampler_set_epoch(&a, 2), DT_OK);
        assert_int_equal(dt_sampler_set_epoch(&b, 2), DT_OK);
        assert_int_equal(a.epoch_count, b.epoch_count);
        assert_memory_equal(a.indices, b.indices,
                            a.epoch_count * sizeof *a.indices);
        dt_sampler_free(&a);
        dt_sampler_free(&b);
    }
    double bad[] = {1, 0, 1};
    dt_sampler_t s;
    assert_int_equal(dt_sampler_init(&s, 10, 0, 3, 0, true, true), DT_OK);
    assert_int_equal(dt_sampler_set_shares(&s, 4, bad), DT_ERR_INVALID);
    dt_sampler_free(&s);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    dt_sampler_t s;
    assert_int_equal(dt_sampler_init(&s, 10, 2, 2, 0, true, true),
                     DT_ERR_INVALID);
    assert_int_equal(dt_sampler_init(&s, 10, -1, 2, 0, true, true),
                     DT_ERR_INVALID);
    assert_int_equal(dt_sampler_init(&s, 0, 0, 1, 0, true, true),
                     DT_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disjoint_and_covering),
        cmocka_unit_test(test_padding_wraps),
        cmocka_unit_test(test_shuffle_per_epoch),
        cmocka_unit_test(test_set_epoch_changes_order),
        cmocka_unit_test(test_global_batches_match),
        cmocka_unit_test(test_resume_other_world),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_unequal_shares),
        cmocka_unit_test(test_split_shares),
        cmocka_unit_test(test_equal_weights_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
