/* test_nn_maxpool.c — max pooling (maxpool2d.c, maxpool2.c) against a
 * plain window-at-a-time reference, bit for bit: outputs, argmax (the
 * first of equal values wins; -0 and +0 are equal, so which one is kept
 * shows in the bits), NaN kept where it comes first and never taken
 * after, and dx. Shapes cover the vector kernels' edges: rows narrower
 * than, equal to and not a multiple of 8 outputs, odd input sizes (a last
 * row or column in no window), and windows other than 2x2 stride 2. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nn/layer.h"
#include "nn/maxpool2.h"

/* Values with many ties: -0, +0, a few small integers, NaN now and then,
 * otherwise uniform; from a seeded LCG. */
static float tie_prone(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    unsigned r = (unsigned)(*s >> 33);
    switch (r % 16) {
    case 0: return -0.0f;
    case 1: return 0.0f;
    case 2: case 3: return 1.0f;
    case 4: return -1.0f;
    case 5: return r % 64 == 5 ? NAN : 2.0f;
    default: return (float)(r % 100000) / 50000.0f - 1.0f;
    }
}

/* Nonzero gradients (a -0 dy would meet the reference's += 0). */
static float gradient(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) % 1000 + 1) / 1000.0f *
           ((*s >> 20) & 1 ? 1.0f : -1.0f);
}

/* One window at a time, as maxpool2d.c has always defined it: the
 * first place, replaced by each later one strictly greater. */
static void ref_forward(const float *x, float *y, int *arg, int planes,
                        int h, int w, int k, int s, int oh, int ow)
{
    for (int pl = 0; pl < planes; pl++) {
        const float *xp = x + (size_t)pl * h * w;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int best = oy * s * w + ox * s;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        int at = (oy * s + i) * w + ox * s + j;
                        if (xp[at] > xp[best])
                            best = at;
                    }
                size_t o = (size_t)pl * oh * ow + (size_t)oy * ow + ox;
                y[o] = xp[best];
                arg[o] = best;
            }
    }
}

static void bits_equal(const void *a, const void *b, size_t n,
                       const char *what, int k, int s, int h, int w)
{
    if (memcmp(a, b, n) == 0)
        return;
    const uint32_t *u = a, *v = b;
    size_t i = 0;
    while (u[i] == v[i])
        i++;
    fail_msg("%s differs at %zu (0x%08x, reference 0x%08x) for "
             "maxpool(%d,stride=%d) on %dx%d", what, i, u[i], v[i], k, s, h,
             w);
}

/* The layer's forward and backward on (planes, h, w) against the
 * reference. */
static void check_layer(dt_device_t *dev, int k, int s, int c, int h, int w,
                        int batch, uint64_t seed)
{
    dt_layer_t l;
    memset(&l, 0, sizeof l);
    l.ops = &dt_layer_maxpool2d;
    l.args[0] = k;
    l.args[1] = s;
    l.in_c = c, l.in_h = h, l.in_w = w;
    l.dev = dev;
    char why[256];
    assert_int_equal(l.ops->setup(&l, why, sizeof why), DT_OK);
    int planes = batch * c, oh = l.out_h, ow = l.out_w;
    size_t in = (size_t)planes * h * w, out = (size_t)planes * oh * ow;
    assert_int_equal(l.ops->scratch_floats(&l, batch), out);
    float *x = malloc(in * sizeof *x), *y = malloc(out * sizeof *y),
          *ry = malloc(out * sizeof *ry), *dy = malloc(out * sizeof *dy),
          *dx = malloc(in * sizeof *dx), *rdx = calloc(in, sizeof *rdx);
    int *rarg = malloc(out * sizeof *rarg);
    l.scratch = malloc(out * sizeof *l.scratch);
    assert_true(x && y && ry && dy && dx && rdx && rarg && l.scratch);
    for (size_t i = 0; i < in; i++)
        x[i] = tie_prone(&seed);
    for (size_t i = 0; i < out; i++)
        dy[i] = gradient(&seed);

    assert_int_equal(l.ops->forward(&l, x, y, batch, 1), DT_OK);
    ref_forward(x, ry, rarg, planes, h, w, k, s, oh, ow);
    bits_equal(y, ry, out * sizeof *y, "y", k, s, h, w);
    bits_equal(l.scratch, rarg, out * sizeof *rarg, "argmax", k, s, h, w);

    /* dx: dy at each argmax (summed where windows overlap), 0 elsewhere;
     * NaN first so that a pixel left unwritten shows */
    for (size_t i = 0; i < in; i++)
        dx[i] = NAN;
    for (int pl = 0; pl < planes; pl++)
        for (int o = 0; o < oh * ow; o++)
            rdx[(size_t)pl * h * w + rarg[(size_t)pl * oh * ow + o]] +=
                dy[(size_t)pl * oh * ow + o];
    assert_int_equal(l.ops->backward(&l, x, y, dy, dx, batch), DT_OK);
    bits_equal(dx, rdx, in * sizeof *dx, "dx", k, s, h, w);

    free(x), free(y), free(ry), free(dy), free(dx), free(rdx), free(rarg);
    free(l.scratch);
}

