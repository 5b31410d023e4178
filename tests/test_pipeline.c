/* test_pipeline.c — the training input pipeline: batches from the loader
 * threads equal the synchronous gather (across epoch boundaries, for 1 and
 * 2 shards, any number of threads and any prefetch), seek (resume and
 * rollback) restarts at the right batch, freeing mid-epoch does not hang,
 * a failing batch is reported (no hang), buffers too large are logged;
 * augmentation: crop and flip on a known image, draws that depend on
 * (seed, epoch, index) only, so 1 and 2 shards see the same pixels; the
 * [data] keys' errors name the job file's line. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/augment.h"
#include "data/pipeline.h"
#include "data/sampler.h"
#include "stderr_capture.h"

/* n samples of c x h x w pseudo-random pixels, labels i % 10. */
static void make_ds(dt_dataset_t *ds, size_t n, int c, int h, int w)
{
    memset(ds, 0, sizeof *ds);
    ds->n = n;
    ds->channels = c;
    ds->height = h;
    ds->width = w;
    ds->sample_len = (size_t)c * (size_t)h * (size_t)w;
    ds->nclasses = 10;
    ds->pixels = malloc(n * ds->sample_len);
    ds->labels = malloc(n);
    assert_non_null(ds->pixels);
    assert_non_null(ds->labels);
    uint32_t r = 12345;
    for (size_t i = 0; i < n * ds->sample_len; i++) {
        r = r * 1664525u + 1013904223u;
        ds->pixels[i] = (uint8_t)(r >> 24);
    }
    for (size_t i = 0; i < n; i++)
        ds->labels[i] = (uint8_t)(i % 10);
    float mean[3] = {0.25f, 0.5f, 0.125f}, std[3] = {0.5f, 0.25f, 2.0f};
    assert_int_equal(dt_dataset_set_norm(ds, mean, (size_t)c, std,
                                         (size_t)c), DT_OK);
}

static dt_pipeline_t *pipe_new(const dt_dataset_t *ds, size_t batch,
                               int rank, int world, int threads,
                               int prefetch, uint64_t end,
                               const dt_augment_t *aug)
{
    dt_pipeline_opts_t o = {.batch = batch, .rank = rank, .world = world,
                            .seed = 7, .end_epoch = end, .threads = threads,
                            .prefetch = prefetch};
    if (aug)
        o.aug = *aug;
    dt_pipeline_t *p = NULL;
    assert_int_equal(dt_pipeline_new(ds, &o, &p), DT_OK);
    return p;
}

/* The synchronous path of train.c before the pipeline: sampler epoch,
 * then dt_dataset_gather (or dt_augment_gather) of the step's indices. */
static size_t sync_batch(const dt_dataset_t *ds, dt_sampler_t *s,
                         const dt_augment_t *aug, size_t batch,
                         uint64_t epoch, uint64_t step, float *x, int32_t *y)
{
    if (s->epoch != epoch)
        assert_int_equal(dt_sampler_set_epoch(s, epoch), DT_OK);
    size_t at = (size_t)step * batch;
    size_t b = s->count - at < batch ? s->count - at : batch;
    uint8_t *scratch = malloc(ds->sample_len);
    if (aug)
        dt_augment_gather(ds, aug, epoch, s->indices + at, b, scratch, x, y);
    else
        dt_dataset_gather(ds, s->indices + at, b, x, y);
    free(scratch);
    return b;
}

