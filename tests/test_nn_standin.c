/* test_nn_standin.c — the CUDA code path of the model and its layers,
 * without a GPU: the STAND-IN backend (fixtures/fixture_cuda_backend.c,
 * loaded through DT_PLUGIN_PATH) keeps "device memory" in host memory and
 * computes its layer entries with plain CPU loops
 * (fixtures/fixture_cuda_layers.c). A model on a stand-in CUDA device
 * must then train as the same model on the CPU does: what this checks is
 * everything dt itself does on CUDA — which entries the layers call with
 * which shapes and buffers (batchnorm's running statistics in l->buf, its
 * saved mean and invstd in the scratch, a dx nobody wants), the residual
 * add and the gradient sums at a branch through the backend, label
 * smoothing handed to the softmax entries. Not the kernels or cuDNN
 * (test_nn_cuda, on a GPU). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <dt/device.h>
#include "cuda/backend.h"
#include "nn/model.h"
#include "nn_testutil.h"
#include "fixtures/standin_cuda.h"
#include "standin_load.h"
#include "train/train.h"

#define BATCH 4

static dt_device_t standin_dev = {.kind = DT_DEVICE_CUDA,
                                  .mem = DT_MEM_CUDA,
                                  .ordinal = 0,
                                  .name = "cuda:0 (stand-in)"};

static void *standin_handle;

static int setup(void **state)
{
    (void)state;
    return standin_load(&standin_handle);
}

/* max |a - b| / (1e-5 + max |a|) */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double big = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++)
        big = fmax(big, fabs(a[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= worst))
            worst = d;
    }
    return worst / (1e-5 + big);
}

/* Returns how many relus ran in place on the stand-in (layer.h
 * inplace: their output is their input's buffer). */
static int compare(const char *layers, int c, int h, int w, float smoothing)
{
    dt_model_t *mc = NULL, *mg = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mc, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &mg, NULL), 0);
    assert_int_equal(dt_model_set_label_smoothing(mc, smoothing), DT_OK);
    assert_int_equal(dt_model_set_label_smoothing(mg, smoothing), DT_OK);
    assert_int_equal(dt_model_init(mc, NULL, 5), DT_OK);
    assert_int_equal(dt_model_init(mg, &standin_dev, 5), DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(mc);
    float *x = malloc(in * sizeof *x);
    assert_non_null(x);
    fill_random(x, in, 17);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (3 * i + 1) % 10;
    float *pc, *gc, *pg, *gg, *bc = NULL, *bg = NULL;
    size_t nb = 0, nbg = 0;
    assert_int_equal(dt_model_params(mc, &pc, &gc, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pg, &gg, NULL), DT_OK);
    assert_memory_equal(pc, pg, n * sizeof *pc);
    /* two steps: the second forward normalizes with moved statistics
     * only in eval, so train, backward, then an eval forward */
    float lc, lg;
    int cc, cg;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 1, &lc, &cc), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 1, &lg, &cg), DT_OK);
    assert_int_equal(dt_model_backward(mc, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mg, NULL, NULL), DT_OK);
    double dl = fabs(lc - lg) / (1e-6 + fabs(lc));
    double dg = rel_diff(gc, gg, n);
    assert_int_equal(dt_model_buffers(mc, &bc, &nb), DT_OK);
    assert_int_equal(dt_model_buffers(mg, &bg, &nbg), DT_OK);
    assert_int_equal(nb, nbg);
    double db = nb ? rel_diff(bc, bg, nb) : 0.0;
    float ec, eg;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 0, &ec, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 0, &eg, NULL), DT_OK);
    double de = fabs(ec - eg) / (1e-6 + fabs(ec));
    fprintf(stderr, "%s (smoothing %g): loss %.7f vs %.7f (%.2g), "
            "gradients %.2g, running statistics %.2g, eval loss %.2g\n",
            layers, (double)smoothing, lc, lg, dl, dg, db, de);
    assert_true(dl < 1e-5);
    assert_int_equal(cc, cg);
    assert_true(dg < 1e-4);
    assert_true(db < 1e-5);
    assert_true(de < 1e-5);
    int inplace = 0;
    for (int i = 0; i < mg->nlayers; i++)
        if (mg->layers[i].inplace) {
            assert_ptr_equal(mg->acts[i + 1], mg->acts[i]);
            inplace++;
        }
    free(x);
    dt_model_free(mc);
    dt_model_free(mg);
    return inplace;
}

