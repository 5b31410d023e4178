/* test_sync_bn.c — synchronized batch normalization (dt_model_set_sync_bn)
 * with N ranks as threads over the in-process transport: a 2- and a 3-rank
 * sync_bn, each rank forwarding and backwarding its part of a batch, gives
 * the outputs, input gradients, running statistics and (summed over the
 * ranks) gamma/beta gradients of single-process batchnorm on the
 * concatenated batch; per-rank statistics (no hook) do not. For images
 * (N, C, H, W) and flat features (N, C), uneven shares included. Then
 * whole models: 2 ranks with sync_bn average to the gradients of one
 * process on the concatenation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "nn/layer.h"
#include "inproc_transport.h"
#include "nn_testutil.h"

#define MAX_RANKS 4

/* A batchnorm layer outside a model: its parameters, buffers and scratch
 * in plain host memory. */
typedef struct bn {
    dt_layer_t l;
    float *mem;
} bn_t;

static void bn_make(bn_t *b, int C, int H, int W, int cap)
{
    memset(b, 0, sizeof *b);
    dt_layer_t *l = &b->l;
    l->ops = &dt_layer_batchnorm;
    l->args[0] = 0.1;
    l->args[1] = 1e-5;
    l->in_c = C, l->in_h = H, l->in_w = W;
    l->in_flat = H == 1 && W == 1;
    char why[128];
    assert_int_equal(l->ops->setup(l, why, sizeof why), DT_OK);
    size_t scratch = l->ops->scratch_floats(l, cap);
    b->mem = calloc(6 * (size_t)C + scratch + 2, sizeof(float));
    assert_non_null(b->mem);
    l->w = b->mem, l->b = l->w + C, l->dw = l->b + C, l->db = l->dw + C;
    l->buf = l->db + C;                          /* 2C: mean, var */
    l->scratch = l->buf + 2 * C;                 /* 8-byte aligned */
    uint64_t s = 11;
    for (int c = 0; c < C; c++) {
        l->w[c] = 1.0f + 0.5f * test_rand(&s);
        l->b[c] = 0.3f * test_rand(&s);
        l->buf[c] = 0.1f * test_rand(&s);
        l->buf[C + c] = 1.0f + 0.2f * test_rand(&s);
    }
}

/* Sample n of the whole batch: channel means far from 0 and a spread
 * that differs per channel, so the global statistics differ clearly from
 * any rank's. */
static void fill_batch(float *x, float *dy, int total, int C, int plane)
{
    uint64_t s = 5;
    for (int n = 0; n < total; n++)
        for (int c = 0; c < C; c++)
            for (int p = 0; p < plane; p++) {
                size_t i = ((size_t)n * C + c) * plane + p;
                x[i] = 3.0f + c + (1.0f + 0.5f * c) * test_rand(&s) +
                       0.8f * (float)n / total;
                dy[i] = test_rand(&s);
            }
}

typedef struct rank_arg {
    inproc_world_t *w;
    int rank, size;
    int sync;
    int C, H, W, n, off;           /* this rank's samples [off, off + n) */
    const float *x, *dy;           /* the whole batch                    */
    float *y, *dx;                 /* out: this rank's part              */
    float gamma_grad[16], beta_grad[16], running[32];
    dt_status_t st;
} rank_arg_t;

static dt_comm_t comm_of(rank_arg_t *a)
{
    return (dt_comm_t){.ops = &inproc_ops,
                       .ctx = inproc_rank_ctx(a->w, a->rank),
                       .rank = a->rank,
                       .size = a->size,
                       .chunk_bytes = 64 * 1024,
                       .timeout_ms = 20000};
}

static dt_status_t comm_sum(void *arg, double *buf, size_t n)
{
    return dt_coll_allreduce(arg, buf, buf, n, DT_FLOAT64, DT_SUM);
}

static void *bn_rank(void *p)
{
    rank_arg_t *a = p;
    dt_comm_t c = comm_of(a);
    bn_t b;
    bn_make(&b, a->C, a->H, a->W, a->n);
    if (a->sync) {
        b.l.allreduce = comm_sum;
        b.l.allreduce_arg = &c;
    }
    size_t len = (size_t)a->C * a->H * a->W;
    a->st = b.l.ops->forward(&b.l, a->x + a->off * len, a->y, a->n, 1);
    if (a->st == DT_OK)
        a->st = b.l.ops->backward(&b.l, a->x + a->off * len, a->y,
                                  a->dy + a->off * len, a->dx, a->n);
    memcpy(a->gamma_grad, b.l.dw, a->C * sizeof(float));
    memcpy(a->beta_grad, b.l.db, a->C * sizeof(float));
    memcpy(a->running, b.l.buf, 2 * a->C * sizeof(float));
    free(b.mem);
    dt_comm_release(&c);
    return NULL;
}