/* Every batch of `epochs` epochs from the pipeline against sync_batch. */
static void compare_run(const dt_dataset_t *ds, size_t batch, int rank,
                        int world, int threads, int prefetch,
                        uint64_t epochs, const dt_augment_t *aug)
{
    dt_pipeline_t *p = pipe_new(ds, batch, rank, world, threads, prefetch,
                                epochs, aug);
    dt_sampler_t s;
    assert_int_equal(dt_sampler_init(&s, ds->n, rank, world, 7, true, true),
                     DT_OK);
    uint64_t steps = dt_pipeline_steps(p);
    assert_int_equal(steps, (s.count + batch - 1) / batch);
    float *x = malloc(batch * ds->sample_len * sizeof *x);
    int32_t *y = malloc(batch * sizeof *y);
    assert_int_equal(dt_pipeline_seek(p, 0, 0), DT_OK);
    for (uint64_t e = 0; e < epochs; e++)
        for (uint64_t k = 0; k < steps; k++) {
            dt_batch_t b;
            double wait = -1;
            assert_int_equal(dt_pipeline_next(p, &b, &wait), DT_OK);
            assert_true(wait >= 0);
            assert_int_equal(b.epoch, e);
            assert_int_equal(b.step, k);
            size_t n = sync_batch(ds, &s, aug, batch, e, k, x, y);
            assert_int_equal(b.count, n);
            assert_memory_equal(b.x, x, n * ds->sample_len * sizeof *x);
            assert_memory_equal(b.y, y, n * sizeof *y);
        }
    /* past the last epoch: an error, no hang */
    dt_batch_t b;
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_pipeline_next(p, &b, NULL), DT_ERR_INVALID);
    free(capture_end(&c));
    free(x);
    free(y);
    dt_sampler_free(&s);
    dt_pipeline_free(p);
}

static void test_equals_sync(void **state)
{
    (void)state;
    dt_dataset_t ds;
    make_ds(&ds, 37, 3, 5, 4); /* 37: a short last batch, padding for N=2 */
    const int threads[] = {0, 1, 2, 3};
    const int prefetch[] = {1, 2, 5};
    for (int world = 1; world <= 2; world++)
        for (int r = 0; r < world; r++)
            for (size_t t = 0; t < 4; t++)
                for (size_t f = 0; f < 3; f++)
                    compare_run(&ds, 4, r, world, threads[t], prefetch[f], 3,
                                NULL);
    /* one batch per epoch, and a batch larger than the shard */
    compare_run(&ds, 37, 0, 1, 2, 2, 4, NULL);
    compare_run(&ds, 50, 1, 2, 2, 2, 4, NULL);
    dt_dataset_free(&ds);
}

static void test_augmented_equals_sync(void **state)
{
    (void)state;
    dt_dataset_t ds;
    make_ds(&ds, 29, 1, 6, 6);
    dt_augment_t aug = {.crop_pad = 2, .hflip = true, .seed = 99};
    for (int world = 1; world <= 2; world++)
        for (int r = 0; r < world; r++)
            for (int t = 0; t <= 3; t++)
                compare_run(&ds, 3, r, world, t, 2, 3, &aug);
    dt_dataset_free(&ds);
}

/* A 1-channel 4x4 image 1..16 and a 2-channel one; every (dy, dx, flip)
 * of pad 1 against the formula, and a few cases written out. */