/* sync_bn with a made-up second rank (nn_testutil.h's
 * test_test_synthetic_rank): the CUDA path on the stand-in against the CPU
 * layer given the same rank; and the rank must change the result. */
static void test_sync_bn(void **state)
{
    (void)state;
    const char *layers = "conv(3,3,pad=1,bias=no) batchnorm relu flatten "
                         "linear(6) batchnorm relu linear(10)";
    dt_model_t *mc = NULL, *mg = NULL, *mp = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, 2, 4, 4, 10, &mc, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, 2, 4, 4, 10, &mg, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, 2, 4, 4, 10, &mp, NULL), 0);
    assert_int_equal(dt_model_init(mc, NULL, 5), DT_OK);
    assert_int_equal(dt_model_init(mg, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_init(mp, NULL, 5), DT_OK);
    dt_model_set_sync_bn(mc, test_synthetic_rank, NULL);
    dt_model_set_sync_bn(mg, test_synthetic_rank, NULL);
    size_t in = (size_t)BATCH * 2 * 4 * 4, n = dt_model_nparams(mc);
    float *x = malloc(in * sizeof *x);
    assert_non_null(x);
    fill_random(x, in, 23);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (5 * i + 2) % 10;
    float *pc, *gc, *pg, *gg, *pp, *gp, *bc, *bg, *bp;
    size_t nb, nbg, nbp;
    assert_int_equal(dt_model_params(mc, &pc, &gc, NULL), DT_OK);
    assert_int_equal(dt_model_params(mg, &pg, &gg, NULL), DT_OK);
    assert_int_equal(dt_model_params(mp, &pp, &gp, NULL), DT_OK);
    float lc, lg, lp;
    test_synthetic_calls = 0;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 1, &lc, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mc, NULL, NULL), DT_OK);
    int cpu_calls = test_synthetic_calls;
    test_synthetic_calls = 0;
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 1, &lg, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mg, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mp, x, y, BATCH, 1, &lp, NULL), DT_OK);
    assert_int_equal(dt_model_backward(mp, NULL, NULL), DT_OK);
    /* 2 layers x (forward + backward) on both paths */
    assert_int_equal(cpu_calls, 4);
    assert_int_equal(test_synthetic_calls, 4);
    assert_int_equal(dt_model_buffers(mc, &bc, &nb), DT_OK);
    assert_int_equal(dt_model_buffers(mg, &bg, &nbg), DT_OK);
    assert_int_equal(dt_model_buffers(mp, &bp, &nbp), DT_OK);
    double dl = fabs(lc - lg) / (1e-6 + fabs(lc));
    double dg = rel_diff(gc, gg, n), db = rel_diff(bc, bg, nb);
    double own = rel_diff(gc, gp, n), ownb = rel_diff(bc, bp, nb);
    float ec, eg;
    assert_int_equal(dt_model_forward(mc, x, y, BATCH, 0, &ec, NULL), DT_OK);
    assert_int_equal(dt_model_forward(mg, x, y, BATCH, 0, &eg, NULL), DT_OK);
    double de = fabs(ec - eg) / (1e-6 + fabs(ec));
    fprintf(stderr, "sync_bn with a made-up second rank: loss %.7f vs "
            "%.7f (%.2g), gradients %.2g, running statistics %.2g, eval "
            "loss %.2g; against this rank's statistics alone: gradients "
            "%.2g, running statistics %.2g\n", lc, lg, dl, dg, db, de, own,
            ownb);
    assert_true(dl < 1e-5);
    assert_true(dg < 1e-4);
    assert_true(db < 1e-5);
    assert_true(de < 1e-5);
    /* and the made-up rank did change something */
    assert_true(own > 1e-3);
    assert_true(ownb > 1e-3);
    free(x);
    dt_model_free(mc);
    dt_model_free(mg);
    dt_model_free(mp);
}

/* The stand-in's counters. */
static standin_stats_t *stats(void)
{
    standin_stats_t *st = dlsym(standin_handle, "standin_cuda_stats");
    assert_non_null(st);
    return st;
}