static void test_maxpool_2x2_shapes(void **state)
{
    dt_device_t *dev = NULL;
    assert_int_equal(dt_device_open("cpu", 0, 1, &dev), DT_OK);
    /* widths 2..41: 1..20 outputs a row, odd ones leaving a column out */
    for (int w = 2; w <= 41; w++)
        for (int h = 2; h <= 5; h++)
            check_layer(dev, 2, 2, 3, h, w, 2, (uint64_t)(w * 10 + h));
    check_layer(dev, 2, 2, 32, 28, 28, 4, 1); /* the CNN's first pool */
    check_layer(dev, 2, 2, 64, 14, 14, 2, 2);
    dt_device_close(dev);
}

/* The generic loop: overlapping, gapped and 1-stride windows. */
static void test_maxpool_other_windows(void **state)
{
    dt_device_t *dev = NULL;
    assert_int_equal(dt_device_open("cpu", 0, 1, &dev), DT_OK);
    static const int ks[][2] = {{3, 2}, {3, 1}, {2, 1}, {3, 3}, {2, 3},
                                {1, 1}, {4, 4}};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        for (int w = ks[i][0]; w <= 23; w += 5)
            check_layer(dev, ks[i][0], ks[i][1], 2, 9, w, 2, i * 100 + w);
    dt_device_close(dev);
}

/* The fused conv's backward (conv2d_cpu.c): relu_y masks dy where the
 * pooled relu output is not positive. dx: dy's own bits at the argmax
 * (-0 and NaN included: one window per pixel, no sum), +0 elsewhere. */
static void test_unpool2_relu_mask(void **state)
{
    uint64_t seed = 99;
    for (int w = 2; w <= 37; w++) {
        int h = 5, oh = h / 2, ow = w / 2;
        size_t in = (size_t)h * w, out = (size_t)oh * ow;
        float *x = malloc(in * sizeof *x), *y = malloc(out * sizeof *y),
              *dy = malloc(out * sizeof *dy), *dx = malloc(in * sizeof *dx),
              *rdx = calloc(in, sizeof *rdx);
        int *arg = malloc(out * sizeof *arg);
        assert_true(x && y && dy && dx && rdx && arg);
        for (size_t i = 0; i < in; i++)
            x[i] = tie_prone(&seed);
        for (size_t i = 0; i < out; i++)
            dy[i] = i % 7 == 3 ? -0.0f : i % 11 == 5 ? NAN : gradient(&seed);
        dt_maxpool2_plane(x, y, arg, w, oh, ow);
        for (size_t o = 0; o < out; o++)
            if (y[o] > 0.0f)
                rdx[arg[o]] = dy[o];
        for (size_t i = 0; i < in; i++)
            dx[i] = NAN;
        dt_unpool2_plane(dy, arg, y, dx, h, w, oh, ow);
        bits_equal(dx, rdx, in * sizeof *dx, "dx (relu)", 2, 2, h, w);
        free(x), free(y), free(dy), free(dx), free(rdx), free(arg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maxpool_2x2_shapes),
        cmocka_unit_test(test_maxpool_other_windows),
        cmocka_unit_test(test_unpool2_relu_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