static void test_crop_flip_known(void **state)
{
    (void)state;
    uint8_t img[2 * 16], out[2 * 16];
    for (int i = 0; i < 32; i++)
        img[i] = (uint8_t)(i + 1);
    /* dy = dx = pad, no flip: the image itself */
    dt_augment_draw_t d = {1, 1, false};
    dt_augment_apply(&d, 1, 1, 4, 4, img, out);
    assert_memory_equal(out, img, 16);
    /* dy = 0, dx = 2: one row of zeros on top, shifted left by one */
    d = (dt_augment_draw_t){0, 2, false};
    dt_augment_apply(&d, 1, 1, 4, 4, img, out);
    const uint8_t want1[16] = {0, 0, 0, 0,  2, 3, 4, 0,
                               6, 7, 8, 0,  10, 11, 12, 0};
    assert_memory_equal(out, want1, 16);
    /* the same, flipped */
    d.flip = true;
    dt_augment_apply(&d, 1, 1, 4, 4, img, out);
    const uint8_t want2[16] = {0, 0, 0, 0,  0, 4, 3, 2,
                               0, 8, 7, 6,  0, 12, 11, 10};
    assert_memory_equal(out, want2, 16);
    /* flip only */
    d = (dt_augment_draw_t){1, 1, true};
    dt_augment_apply(&d, 1, 1, 4, 4, img, out);
    const uint8_t want3[16] = {4, 3, 2, 1,  8, 7, 6, 5,
                               12, 11, 10, 9,  16, 15, 14, 13};
    assert_memory_equal(out, want3, 16);
    /* pad 2, dy = 4, dx = 0 (bottom-left corner): 2 channels */
    d = (dt_augment_draw_t){4, 0, false};
    dt_augment_apply(&d, 2, 2, 4, 4, img, out);
    const uint8_t want4[32] = {0, 0, 9, 10,   0, 0, 13, 14,
                               0, 0, 0, 0,    0, 0, 0, 0,
                               0, 0, 25, 26,  0, 0, 29, 30,
                               0, 0, 0, 0,    0, 0, 0, 0};
    assert_memory_equal(out, want4, 32);
    /* every choice of pad 1 against the definition */
    for (int dy = 0; dy <= 2; dy++)
        for (int dx = 0; dx <= 2; dx++)
            for (int f = 0; f <= 1; f++) {
                d = (dt_augment_draw_t){dy, dx, f != 0};
                dt_augment_apply(&d, 1, 2, 4, 4, img, out);
                for (int c = 0; c < 2; c++)
                    for (int y = 0; y < 4; y++)
                        for (int x = 0; x < 4; x++) {
                            int xs = f ? 3 - x : x; /* column before flip */
                            int sy = y + dy - 1, sx = xs + dx - 1;
                            int want = sy >= 0 && sy < 4 && sx >= 0 && sx < 4
                                           ? img[c * 16 + sy * 4 + sx]
                                           : 0;
                            assert_int_equal(out[c * 16 + y * 4 + x], want);
                        }
            }
    /* normalized: padding is pixel 0, so -mean/std */
    dt_dataset_t ds;
    make_ds(&ds, 1, 1, 4, 4);
    memcpy(ds.pixels, img, 16);
    dt_augment_t aug = {.crop_pad = 3, .seed = 5};
    float x[16];
    int32_t y;
    uint8_t scratch[16];
    size_t idx = 0;
    uint64_t e = 0;
    for (; e < 100; e++) { /* an epoch whose draw is not the identity */
        d = dt_augment_draw(&aug, e, 0);
        if (d.dy == 0)
            break;
    }
    assert_int_equal(d.dy, 0);
    dt_augment_gather(&ds, &aug, e, &idx, 1, scratch, x, &y);
    for (int i = 0; i < 12; i++) /* rows 0..2 are padding */
        assert_true(x[i] == -0.25f / 0.5f);
    dt_dataset_free(&ds);
}

static void test_draws(void **state)
{
    (void)state;
    dt_augment_t a = {.crop_pad = 2, .hflip = true, .seed = 42};
    dt_augment_t b = a;
    b.seed = 43;
    int seen[5][5] = {{0}}, flips = 0, same_e = 0, same_s = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        dt_augment_draw_t d = dt_augment_draw(&a, 3, (size_t)i);
        dt_augment_draw_t d2 = dt_augment_draw(&a, 3, (size_t)i);
        assert_true(d.dy == d2.dy && d.dx == d2.dx && d.flip == d2.flip);
        assert_true(d.dy >= 0 && d.dy <= 4 && d.dx >= 0 && d.dx <= 4);
        seen[d.dy][d.dx]++;
        flips += d.flip;
        dt_augment_draw_t e = dt_augment_draw(&a, 4, (size_t)i);
        same_e += e.dy == d.dy && e.dx == d.dx && e.flip == d.flip;
        dt_augment_draw_t s = dt_augment_draw(&b, 3, (size_t)i);
        same_s += s.dy == d.dy && s.dx == d.dx && s.flip == d.flip;
    }
    /* uniform enough: each of 25 offsets near n/25, flips near n/2 */
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 5; x++)
            assert_true(seen[y][x] > n / 25 * 8 / 10 &&
                        seen[y][x] < n / 25 * 12 / 10);
    assert_true(flips > n * 45 / 100 && flips < n * 55 / 100);
    /* another epoch or seed: other draws (1/50 agree by chance) */
    assert_true(same_e < n / 25);
    assert_true(same_s < n / 25);
    /* off: the identity */
    dt_augment_t off = {.seed = 42};
    dt_augment_draw_t d = dt_augment_draw(&off, 1, 1);
    assert_true(d.dy == 0 && d.dx == 0 && !d.flip);
    assert_false(dt_augment_enabled(&off));
}