static void run(int n, rank_arg_t *a, void *(*fn)(void *))
{
    inproc_world_t *w;
    pthread_t th[MAX_RANKS];
    assert_int_equal(inproc_world_new(n, &w), DT_OK);
    for (int r = 0; r < n; r++) {
        a[r].w = w;
        a[r].rank = r;
        a[r].size = n;
        assert_int_equal(pthread_create(&th[r], NULL, fn, &a[r]), 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++)
        assert_int_equal(a[r].st, DT_OK);
    assert_int_equal(inproc_unreceived(w), 0);
    inproc_world_free(w);
}

static double rel_err(float a, float b)
{
    return fabs((double)a - (double)b) / (1.0 + fabs((double)b));
}

/* One layout and one split of `total` samples over len(shares) ranks. */
static void check_split(int C, int H, int W, const int *shares, int ranks)
{
    int total = 0, plane = H * W;
    for (int r = 0; r < ranks; r++)
        total += shares[r];
    size_t len = (size_t)C * plane, all = (size_t)total * len;
    float *x = malloc(all * sizeof *x), *dy = malloc(all * sizeof *dy),
          *y_ref = malloc(all * sizeof *x), *dx_ref = malloc(all * sizeof *x),
          *y = malloc(all * sizeof *x), *dx = malloc(all * sizeof *x);
    fill_batch(x, dy, total, C, plane);

    /* The reference: one process, the whole batch. */
    bn_t ref;
    bn_make(&ref, C, H, W, total);
    assert_int_equal(ref.l.ops->forward(&ref.l, x, y_ref, total, 1), DT_OK);
    assert_int_equal(ref.l.ops->backward(&ref.l, x, y_ref, dy, dx_ref,
                                         total), DT_OK);

    for (int sync = 1; sync >= 0; sync--) {
        rank_arg_t a[MAX_RANKS];
        memset(a, 0, sizeof a);
        for (int r = 0, off = 0; r < ranks; off += shares[r++]) {
            a[r] = (rank_arg_t){.sync = sync, .C = C, .H = H, .W = W,
                                .n = shares[r], .off = off, .x = x,
                                .dy = dy, .y = y + off * len,
                                .dx = dx + off * len};
        }
        run(ranks, a, bn_rank);
        double worst_y = 0, worst_dx = 0, worst_g = 0, worst_run = 0;
        for (size_t i = 0; i < all; i++) {
            worst_y = fmax(worst_y, rel_err(y[i], y_ref[i]));
            worst_dx = fmax(worst_dx, rel_err(dx[i], dx_ref[i]));
        }
        for (int c = 0; c < C; c++) {
            float g = 0, bsum = 0;
            for (int r = 0; r < ranks; r++)
                g += a[r].gamma_grad[c], bsum += a[r].beta_grad[c];
            worst_g = fmax(worst_g, rel_err(g, ref.l.dw[c]));
            worst_g = fmax(worst_g, rel_err(bsum, ref.l.db[c]));
        }
        for (int i = 0; i < 2 * C; i++)
            worst_run = fmax(worst_run, rel_err(a[0].running[i],
                                                ref.l.buf[i]));
        print_message("%d ranks, %dx%dx%d, %s: max rel. error y %.2g, dx "
                      "%.2g, dgamma/dbeta %.2g, running stats %.2g\n",
                      ranks, C, H, W, sync ? "sync_bn" : "per rank",
                      worst_y, worst_dx, worst_g, worst_run);
        if (sync) {
            assert_true(worst_y < 1e-5);
            assert_true(worst_dx < 1e-5);
            assert_true(worst_g < 1e-5);
            assert_true(worst_run < 1e-5);
            /* The running statistics: the same bits on every rank. */
            for (int r = 1; r < ranks; r++)
                assert_memory_equal(a[r].running, a[0].running,
                                    2 * C * sizeof(float));
        } else {
            /* Per-rank statistics are not the global batch's: the test
             * can tell them apart. */
            assert_true(worst_y > 1e-2);
            assert_true(worst_dx > 1e-2);
        }
    }
    free(ref.mem);
    free(x), free(dy), free(y_ref), free(dx_ref), free(y), free(dx);
}

static void test_layer_images(void **state)
{
    (void)state;
    check_split(3, 5, 5, (const int[]){3, 3}, 2);
    check_split(3, 5, 5, (const int[]){2, 1, 3}, 3);
    check_split(4, 3, 7, (const int[]){1, 4}, 2); /* plane not a multiple
                                                      of 8 lanes */
}

static void test_layer_flat(void **state)
{
    (void)state;
    check_split(7, 1, 1, (const int[]){4, 4}, 2);
    check_split(7, 1, 1, (const int[]){3, 2, 4}, 3);
}

/* ---- whole models ------------------------------------------------------ */

#define M_LAYERS "conv(4,3,pad=1,bias=no) batchnorm relu " \
                 "conv(4,3,pad=1,bias=no) batchnorm relu flatten linear(3)"
#define M_B 4 /* samples per rank */

typedef struct model_arg {
    rank_arg_t r;                  /* world, rank, st                    */
    const float *x;
    const int *labels;
    float *grads;                  /* out: this rank's gradients          */
    float *buffers;                /* out: running statistics            */
    size_t n, nbuf;
} model_arg_t;

static void *model_rank(void *p)
{
    model_arg_t *a = p;
    dt_comm_t c = comm_of(&a->r);
    dt_model_t *m = NULL;
    a->r.st = dt_model_parse(M_LAYERS, "test", 2, 6, 6, 3, &m, NULL);
    if (a->r.st == DT_OK)
        a->r.st = dt_model_init(m, NULL, 17);
    dt_model_set_sync_bn(m, comm_sum, &c);
    float *g, *b;
    if (a->r.st == DT_OK)
        a->r.st = dt_model_forward(m, a->x + a->r.rank * M_B * 72,
                                   a->labels + a->r.rank * M_B, M_B, 1, NULL,
                                   NULL);
    if (a->r.st == DT_OK)
        a->r.st = dt_model_backward(m, NULL, NULL);
    if (a->r.st == DT_OK)
        a->r.st = dt_model_params(m, NULL, &g, &a->n);
    if (a->r.st == DT_OK)
        a->r.st = dt_model_buffers(m, &b, &a->nbuf);
    if (a->r.st == DT_OK) {
        memcpy(a->grads, g, a->n * sizeof(float));
        memcpy(a->buffers, b, a->nbuf * sizeof(float));
    }
    dt_model_free(m);
    dt_comm_release(&c);
    return NULL;
}

static void test_model_gradients(void **state)
{
    (void)state;
    enum { R = 2 };
    float x[R * M_B * 72];
    int labels[R * M_B];
    fill_random(x, R * M_B * 72, 3);
    for (int i = 0; i < R * M_B; i++)
        x[i * 72] += 2.0f, labels[i] = i % 3;
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(M_LAYERS, "test", 2, 6, 6, 3, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 17), DT_OK);
    assert_int_equal(dt_model_forward(m, x, labels, R * M_B, 1, NULL, NULL),
                     DT_OK);
    assert_int_equal(dt_model_backward(m, NULL, NULL), DT_OK);
    float *g_ref, *b_ref;
    size_t n, nbuf;
    assert_int_equal(dt_model_params(m, NULL, &g_ref, &n), DT_OK);
    assert_int_equal(dt_model_buffers(m, &b_ref, &nbuf), DT_OK);

    model_arg_t a[R];
    memset(a, 0, sizeof a);
    rank_arg_t *ra[R];
    for (int r = 0; r < R; r++) {
        a[r].x = x, a[r].labels = labels;
        a[r].grads = malloc(n * sizeof(float));
        a[r].buffers = malloc(nbuf * sizeof(float));
        ra[r] = &a[r].r;
    }
    /* run() wants rank_arg_t's in an array: start the threads here. */
    inproc_world_t *w;
    pthread_t th[R];
    assert_int_equal(inproc_world_new(R, &w), DT_OK);
    for (int r = 0; r < R; r++) {
        ra[r]->w = w, ra[r]->rank = r, ra[r]->size = R;
        assert_int_equal(pthread_create(&th[r], NULL, model_rank, &a[r]), 0);
    }
    for (int r = 0; r < R; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < R; r++)
        assert_int_equal(a[r].r.st, DT_OK);
    assert_int_equal(inproc_unreceived(w), 0);
    inproc_world_free(w);

    /* Averaged over the ranks (what the trainer does), each rank's
     * gradient of its own mean loss is the gradient of the global batch's
     * mean loss. */
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        float avg = (a[0].grads[i] + a[1].grads[i]) / 2;
        worst = fmax(worst, fabs((double)avg - g_ref[i]) /
                                (1e-3 + fabs((double)g_ref[i])));
    }
    print_message("model, 2 ranks with sync_bn: max rel. gradient error "
                  "%.2g over %zu parameters\n", worst, n);
    assert_true(worst < 1e-4);
    assert_int_equal(a[0].nbuf, nbuf);
    assert_memory_equal(a[0].buffers, a[1].buffers, nbuf * sizeof(float));
    for (size_t i = 0; i < nbuf; i++)
        assert_true(rel_err(a[0].buffers[i], b_ref[i]) < 1e-5);
    for (int r = 0; r < R; r++)
        free(a[r].grads), free(a[r].buffers);
    dt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_images),
        cmocka_unit_test(test_layer_flat),
        cmocka_unit_test(test_model_gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