/* Device bytes the model's first forward allocates. */
static size_t forward_bytes(dt_model_t *m, const float *x, const int *y,
                            float *loss)
{
    standin_stats_t *st = stats();
    size_t before = st->device_bytes;
    st->device_peak = before;
    assert_int_equal(dt_model_forward(m, x, y, BATCH, 1, loss, NULL), DT_OK);
    return st->device_peak - before;
}

/* The CPU refuses bf16 activation storage: at init, and when set after. */
static void test_activations_bf16_cpu(void **state)
{
    (void)state;
    const char *layers = "flatten linear(8) relu linear(10)";
    dt_model_t *cpu = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, 1, 4, 4, 10, &cpu, NULL), 0);
    assert_int_equal(dt_model_set_activations(cpu, DT_ACTIVATIONS_BF16),
                     DT_OK);
    assert_int_equal(dt_model_activations(cpu), DT_ACTIVATIONS_BF16);
    assert_int_equal(dt_model_init(cpu, NULL, 5), DT_ERR_UNSUPPORTED);
    dt_model_free(cpu);
    cpu = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, 1, 4, 4, 10, &cpu, NULL), 0);
    assert_int_equal(dt_model_init(cpu, NULL, 5), DT_OK);
    assert_int_equal(dt_model_set_activations(cpu, DT_ACTIVATIONS_BF16),
                     DT_ERR_UNSUPPORTED);
    assert_int_equal(dt_model_activations(cpu), DT_ACTIVATIONS_FLOAT32);
    dt_model_free(cpu);
}

/* [train] activations = bf16 on the stand-in: the same model with float32
 * and with bf16 storage. bf16 stores every activation between the input
 * and the logits through to_bf16 (once per forward: the count), takes
 * exactly the memory it should (each stored activation in half the bytes,
 * plus the two float32 copies the layers run on), and its loss and gradients
 * are float32's up to bf16 rounding (2^-9 relative per rounding, summed
 * over the layers: max_dg), but not equal to them: the rounding happened. */
static size_t r256(size_t bytes) { return (bytes + 255) / 256 * 256; }