/* Rank 0 and 1 of N=2 and the single rank of N=1: every sample index of an
 * epoch gets the same augmented pixels, whatever the threads. */
static void test_augment_independent_of_workers(void **state)
{
    (void)state;
    dt_dataset_t ds;
    make_ds(&ds, 30, 3, 8, 8);
    dt_augment_t aug = {.crop_pad = 3, .hflip = true, .seed = 11};
    size_t len = ds.sample_len;
    for (uint64_t epochs = 2, e = 0; e < epochs; e++) {
        float *ref = calloc(ds.n * len, sizeof *ref);
        char *have = calloc(ds.n, 1);
        const int threads[3] = {0, 2, 1}; /* N=1, then ranks of N=2 */
        for (int run = 0; run < 3; run++) {
            int world = run == 0 ? 1 : 2, rank = run == 0 ? 0 : run - 1;
            dt_sampler_t s;
            assert_int_equal(dt_sampler_init(&s, ds.n, rank, world, 7, true,
                                             true), DT_OK);
            assert_int_equal(dt_sampler_set_epoch(&s, e), DT_OK);
            dt_pipeline_t *p = pipe_new(&ds, 4, rank, world, threads[run], 2,
                                        0, &aug);
            assert_int_equal(dt_pipeline_seek(p, e, 0), DT_OK);
            size_t k = 0;
            for (uint64_t step = 0; step < dt_pipeline_steps(p); step++) {
                dt_batch_t b;
                assert_int_equal(dt_pipeline_next(p, &b, NULL), DT_OK);
                for (size_t i = 0; i < b.count; i++, k++) {
                    size_t idx = s.indices[k];
                    if (run == 0) {
                        memcpy(ref + idx * len, b.x + i * len,
                               len * sizeof *ref);
                        have[idx] = 1;
                    } else {
                        assert_true(have[idx]);
                        assert_memory_equal(ref + idx * len, b.x + i * len,
                                            len * sizeof *ref);
                    }
                }
            }
            dt_pipeline_free(p);
            dt_sampler_free(&s);
        }
        for (size_t i = 0; i < ds.n; i++)
            assert_true(have[i]);
        free(ref);
        free(have);
    }
    dt_dataset_free(&ds);
}

/* Resume: a new pipeline sought to (epoch, step) hands out what the first
 * one does there; rollback: seeking back in a running one. */
static void test_seek(void **state)
{
    (void)state;
    dt_dataset_t ds;
    make_ds(&ds, 23, 1, 4, 4);
    dt_augment_t aug = {.crop_pad = 1, .hflip = true, .seed = 3};
    size_t len = ds.sample_len;
    dt_pipeline_t *a = pipe_new(&ds, 5, 1, 2, 2, 2, 4, &aug);
    uint64_t steps = dt_pipeline_steps(a); /* 12 samples: 3 batches */
    assert_int_equal(steps, 3);
    float *saved = malloc(5 * len * sizeof *saved);
    dt_batch_t b;
    assert_int_equal(dt_pipeline_seek(a, 0, 0), DT_OK);
    for (int i = 0; i < 6; i++) { /* through epoch 1 step 2 */
        assert_int_equal(dt_pipeline_next(a, &b, NULL), DT_OK);
        if (i == 4)
            memcpy(saved, b.x, b.count * len * sizeof *saved);
    }
    assert_int_equal(b.epoch, 1);
    assert_int_equal(b.step, 2);
    dt_pipeline_t *r = pipe_new(&ds, 5, 1, 2, 1, 3, 4, &aug);
    assert_int_equal(dt_pipeline_seek(r, 1, 1), DT_OK);
    dt_batch_t c;
    assert_int_equal(dt_pipeline_next(r, &c, NULL), DT_OK);
    assert_int_equal(c.epoch, 1);
    assert_int_equal(c.step, 1);
    assert_memory_equal(c.x, saved, c.count * len * sizeof *saved);
    /* rollback in the running pipeline (the loaders are ahead) */
    usleep(20000);
    assert_int_equal(dt_pipeline_seek(a, 1, 1), DT_OK);
    assert_int_equal(dt_pipeline_next(a, &b, NULL), DT_OK);
    assert_int_equal(b.epoch, 1);
    assert_int_equal(b.step, 1);
    assert_memory_equal(b.x, saved, b.count * len * sizeof *saved);
    /* a step beyond the epoch's last is the next epoch's */
    assert_int_equal(dt_pipeline_seek(r, 0, 4), DT_OK);
    assert_int_equal(dt_pipeline_next(r, &c, NULL), DT_OK);
    assert_int_equal(c.epoch, 1);
    assert_int_equal(c.step, 1);
    assert_memory_equal(c.x, saved, c.count * len * sizeof *saved);
    free(saved);
    dt_pipeline_free(a);
    dt_pipeline_free(r);
    dt_dataset_free(&ds);
}

/* Freed mid-epoch, with loaders busy or waiting, before any seek, or with
 * no batch taken: it returns (a hang fails the test by its timeout). */
static void test_free_mid_epoch(void **state)
{
    (void)state;
    dt_dataset_t ds;
    make_ds(&ds, 2000, 3, 32, 32);
    dt_augment_t aug = {.crop_pad = 4, .hflip = true, .seed = 1};
    for (int threads = 1; threads <= 4; threads++) {
        dt_pipeline_t *p = pipe_new(&ds, 64, 0, 1, threads, 2, 0, &aug);
        dt_pipeline_free(p); /* never started */
        p = pipe_new(&ds, 64, 0, 1, threads, 3, 0, &aug);
        assert_int_equal(dt_pipeline_seek(p, 0, 0), DT_OK);
        dt_pipeline_free(p); /* loaders busy */
        p = pipe_new(&ds, 64, 0, 1, threads, 1, 0, &aug);
        assert_int_equal(dt_pipeline_seek(p, 2, 5), DT_OK);
        dt_batch_t b;
        for (int i = 0; i < 3; i++)
            assert_int_equal(dt_pipeline_next(p, &b, NULL), DT_OK);
        usleep(10000); /* loaders waiting for a free slot */
        dt_pipeline_free(p);
    }
    dt_pipeline_free(NULL);
    dt_dataset_free(&ds);
}

/* A batch whose sample order cannot be made reaches dt_pipeline_next as
 * an error, also when its slot held a later batch before a seek (the slot
 * must carry the batch's number before anything can fail). The failure is
 * injected by shrinking the sampler's view: the data set grows after
 * dt_pipeline_new (against its contract), so a resumed epoch may start at
 * a position past the sampler's end. A hang ends the test by an alarm. */