static void act16_compare(const char *layers, int c, int h, int w,
                          double max_dg)
{
    dt_model_t *m32 = NULL, *m16 = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m32, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m16, NULL), 0);
    assert_int_equal(dt_model_init(m32, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_init(m16, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_set_activations(m16, DT_ACTIVATIONS_BF16),
                     DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(m32);
    float *x = malloc(in * sizeof *x);
    assert_non_null(x);
    fill_random(x, in, 31);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (7 * i + 3) % 10;
    float l32, l16;
    size_t b32 = forward_bytes(m32, x, y, &l32);
    standin_stats_t *st = stats();
    unsigned long narrowed = st->bf16_narrowed;
    size_t b16 = forward_bytes(m16, x, y, &l16);
    narrowed = st->bf16_narrowed - narrowed;

    /* what bf16 storage should save: the activations between input and
     * logits that have a buffer of their own, each in half the bytes;
     * and what it adds: wx, wy (a residual add's second input is widened
     * into its output) */
    size_t stored = 0, saved = 0, largest = (size_t)c * h * w;
    for (int i = 0; i < m16->nlayers; i++) {
        size_t o = (size_t)BATCH * dt_layer_out_size(&m16->layers[i]);
        if (dt_layer_out_size(&m16->layers[i]) > largest)
            largest = dt_layer_out_size(&m16->layers[i]);
        if (i + 1 < m16->nlayers) {
            const dt_layer_t *l = &m16->layers[i];
            /* a relu between stored activations and a residual add of
             * two into a third write bf16 themselves */
            int relu = l->ops == &dt_layer_relu && l->src > 0,
                add = l->ops == &dt_layer_add && l->src > 0 && l->skip > 0;
            int native = relu || add;
            assert_int_equal(l->io16, relu ? 3 : add ? 11 : 0);
            stored += native ? 0 : o;
            if (!l->inplace)
                saved += r256(o * sizeof(float)) -
                         r256((o + 1) / 2 * sizeof(float));
        }
    }
    /* the float32 copies are per step in the shared block
     * (core/nn/model_arena.c): at most one x and one y of the largest
     * activation's size at a time, each rounded to 256 bytes */
    size_t one = ((size_t)BATCH * largest * sizeof(float) + 255) / 256 * 256,
           added = 2 * one;
    fprintf(stderr, "%s, bf16 activations: forward allocates %zu vs %zu "
            "bytes (saved %zu, float32 copies at most %zu); %lu floats "
            "narrowed, %zu stored by narrowing (the rest by relus and "
            "adds)\n", layers, b16, b32, saved, added, narrowed, stored);
    assert_int_equal(narrowed, stored);
    /* dt_model_memory accounts for every byte forward allocated */
    dt_model_memory_t k32, k16;
    dt_model_memory(m32, &k32);
    dt_model_memory(m16, &k16);
    fprintf(stderr, "  dt_model_memory float32: activations %zu, gradients "
            "%zu, copies %zu, scratch %zu; bf16: %zu %zu %zu %zu\n",
            k32.activations, k32.act_grads, k32.act_copies, k32.scratch,
            k16.activations, k16.act_grads, k16.act_copies, k16.scratch);
    assert_int_equal(k32.activations + k32.act_grads + k32.act_copies +
                         k32.scratch, b32);
    assert_int_equal(k16.activations + k16.act_grads + k16.act_copies +
                         k16.scratch, b16);
    assert_int_equal(k32.act_copies, 0);
    assert_true(k16.act_copies > 0 && k16.act_copies <= added);
    /* each stored activation in half the bytes, each buffer in the
     * block rounded up to 256 (all of them live at the loss: no sharing
     * among activations) */
    assert_int_equal(k32.activations - k16.activations, saved);
    assert_int_equal(dt_model_block_overlaps(m16, BATCH, 1), 0);
    assert_int_equal(dt_model_block_overlaps(m32, BATCH, 0), 0);
    assert_int_equal(k32.params, k16.params);
    /* and the trainer's auto gets the difference right, with its sign */
    assert_true(dt_model_bf16_saving(m32, BATCH) ==
                (long long)b32 - (long long)b16);
    assert_true(k32.params >= 2 * n * sizeof(float));
    /* the estimate before dt_model_init (the trainer's memory check)
     * plans the relus in place as a GPU runs them: the same activation
     * block, both storages */
    for (int bf = 0; bf < 2; bf++) {
        dt_model_t *fresh = NULL;
        const dt_model_memory_t *k = bf ? &k16 : &k32;
        dt_model_memory_t e;
        assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &fresh,
                                        NULL), 0);
        if (bf)
            assert_int_equal(dt_model_set_activations(fresh,
                                                      DT_ACTIVATIONS_BF16),
                             DT_OK);
        assert_int_equal(dt_model_memory_estimate(fresh, BATCH, 1, &e),
                         DT_OK);
        assert_true(e.params == k->params);
        assert_true(e.activations == k->activations);
        assert_true(e.act_grads == k->act_grads);
        assert_true(e.act_copies == k->act_copies);
        assert_true(e.scratch <= k->scratch);
        dt_model_free(fresh);
    }

    float *p32, *g32, *p16, *g16;
    assert_int_equal(dt_model_params(m32, &p32, &g32, NULL), DT_OK);
    assert_int_equal(dt_model_params(m16, &p16, &g16, NULL), DT_OK);
    unsigned long widened = st->bf16_widened;
    assert_int_equal(dt_model_backward(m32, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_backward(m16, NULL, NULL), DT_OK);
    assert_true(st->bf16_widened > widened);
    double dl = fabs(l32 - l16) / fabs(l32), dg = rel_diff(g32, g16, n);
    float e32, e16;
    assert_int_equal(dt_model_forward(m32, x, y, BATCH, 0, &e32, NULL), DT_OK);
    assert_int_equal(dt_model_forward(m16, x, y, BATCH, 0, &e16, NULL), DT_OK);
    double de = fabs(e32 - e16) / fabs(e32);
    fprintf(stderr, "  loss %.7f vs %.7f (%.2g), gradients %.2g (at most "
            "%.2g), eval loss %.2g\n", l32, l16, dl, dg, max_dg, de);
    assert_true(dl > 0.0 && dl < 1e-2);
    assert_true(dg > 1e-6 && dg < max_dg);
    assert_true(de > 0.0 && de < 1e-2);
    free(x);
    dt_model_free(m32);
    dt_model_free(m16);
}

/* Under precision = bf16 the convolutions read and write the stored bf16
 * activations as they are (cudnn_conv.c's x16/y16), and so do the
 * batchnorms' forwards (cudnn_bn.c; the stand-in's widen and round at the
 * same points): the same numbers to the bit as the widened copies give,
 * with fewer conversions by the model (one narrowing less per conv
 * without bias and per batchnorm, one widening less per conv reading a
 * stored input, each way, and per batchnorm forward). */
static void act16_native(const char *layers, int c, int h, int w)
{
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    dt_model_t *a = NULL, *b = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &a, NULL), 0);
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &b, NULL), 0);
    assert_int_equal(dt_model_init(a, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_init(b, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_set_activations(a, DT_ACTIVATIONS_BF16), DT_OK);
    assert_int_equal(dt_model_set_activations(b, DT_ACTIVATIONS_BF16), DT_OK);
    size_t in = (size_t)BATCH * c * h * w, n = dt_model_nparams(a);
    float *x = malloc(in * sizeof *x), la, lb, *pa, *ga, *pb, *gb;
    assert_non_null(x);
    fill_random(x, in, 37);
    int y[BATCH];
    for (int i = 0; i < BATCH; i++)
        y[i] = (5 * i + 1) % 10;
    standin_stats_t *st = stats();
    unsigned long na = st->bf16_narrowed, wa = st->bf16_widened;
    assert_int_equal(dt_model_forward(a, x, y, BATCH, 1, &la, NULL), DT_OK);
    assert_int_equal(dt_model_backward(a, NULL, NULL), DT_OK);
    na = st->bf16_narrowed - na, wa = st->bf16_widened - wa;
    assert_int_equal(cu->set_precision(&standin_dev, DT_PRECISION_BF16),
                     DT_OK);
    unsigned long nb = st->bf16_narrowed, wb = st->bf16_widened;
    assert_int_equal(dt_model_forward(b, x, y, BATCH, 1, &lb, NULL), DT_OK);
    assert_int_equal(dt_model_backward(b, NULL, NULL), DT_OK);
    nb = st->bf16_narrowed - nb, wb = st->bf16_widened - wb;
    /* what the convs and batchnorms spared the model */
    unsigned long spared_n = 0, spared_w = 0;
    int nbn = 0;
    for (int i = 0; i < b->nlayers; i++) {
        const dt_layer_t *l = &b->layers[i];
        size_t xin = (size_t)BATCH * dt_layer_in_size(l),
               yout = (size_t)BATCH * dt_layer_out_size(l);
        if (l->ops == &dt_layer_batchnorm) {
            /* forward only: backward widens x for cuDNN */
            assert_int_equal(l->io16, 3);
            spared_w += xin;
            spared_n += yout;
            nbn++;
            continue;
        }
        if (l->ops != &dt_layer_conv2d)
            continue;
        assert_int_equal(l->io16 & 1, dt_model_act16(b, l->src));
        if (l->io16 & 1)
            spared_w += 2 * xin; /* forward and backward */
        if (l->io16 & 2)
            spared_n += yout;
    }
    assert_true(nbn > 0);
    assert_int_equal(cu->set_precision(&standin_dev, DT_PRECISION_FP32),
                     DT_OK);
    fprintf(stderr, "%s: convs, batchnorms on stored bf16: %lu/%lu narrowed, %lu/%lu "
            "widened by the model (spared %lu, %lu)\n", layers, nb, na, wb,
            wa, spared_n, spared_w);
    assert_true(spared_n > 0 && spared_w > 0);
    assert_int_equal(na - nb, spared_n);
    assert_int_equal(wa - wb, spared_w);
    assert_true(la == lb);
    assert_int_equal(dt_model_params(a, &pa, &ga, NULL), DT_OK);
    assert_int_equal(dt_model_params(b, &pb, &gb, NULL), DT_OK);
    assert_memory_equal(ga, gb, n * sizeof *ga);
    free(x);
    dt_model_free(a);
    dt_model_free(b);
}

static void test_activations_bf16(void **state)
{
    (void)state;
    /* two stored activations before the last matrix product: one or two
     * roundings' worth (measured 0.0025) */
    act16_compare("flatten linear(32) relu linear(10)", 3, 8, 8, 5e-3);
    /* a ResNet: batchnorm over 4 samples and the convolutions' sums of
     * mixed signs amplify the roundings (measured 0.041) */
    act16_compare("conv(8,3,pad=1,bias=no) batchnorm relu "
                  "stage(basic,8,1) stage(basic,16,1,stride=2) avgpool(2) "
                  "gap flatten linear(10)", 3, 8, 8, 0.1);
    /* a model whose last layer is a relu: it cannot run in place (its
     * input is stored bf16, its output, the logits, float32) */
    act16_compare("flatten linear(32) relu linear(10) relu", 3, 8, 8, 5e-3);
    act16_native("conv(8,3,pad=1,bias=no) batchnorm relu "
                 "stage(basic,8,1) stage(basic,16,1,stride=2) conv(8,3,pad=1) "
                 "relu gap flatten linear(10)", 3, 8, 8);
}

/* The trainer's line of where a GPU's memory goes (train_memory.c), on
 * the stand-in: its used bytes (what was allocated), its made-up 80 GB,
 * the model's activations by storage, and no cuDNN state. */
static void test_memory_report(void **state)
{
    (void)state;
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(512) relu linear(10)",
                                    NULL, 3, 32, 32, 10, &m, NULL), 0);
    assert_int_equal(dt_model_init(m, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_set_activations(m, DT_ACTIVATIONS_BF16), DT_OK);
    enum { B = 64 };
    float *x = calloc((size_t)B * 3 * 32 * 32, sizeof *x), loss;
    int y[B] = {0};
    assert_non_null(x);
    assert_int_equal(dt_model_forward(m, x, y, B, 1, &loss, NULL), DT_OK);
    dt_trainer_t t;
    memset(&t, 0, sizeof t);
    t.dev = &standin_dev;
    t.model = m;
    FILE *f = tmpfile(); /* stderr goes there for the two calls */
    assert_non_null(f);
    int fd = fileno(f), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    dt_trainer_report_memory(&t);
    t.rank = 1; /* only rank 0 says it */
    dt_trainer_report_memory(&t);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char line[2048] = "";
    rewind(f);
    size_t got = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[got] = '\0';
    fprintf(stderr, "%s", line);
    dt_model_memory_t k;
    dt_model_memory(m, &k);
    char want[256];
    snprintf(want, sizeof want, "MiB in use of 81920.0 on cuda:0 "
             "(stand-in): activations %.1f (bf16)",
             (double)k.activations / (1 << 20));
    assert_non_null(strstr(line, want));
    assert_non_null(strstr(line, "cuDNN workspace 0.0 and bf16 conv copies 0.0"));
    assert_null(strstr(strstr(line, "first step") + 1, "first step"));
    free(x);
    dt_model_free(m);
}