static void test_claim_error(void **state)
{
    (void)state;
    dt_dataset_t ds;
    make_ds(&ds, 8, 1, 2, 2);
    dt_pipeline_t *p = pipe_new(&ds, 2, 0, 1, 1, 1, 0, NULL); /* 2 slots */
    assert_int_equal(dt_pipeline_seek(p, 0, 0), DT_OK);
    dt_batch_t b;
    for (int i = 0; i < 3; i++) /* slot 0 now holds batch 2 */
        assert_int_equal(dt_pipeline_next(p, &b, NULL), DT_OK);
    ds.n = 16; /* the sampler still has 8 samples */
    capture_t c;
    capture_begin(&c);
    alarm(30);
    assert_int_equal(dt_pipeline_seek_from(p, 0, 10, 0), DT_OK);
    dt_status_t st = dt_pipeline_next(p, &b, NULL);
    alarm(0);
    char *log = capture_end(&c);
    assert_int_equal(st, DT_ERR_INVALID);
    assert_non_null(strstr(log, "data pipeline: no sample order for batch "
                                "0 of epoch 0 (from position 10)"));
    free(log);
    ds.n = 8;
    dt_pipeline_free(p);
    dt_dataset_free(&ds);
}

/* Buffers too large for memory: the log says how much and what to lower. */
static void test_buffers_too_large(void **state)
{
    (void)state;
    dt_dataset_t ds;
    make_ds(&ds, 4, 1, 2, 2);
    ds.sample_len = (size_t)1 << 40; /* never gathered */
    /* a size past size_t: refused before malloc (also under ASan) */
    dt_pipeline_opts_t o = {.batch = (size_t)1 << 30, .world = 1,
                            .threads = 1, .prefetch = 2};
    dt_pipeline_t *p = NULL;
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_pipeline_new(&ds, &o, &p), DT_ERR_NOMEM);
    char *log = capture_end(&c);
    assert_null(p);
    assert_non_null(strstr(log, "data pipeline: cannot allocate "));
    assert_non_null(strstr(log, "for the batch buffers (3 buffers, [data] "
                                "prefetch + 1, of 1073741824 samples x "
                                "1099511627776 floats): set a smaller "
                                "[train] batch_size or [data] prefetch"));
    free(log);
#ifndef __SANITIZE_ADDRESS__
    /* 2^62 bytes: malloc fails (ASan would abort instead) */
    o.batch = (size_t)1 << 20;
    o.threads = 0;
    capture_begin(&c);
    assert_int_equal(dt_pipeline_new(&ds, &o, &p), DT_ERR_NOMEM);
    log = capture_end(&c);
    assert_non_null(strstr(log, "cannot allocate 4611686018427387904 bytes "
                                "(4398046511104.0 MiB) for the batch buffers "
                                "(1 buffer of 1048576 samples x "
                                "1099511627776 floats): set a smaller "
                                "[train] batch_size\n"));
    free(log);
#endif
    ds.sample_len = 4;
    dt_dataset_free(&ds);
}

static char dir[] = "/tmp/dt-test-pipeline-XXXXXX";

static dt_config_t *job(const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/job.ini", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_int_equal(dt_config_load_file(cfg, path, DT_SRC_JOB_FILE), DT_OK);
    return cfg;
}