static void test_resnet_block(void **state)
{
    (void)state;
    /* the stem's relu and each block's two: in place; none reads a
     * block's input (a branch point) */
    assert_int_equal(
        compare("conv(4,3,pad=1,bias=no) batchnorm relu "
                "stage(basic,4,1,stride=2) stage(basic,4,1) gap flatten "
                "linear(10)", 2, 6, 6, 0.0f), 5);
}

static void test_first_batchnorm_avgpool_flat(void **state)
{
    (void)state;
    compare("batchnorm conv(3,3,pad=1) relu avgpool(2) flatten linear(8) "
            "batchnorm relu linear(10)", 2, 6, 6, 0.0f);
}

static void test_label_smoothing(void **state)
{
    (void)state;
    compare("conv(3,3,stride=2,pad=1) relu flatten linear(10)", 1, 6, 6,
            0.1f);
}

int main(void)
{
    /* every step runs with the shared block's free bytes filled with
     * junk (core/nn/model_arena.c): a buffer read outside the lifetime
     * the planner gave it gets wrong numbers, and the checks fail */
    setenv("DT_DEBUG_POISON_BLOCK", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet_block),
        cmocka_unit_test(test_first_batchnorm_avgpool_flat),
        cmocka_unit_test(test_label_smoothing),
        cmocka_unit_test(test_sync_bn),
        cmocka_unit_test(test_activations_bf16_cpu),
        cmocka_unit_test(test_activations_bf16),
        cmocka_unit_test(test_memory_report),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