/* The [data] keys: values and their errors, with file:line. */
static void test_config(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    dt_dataset_t img, flat;
    make_ds(&img, 4, 1, 28, 28);
    make_ds(&flat, 4, 1, 1, 64);
    dt_pipeline_opts_t o;
    dt_augment_t a;
    /* defaults: one loader, 2 batches ahead, no augmentation */
    dt_config_t *cfg = job("[data]\n");
    assert_int_equal(dt_pipeline_opts_from_config(cfg, &o), DT_OK);
    assert_int_equal(o.threads, 1);
    assert_int_equal(o.prefetch, 2);
    assert_int_equal(dt_augment_from_config(cfg, &img, 1, &a), DT_OK);
    assert_false(dt_augment_enabled(&a));
    /* augmentation off is fine on data without an image shape */
    assert_int_equal(dt_augment_from_config(cfg, &flat, 1, &a), DT_OK);
    dt_config_free(cfg);
    cfg = job("[data]\nloader_threads = 3\nprefetch = 4\nrandom_crop = 2\n"
              "hflip = yes\n");
    assert_int_equal(dt_pipeline_opts_from_config(cfg, &o), DT_OK);
    assert_int_equal(o.threads, 3);
    assert_int_equal(o.prefetch, 4);
    assert_int_equal(dt_augment_from_config(cfg, &img, 9, &a), DT_OK);
    assert_int_equal(a.crop_pad, 2);
    assert_true(a.hflip);
    assert_int_equal(a.seed, 9);
    capture_t c;
    capture_begin(&c);
    assert_int_equal(dt_augment_from_config(cfg, &flat, 9, &a),
                     DT_ERR_CONFIG);
    dt_config_free(cfg);
    cfg = job("[data]\n\nloader_threads = -1\n");
    assert_int_equal(dt_pipeline_opts_from_config(cfg, &o), DT_ERR_CONFIG);
    dt_config_free(cfg);
    cfg = job("[data]\nprefetch = 0\n");
    assert_int_equal(dt_pipeline_opts_from_config(cfg, &o), DT_ERR_CONFIG);
    dt_config_free(cfg);
    cfg = job("[data]\nhflip = yes\nrandom_crop = -2\n");
    assert_int_equal(dt_augment_from_config(cfg, NULL, 1, &a),
                     DT_ERR_CONFIG);
    dt_config_free(cfg);
    cfg = job("[data]\nrandom_crop = 28\n");
    assert_int_equal(dt_augment_from_config(cfg, NULL, 1, &a), DT_OK);
    assert_int_equal(dt_augment_from_config(cfg, &img, 1, &a),
                     DT_ERR_CONFIG);
    /* dtctl's side: the same check on the shape the job gives (the
     * default data set, Fashion-MNIST: 1x28x28) */
    int shape[3], wide[3] = {3, 32, 32};
    assert_int_equal(dt_dataset_config_shape(cfg, shape), DT_OK);
    assert_int_equal(shape[0] * 10000 + shape[1] * 100 + shape[2], 12828);
    assert_int_equal(dt_augment_check_config(cfg, NULL), DT_OK);
    assert_int_equal(dt_augment_check_config(cfg, shape), DT_ERR_CONFIG);
    assert_int_equal(dt_augment_check_config(cfg, wide), DT_OK);
    dt_config_free(cfg);
    cfg = job("[data]\nhflip = maybe\n");
    assert_int_equal(dt_augment_from_config(cfg, &img, 1, &a),
                     DT_ERR_CONFIG);
    dt_config_free(cfg);
    char *log = capture_end(&c);
    assert_non_null(strstr(log, "job.ini:4: [data] random_crop needs images "
                                "(channels x height x width); this data "
                                "set's samples are 1x1x64"));
    assert_non_null(strstr(log, "job.ini:3: [data] loader_threads = -1"));
    assert_non_null(strstr(log, "job.ini:2: [data] prefetch = 0"));
    assert_non_null(strstr(log, "job.ini:3: [data] random_crop = -2"));
    assert_non_null(strstr(log, "job.ini:2: [data] random_crop = 28: the "
                                "padding must be below the image's side"));
    assert_non_null(strstr(log, "job.ini:2: [data] random_crop = 28: the "
                                "padding must be below the image's side "
                                "(28x28 images"));
    assert_non_null(strstr(log, "job.ini:2: [data] hflip = 'maybe'"));
    free(log);
    dt_dataset_free(&img);
    dt_dataset_free(&flat);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crop_flip_known),
        cmocka_unit_test(test_draws),
        cmocka_unit_test(test_equals_sync),
        cmocka_unit_test(test_augmented_equals_sync),
        cmocka_unit_test(test_augment_independent_of_workers),
        cmocka_unit_test(test_seek),
        cmocka_unit_test(test_free_mid_epoch),
        cmocka_unit_test(test_claim_error),
        cmocka_unit_test(test_buffers_too_large),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
