/* test_nn_model.c — layer strings (errors point at the token), seeded
 * initialization, the gradient-ready callback, a short training run
 * that must learn a separable task, and the parameter tensors and kinds
 * the trainer gives a layer-wise optimizer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dt/log.h>
#include "nn/model.h"
#include "nn_testutil.h"
#include "train/train.h"
#include "stderr_capture.h"

#define CNN "conv(32,3,pad=1) relu maxpool(2) conv(64,3,pad=1) relu " \
            "maxpool(2) flatten linear(128) relu linear(10)"

static void test_parse_cnn(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(CNN, NULL, 1, 28, 28, 10, &m, NULL),
                     DT_OK);
    /* conv1 32*9+32, conv2 64*32*9+64, fc 3136*128+128, out 128*10+10 */
    assert_int_equal(dt_model_nparams(m),
                     320 + 18496 + (3136 * 128 + 128) + 1290);
    dt_model_free(m);
    assert_int_equal(dt_model_parse("flatten, linear(256) relu linear(128)"
                                    " relu dropout(0.2) linear( out = 10 )",
                                    NULL, 1, 28, 28, 10, &m, NULL), DT_OK);
    assert_int_equal(dt_model_nparams(m),
                     784 * 256 + 256 + 256 * 128 + 128 + 1290);
    dt_model_free(m);
    /* names end at blanks, ',' and '(' as before */
    assert_int_equal(dt_model_parse("flatten\tlinear (128),relu\nlinear\t"
                                    "(10)", NULL, 1, 28, 28, 10, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_nparams(m), 784 * 128 + 128 + 1290);
    dt_model_free(m);
}

/* The error must name the problem (err.column: the token's byte offset,
 * col), and the caret line must sit under it in the echoed string: the
 * caret after mark_col characters (UTF-8 code points, as a terminal shows
 * them), followed by mark_len - 1 '~' when mark_len > 0. The echo shows
 * blanks (tabs, newlines) as spaces. */
static void expect_mark(const char *layers, int col, int mark_col,
                        int mark_len, const char *words)
{
    dt_model_t *m = NULL;
    dt_model_error_t err;
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_model_parse(layers, "job.ini:3", 1, 28, 28, 10, &m,
                                    &err);
    char *text = capture_end(&cap);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_null(m);
    assert_int_equal(err.column, col);
    assert_non_null(strstr(err.message, words));
    assert_non_null(strstr(text, "job.ini:3: "));
    assert_non_null(strstr(text, words));
    /* Find the echoed string (after the message's line, which may quote
     * the layer), then the caret line right after it. */
    char *after = strchr(strstr(text, "job.ini:3: "), '\n');
    assert_non_null(after);
    char *shown = strdup(layers);
    assert_non_null(shown);
    for (char *c = shown; *c; c++)
        if (*c == '\t' || *c == '\n')
            *c = ' ';
    char *echo = strstr(after, shown);
    free(shown);
    assert_non_null(echo);
    char *line_start = echo;
    while (line_start > text && line_start[-1] != '\n')
        line_start--;
    char *next = strchr(echo, '\n');
    assert_non_null(next);
    next++;
    size_t prefix = (size_t)(echo - line_start);
    assert_true(strlen(next) > prefix + (size_t)mark_col);
    assert_memory_equal(next, line_start, prefix);
    for (int i = 0; i < mark_col; i++)
        assert_int_equal(next[prefix + (size_t)i], ' ');
    const char *mark = next + prefix + mark_col;
    assert_int_equal(mark[0], '^');
    if (mark_len > 0) {
        int run = 1;
        while (mark[run] == '~')
            run++;
        assert_int_equal(run, mark_len);
        assert_true(mark[run] == '\n' || mark[run] == '\0');
    }
    free(text);
}

static void expect_error(const char *layers, int col, const char *words)
{
    expect_mark(layers, col, col, 0, words);
}

static void test_parse_errors(void **state)
{
    expect_error("flatten linear(128) rleu linear(10)", 20,
                 "unknown layer 'rleu'");
    expect_error("conv(32,3,pad=1) relu conv(64,x) flatten linear(10)", 30,
                 "not an integer");
    expect_error("conv(32,3,pda=1) flatten linear(10)", 10,
                 "no argument 'pda'");
    expect_error("conv(32) flatten linear(10)", 0, "needs argument 'k'");
    expect_error("flatten linear(128 linear(10)", 8, "missing its ')'");
    expect_error("linear(10)", 0, "put flatten before it");
    expect_error("flatten conv(4,3) linear(10)", 8, "image input");
    expect_error("flatten linear(128) relu linear(12)", 25,
                 "must end in linear(10)");
    expect_error("maxpool(30) flatten linear(10)", 0, "larger than");
    expect_error("flatten dropout(1.5) linear(10)", 16, "out of range");
    expect_error("flatten relu(2) linear(10)", 13, "at most 0");
    dt_model_t *m = NULL;
    dt_model_error_t err;
    assert_int_equal(dt_model_parse("  ", NULL, 1, 2, 2, 2, &m, &err),
                     DT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "no layers"));
    expect_error("flatten linear(10)x", 18, "expected a space");
    /* A name is quoted whole as written, up to a blank, ',', '(' or ')'
     * (it was cut at its first byte that is no ASCII letter: 'lin'), and
     * the caret line counts characters: "linéar" is 6 columns, 7 bytes. */
    expect_mark("flatten linéar(10)", 8, 8, 6, "unknown layer 'linéar' "
                "(known: linear,");
    expect_mark("flatten linear(128) re.lu linear(10)", 20, 20, 5,
                "unknown layer 're.lu'");
    expect_mark("flatten linear(1é", 8, 8, 9, "missing its ')'");
    /* the character found, not its first byte; a tab echoes as a space */
    expect_mark("flatten\tlinear(10)é relu", 18, 18, 1,
                "expected a space between layers, found 'é'");
    expect_mark("flatten linéaire(10) relu", 8, 8, 8,
                "unknown layer 'linéaire'");
    /* 14,000 layers: refused at the stage that passes 10,000 (planning
     * the activations' memory is quadratic in their number) */
    expect_error("stage(basic,1,1000) stage(basic,1,1000) gap flatten "
                 "linear(10)", 20, "more than 10000 layers");
    /* an input whose size per sample overflows an int: refused at once
     * (1x65536x65536 parsed with a flatten of 0 values and 10 params) */
    m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(10)", NULL, 1, 65536,
                                    65536, 10, &m, NULL),
                     DT_ERR_INVALID);
    assert_null(m);
    assert_int_equal(dt_model_parse("flatten linear(10)", NULL, 1, 46341,
                                    46341, 10, &m, NULL),
                     DT_ERR_INVALID);
}

static void test_init_deterministic(void **state)
{
    dt_model_t *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(dt_model_parse(CNN, NULL, 1, 28, 28, 10, &a, NULL), 0);
    assert_int_equal(dt_model_parse(CNN, NULL, 1, 28, 28, 10, &b, NULL), 0);
    assert_int_equal(dt_model_parse(CNN, NULL, 1, 28, 28, 10, &c, NULL), 0);
    assert_int_equal(dt_model_init(a, NULL, 5), DT_OK);
    assert_int_equal(dt_model_init(b, NULL, 5), DT_OK);
    assert_int_equal(dt_model_init(c, NULL, 6), DT_OK);
    float *pa, *pb, *pc;
    size_t n;
    assert_int_equal(dt_model_params(a, &pa, NULL, &n), DT_OK);
    assert_int_equal(dt_model_params(b, &pb, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_params(c, &pc, NULL, NULL), DT_OK);
    assert_memory_equal(pa, pb, n * sizeof *pa);
    assert_memory_not_equal(pa, pc, n * sizeof *pa);
    dt_model_free(a);
    dt_model_free(b);
    dt_model_free(c);
}

/* He (followed by relu): std sqrt(2/fan_in); Xavier otherwise: uniform in
 * +-sqrt(6/(fan_in+fan_out)); biases zero. */
static void test_init_scales(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(200) relu linear(10)",
                                    NULL, 1, 20, 20, 10, &m, NULL), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 9), DT_OK);
    float *p;
    assert_int_equal(dt_model_params(m, &p, NULL, NULL), DT_OK);
    size_t n1 = 200 * 400;
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n1; i++)
        sum += p[i], sq += (double)p[i] * p[i];
    double mean = sum / n1, std = sqrt(sq / n1 - mean * mean);
    assert_true(fabs(mean) < 0.01 * sqrt(2.0 / 400));
    assert_true(fabs(std / sqrt(2.0 / 400) - 1.0) < 0.02);
    for (size_t i = n1; i < n1 + 200; i++)
        assert_true(p[i] == 0.0f);
    float *w2 = p + n1 + 200;
    double limit = sqrt(6.0 / (200 + 10)), maxabs = 0;
    sq = 0;
    for (size_t i = 0; i < 2000; i++) {
        maxabs = fmax(maxabs, fabs(w2[i]));
        sq += (double)w2[i] * w2[i];
    }
    assert_true(maxabs <= limit);
    assert_true(maxabs > 0.95 * limit);
    assert_true(fabs(sqrt(sq / 2000) / (limit / sqrt(3.0)) - 1.0) < 0.05);
    dt_model_free(m);
}

typedef struct ranges {
    size_t next_end; /* the next range must end here */
    int calls;
    int bad;
} ranges_t;

static dt_status_t on_ready(void *arg, size_t offset, size_t len)
{
    ranges_t *r = arg;
    if (offset + len != r->next_end || len == 0)
        r->bad++;
    r->next_end = offset;
    r->calls++;
    return DT_OK;
}

static dt_status_t stop_now(void *arg, size_t offset, size_t len)
{
    return DT_ERR_INTERRUPTED;
}

static void test_grad_callback(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("conv(4,3) relu maxpool(2) flatten "
                                    "linear(16) relu linear(10)", NULL, 1, 10,
                                    10, 10, &m, NULL), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 3), DT_OK);
    float x[2 * 100];
    int y[2] = {3, 7};
    fill_random(x, 200, 77);
    float loss;
    assert_int_equal(dt_model_forward(m, x, y, 2, 1, &loss, NULL), DT_OK);
    ranges_t r = {dt_model_nparams(m), 0, 0};
    assert_int_equal(dt_model_backward(m, on_ready, &r), DT_OK);
    assert_int_equal(r.bad, 0);
    assert_int_equal(r.calls, 3);     /* three layers have parameters */
    assert_int_equal(r.next_end, 0);  /* ... and cover the buffer */
    /* A second backward of the same forward would run on gradients
     * written over its activations: refused. */
    assert_int_equal(dt_model_backward(m, NULL, NULL), DT_ERR_INVALID);
    assert_int_equal(dt_model_forward(m, x, y, 2, 1, &loss, NULL), DT_OK);
    assert_int_equal(dt_model_backward(m, stop_now, NULL),
                     DT_ERR_INTERRUPTED);
    /* Backward without a training forward is an error, not garbage. */
    assert_int_equal(dt_model_forward(m, x, y, 2, 0, &loss, NULL), DT_OK);
    assert_int_equal(dt_model_backward(m, NULL, NULL), DT_ERR_INVALID);
    int badlabel[2] = {3, 10};
    assert_int_equal(dt_model_forward(m, x, badlabel, 2, 1, &loss, NULL),
                     DT_ERR_INVALID);
    dt_model_free(m);
}

/* Four Gaussian blobs in 2-D (as 1x1x2 inputs); plain SGD on the flat
 * buffers must learn them. */
static void test_learns(void **state)
{
    enum { N = 256, B = 32 };
    static float x[N * 2];
    static int y[N];
    uint64_t s = 11;
    const float cx[4] = {-1, 1, -1, 1}, cy[4] = {-1, -1, 1, 1};
    for (int i = 0; i < N; i++) {
        y[i] = i % 4;
        x[2 * i] = cx[y[i]] + 0.3f * test_rand(&s);
        x[2 * i + 1] = cy[y[i]] + 0.3f * test_rand(&s);
    }
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(16) relu linear(4)", NULL,
                                    1, 1, 2, 4, &m, NULL), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 1), DT_OK);
    float *p, *g;
    size_t n;
    assert_int_equal(dt_model_params(m, &p, &g, &n), DT_OK);
    float first = 0, loss = 0;
    for (int epoch = 0; epoch < 30; epoch++)
        for (int b = 0; b < N; b += B) {
            assert_int_equal(dt_model_forward(m, x + 2 * b, y + b, B, 1, &loss,
                                              NULL), DT_OK);
            if (epoch == 0 && b == 0)
                first = loss;
            assert_int_equal(dt_model_backward(m, NULL, NULL), DT_OK);
            for (size_t i = 0; i < n; i++)
                p[i] -= 0.1f * g[i];
        }
    int correct = 0;
    assert_int_equal(dt_model_forward(m, x, y, N, 0, &loss, &correct), DT_OK);
    fprintf(stderr, "first loss %.3f, final loss %.3f, accuracy %d/%d\n",
            first, loss, correct, N);
    assert_true(loss < first / 4);
    assert_true(correct > N * 95 / 100);
    dt_model_free(m);
}

/* Logits and gradients of one batch, with the model's convs computed by
 * algo; returns the loss. grads: nparams floats, logits: batch*10. */
static float conv_pass(dt_model_t *m, dt_conv_algo_t algo, const float *x,
                       const int *y, int batch, float *grads, float *logits)
{
    float loss = NAN, *p, *g;
    size_t n;
    assert_int_equal(dt_model_set_conv_algo(m, algo), DT_OK);
    assert_int_equal(dt_model_forward(m, x, y, batch, 1, &loss, NULL), DT_OK);
    memcpy(logits, dt_model_output(m)->data, (size_t)batch * 10 * sizeof(float));
    assert_int_equal(dt_model_backward(m, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_params(m, &p, &g, &n), DT_OK);
    memcpy(grads, g, n * sizeof *g);
    return loss;
}

/* The shipped CNN gives the same loss, logits and gradients (to float
 * rounding) with its convs by im2col and by Winograd, switched on one
 * model after init; batch 13 makes conv2's last group of samples a
 * partial one (groups of 5). */
#define RESNET_SMALL "conv(16,3,pad=1,bias=no) batchnorm relu " \
    "stage(basic,16,1) stage(basic,32,1,stride=2) gap flatten linear(10)"

static void test_conv_algos_agree(void **state)
{
    enum { B = 13 };
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(CNN, NULL, 1, 28, 28, 10, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 3), DT_OK);
    size_t n = dt_model_nparams(m);
    static float x[B * 784], logits[2][B * 10];
    int y[B];
    fill_random(x, B * 784, 99);
    for (int i = 0; i < B; i++)
        y[i] = (i * 7) % 10;
    float *g[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    assert_non_null(g[0]);
    assert_non_null(g[1]);
    float l0 = conv_pass(m, DT_CONV_IM2COL, x, y, B, g[0], logits[0]);
    float l1 = conv_pass(m, DT_CONV_WINOGRAD, x, y, B, g[1], logits[1]);
    fprintf(stderr, "loss im2col %.7f winograd %.7f\n", l0, l1);
    assert_float_equal(l0, l1, 1e-5 * fabsf(l0));
    for (int i = 0; i < B * 10; i++)
        assert_float_equal(logits[0][i], logits[1][i], 1e-4);
    float gmax = 0.0f, dmax = 0.0f;
    for (size_t i = 0; i < n; i++) {
        gmax = fmaxf(gmax, fabsf(g[0][i]));
        dmax = fmaxf(dmax, fabsf(g[0][i] - g[1][i]));
    }
    fprintf(stderr, "gradients: max |g| %.3g, max difference %.3g\n", gmax,
            dmax);
    assert_true(gmax > 0.0f);
    assert_true(dmax <= 1e-4f * gmax);
    /* switching drops the last forward's buffers: backward must refuse */
    assert_int_equal(dt_model_set_conv_algo(m, DT_CONV_IM2COL), DT_OK);
    assert_int_equal(dt_model_backward(m, NULL, NULL), DT_ERR_INVALID);
    assert_int_equal(dt_model_set_conv_algo(m, (dt_conv_algo_t)7),
                     DT_ERR_INVALID);
    dt_conv_algo_t a;
    assert_int_equal(dt_conv_algo_parse("winograd", &a), DT_OK);
    assert_int_equal(a, DT_CONV_WINOGRAD);
    assert_int_equal(dt_conv_algo_parse("winograd4", &a), DT_OK);
    assert_int_equal(a, DT_CONV_WINOGRAD4);
    assert_int_equal(dt_conv_algo_parse("fft", &a), DT_ERR_INVALID);
    free(g[0]);
    free(g[1]);
    dt_model_free(m);
}

/* Two passes over one batch (losses l0, l1; logits, 10 per sample, and
 * n gradients each) agree: the losses to 1e-5, logits within tol of the
 * largest (or 1), gradients within tol x the largest. */
static void passes_agree(float l0, float l1, float *logits[2], float *g[2],
                         int batch, size_t n, float tol)
{
    float lmax = 0.0f, ldiff = 0.0f, gmax = 0.0f, dmax = 0.0f;
    for (int i = 0; i < batch * 10; i++) {
        lmax = fmaxf(lmax, fabsf(logits[0][i]));
        ldiff = fmaxf(ldiff, fabsf(logits[0][i] - logits[1][i]));
    }
    for (size_t i = 0; i < n; i++) {
        gmax = fmaxf(gmax, fabsf(g[0][i]));
        dmax = fmaxf(dmax, fabsf(g[0][i] - g[1][i]));
    }
    fprintf(stderr, "loss %.7f / %.7f, logits max %.3g diff %.3g, "
            "gradients max %.3g diff %.3g\n", l0, l1, lmax, ldiff, gmax,
            dmax);
    assert_float_equal(l0, l1, 1e-5 * fabsf(l0));
    assert_true(ldiff <= tol * fmaxf(lmax, 1.0f));
    assert_true(gmax > 0.0f);
    assert_true(dmax <= tol * gmax);
}

/* One batch of layers on (c, h, w) inputs, 10 classes, by im2col and by
 * algo, with the activations in layout: loss, logits and every gradient
 * agree to float rounding (logits within tol, gradients within tol x the
 * largest). */
static void algos_agree_in(const char *layers, int c, int h, int w,
                           int batch, dt_conv_algo_t algo, float tol,
                           dt_layout_t layout)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_set_layout(m, layout), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 5), DT_OK);
    if (layout != DT_LAYOUT_NCHW && dt_model_layout(m) == DT_LAYOUT_NCHW) {
        dt_model_free(m); /* no NHWC form: the NCHW call checked it */
        return;
    }
    size_t n = dt_model_nparams(m), in = (size_t)batch * c * h * w;
    float *x = malloc(in * sizeof *x),
          *logits[2] = {malloc((size_t)batch * 10 * sizeof(float)),
                        malloc((size_t)batch * 10 * sizeof(float))},
          *g[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    int *y = malloc((size_t)batch * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(logits[0]);
    assert_non_null(logits[1]);
    assert_non_null(g[0]);
    assert_non_null(g[1]);
    fill_random(x, in, 17);
    for (int i = 0; i < batch; i++)
        y[i] = (i * 3) % 10;
    float l0 = conv_pass(m, DT_CONV_IM2COL, x, y, batch, g[0], logits[0]);
    float l1 = conv_pass(m, algo, x, y, batch, g[1], logits[1]);
    fprintf(stderr, "%s on %dx%dx%d (%s): ", layers, c, h, w,
            dt_model_layout(m) == DT_LAYOUT_NHWC ? "nhwc" : "nchw");
    passes_agree(l0, l1, logits, g, batch, n, tol);
    free(x);
    free(y);
    free(logits[0]);
    free(logits[1]);
    free(g[0]);
    free(g[1]);
    dt_model_free(m);
}

/* Both layouts (NHWC where the model has one) */
static void algos_agree(const char *layers, int c, int h, int w, int batch,
                        dt_conv_algo_t algo, float tol)
{
    algos_agree_in(layers, c, h, w, batch, algo, tol, DT_LAYOUT_NCHW);
    algos_agree_in(layers, c, h, w, batch, algo, tol, DT_LAYOUT_AUTO);
}

/* Logits and gradients of one batch in layout; returns the loss. */
static float layout_pass(dt_model_t *m, dt_layout_t layout, const float *x,
                         const int *y, int batch, float *grads,
                         float *logits)
{
    float loss = NAN, *p, *g;
    size_t n;
    assert_int_equal(dt_model_set_layout(m, layout), DT_OK);
    assert_int_equal(dt_model_layout(m), layout);
    assert_int_equal(dt_model_forward(m, x, y, batch, 1, &loss, NULL), DT_OK);
    memcpy(logits, dt_model_output(m)->data,
           (size_t)batch * 10 * sizeof(float));
    assert_int_equal(dt_model_backward(m, NULL, NULL), DT_OK);
    assert_int_equal(dt_model_params(m, &p, &g, &n), DT_OK);
    memcpy(grads, g, n * sizeof *g);
    return loss;
}

/* NCHW and NHWC give one model (switched after init) the same loss,
 * logits and gradients to float rounding. Batchnorm is in eval mode for
 * neither: its batch statistics make deep nets amplify rounding, so
 * these models are shallow. */
static void layouts_agree(const char *layers, int c, int h, int w,
                          int batch, dt_conv_algo_t algo)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_set_conv_algo(m, algo), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 11), DT_OK);
    size_t n = dt_model_nparams(m), in = (size_t)batch * c * h * w;
    float *x = malloc(in * sizeof *x), *logits[2], *g[2];
    int *y = malloc((size_t)batch * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (int k = 0; k < 2; k++) {
        logits[k] = malloc((size_t)batch * 10 * sizeof(float));
        g[k] = malloc(n * sizeof(float));
        assert_non_null(logits[k]);
        assert_non_null(g[k]);
    }
    fill_random(x, in, 23);
    for (int i = 0; i < batch; i++)
        y[i] = (i * 7) % 10;
    float l0 = layout_pass(m, DT_LAYOUT_NCHW, x, y, batch, g[0], logits[0]);
    float l1 = layout_pass(m, DT_LAYOUT_NHWC, x, y, batch, g[1], logits[1]);
    fprintf(stderr, "%s on %dx%dx%d, nchw / nhwc: ", layers, c, h, w);
    passes_agree(l0, l1, logits, g, batch, n, 1e-4f);
    free(x);
    free(y);
    for (int k = 0; k < 2; k++) {
        free(logits[k]);
        free(g[k]);
    }
    dt_model_free(m);
}

/* Every layer's NHWC form against its NCHW one: gray and RGB inputs (the
 * first conv by NCHW columns, RGB transposed), Winograd F(4x4) and
 * F(2x2) on exact and odd planes (border tiles through the patch, tiles
 * past the output), its relu fused, stride 2 and 1x1 projections,
 * pointwise convs, batchnorm (+relu) with 16, 24 (not folding into 64
 * lanes) and 64 channels, residual adds, gap, flatten of a 3x3 plane
 * (transposed back to NCHW order); batch 7
 * makes partial sample groups. */
static void test_layouts_agree(void **state)
{
    layouts_agree("conv(16,3,pad=1,bias=no) batchnorm relu "
                  "stage(basic,16,1) stage(basic,32,1,stride=2) gap flatten "
                  "linear(10)", 1, 12, 12, 7, DT_CONV_AUTO);
    layouts_agree("conv(24,3,pad=1) batchnorm relu conv(24,3,pad=1) relu "
                  "conv(8,3) relu flatten linear(10)",
                  3, 9, 7, 5, DT_CONV_AUTO);
    layouts_agree("conv(16,3,pad=1) relu conv(16,3,pad=1) relu "
                  "conv(64,1) batchnorm relu conv(12,3,stride=2,pad=1) "
                  "flatten linear(10)", 2, 10, 10, 3, DT_CONV_WINOGRAD);
    layouts_agree("conv(16,3,pad=1) relu conv(16,3,pad=2) relu flatten "
                  "linear(10)", 3, 7, 9, 4, DT_CONV_WINOGRAD4);
    layouts_agree("conv(16,3,pad=1) relu conv(16,3,pad=1) flatten "
                  "linear(10)", 3, 8, 8, 2, DT_CONV_IM2COL);
}

/* auto picks NHWC only where every layer has it; NHWC asked for where
 * one has not is refused naming it, by dt_model_check_nhwc on the parsed
 * model (dtctl) as by dt_model_init; bad values are refused */
static void test_layout_choice(void **state)
{
    static const struct {
        const char *layers;
        dt_layout_t want;
        int nhwc_ok; /* every layer has an NHWC form */
    } cases[] = {
        {RESNET_SMALL, DT_LAYOUT_NHWC, 1},
        {CNN, DT_LAYOUT_NCHW, 0}, /* maxpool */
        {"conv(8,3) relu avgpool(2) flatten linear(10)", DT_LAYOUT_NCHW, 0},
        {"conv(8,3) dropout(0.5) flatten linear(10)", DT_LAYOUT_NCHW, 0},
        {"flatten linear(16) relu linear(10)", DT_LAYOUT_NCHW, 1}, /* no conv */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dt_model_t *m = NULL;
        assert_int_equal(dt_model_parse(cases[i].layers, NULL, 1, 28, 28,
                                        10, &m, NULL),
                         DT_OK);
        capture_t quiet;
        capture_begin(&quiet);
        dt_status_t ok = dt_model_check_nhwc(m, "job.ini:3");
        free(capture_end(&quiet));
        assert_int_equal(ok, cases[i].nhwc_ok ? DT_OK : DT_ERR_UNSUPPORTED);
        assert_int_equal(dt_model_init(m, NULL, 1), DT_OK);
        assert_int_equal(dt_model_layout(m), cases[i].want);
        if (cases[i].want == DT_LAYOUT_NCHW &&
            strstr(cases[i].layers, "conv")) {
            capture_t cap;
            capture_begin(&cap);
            dt_status_t st = dt_model_set_layout(m, DT_LAYOUT_NHWC);
            char *err = capture_end(&cap);
            assert_int_equal(st, DT_ERR_UNSUPPORTED);
            assert_non_null(strstr(err, "layout DT_LAYOUT_NHWC, but layer "));
            assert_non_null(strstr(err, " no NHWC form: use DT_LAYOUT_AUTO"));
            free(err);
            assert_int_equal(dt_model_layout(m), DT_LAYOUT_NCHW);
        }
        assert_int_equal(dt_model_set_layout(m, DT_LAYOUT_NCHW), DT_OK);
        assert_int_equal(dt_model_layout(m), DT_LAYOUT_NCHW);
        dt_model_free(m);
    }
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(CNN, NULL, 1, 28, 28, 10, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_set_layout(m, DT_LAYOUT_NHWC), DT_OK);
    /* the maxpools as written, not the conv that runs them fused */
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(dt_model_init(m, NULL, 1), DT_ERR_UNSUPPORTED);
    char *err = capture_end(&cap);
    assert_non_null(strstr(err, "layer 2 'maxpool(2)' (max pooling runs in "
                                "NCHW only"));
    assert_non_null(strstr(err, " and layer 5 'maxpool(2)' ("));
    assert_null(strstr(err, "fused"));
    free(err);
    /* dtctl's: the same layers, after the job file's line */
    capture_begin(&cap);
    assert_int_equal(dt_model_check_nhwc(m, "job.ini:3"),
                     DT_ERR_UNSUPPORTED);
    err = capture_end(&cap);
    assert_non_null(strstr(err, "job.ini:3: [model] layout = nhwc, but "
                                "layer 2 'maxpool(2)' ("));
    assert_non_null(strstr(err, "set layout = auto"));
    free(err);
    dt_log_set_level(DT_LOG_ERROR);
    assert_int_equal(dt_model_set_layout(m, (dt_layout_t)9), DT_ERR_INVALID);
    dt_log_set_level(DT_LOG_INFO);
    dt_model_free(m);
    dt_layout_t l;
    assert_int_equal(dt_layout_parse("nhwc", &l), DT_OK);
    assert_int_equal(l, DT_LAYOUT_NHWC);
    assert_int_equal(dt_layout_parse("nchw", &l), DT_OK);
    assert_int_equal(l, DT_LAYOUT_NCHW);
    assert_int_equal(dt_layout_parse("NHWC", &l), DT_ERR_INVALID);
}

/* Winograd F(4x4, 3x3) against im2col: plain, with the relu fused and
 * with a pool fused (that conv stays F(2x2)); even planes and odd ones
 * (7x7, 5x9: the last tiles hang over the output's edge by 1 to 3
 * pixels), pad 1 and 0, several and many channels (the blocked
 * transposes and their left-over channels); batch 7 makes partial
 * groups. The same 1e-4 as F(2x2) above holds. */
static void test_conv_winograd4_agrees(void **state)
{
    algos_agree("conv(16,3,pad=1) relu conv(12,3,pad=1) flatten linear(10)",
                3, 8, 8, 7, DT_CONV_WINOGRAD4, 1e-4f);
    algos_agree("conv(16,3,pad=1) relu conv(9,3,pad=1) relu flatten "
                "linear(10)", 5, 7, 7, 3, DT_CONV_WINOGRAD4, 1e-4f);
    algos_agree("conv(8,3) conv(16,3,pad=1) relu flatten linear(10)", 4, 9,
                5, 2, DT_CONV_WINOGRAD4, 1e-4f);
    algos_agree("conv(32,3,pad=1) relu conv(32,3,pad=1) relu maxpool(2) "
                "conv(64,3,pad=1) relu flatten linear(10)",
                16, 16, 16, 7, DT_CONV_WINOGRAD4, 1e-4f);
    algos_agree("conv(16,3,pad=1) batchnorm relu stage(basic,16,2) gap "
                "flatten linear(10)", 3, 16, 16, 4, DT_CONV_WINOGRAD4, 1e-4f);
}

/* dt_gemm with beta = 0 (every layer's call) writes C = A B whatever C
 * held before, NaN included, and nothing of a row past its n columns
 * (ldc > n); with beta = 1 it adds to C. Small integers: exact sums. */
static void test_gemm_beta_zero(void **state)
{
    (void)state;
    dt_device_t *dev = NULL;
    assert_int_equal(dt_device_open("cpu", 0, 1, &dev), DT_OK);
    enum { M = 3, N = 5, K = 4, LDC = 7 };
    float a[M * K], b[K * N], c[M * LDC], want[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (float)(i % 5) - 2.0f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)(i % 3) + 1.0f;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int p = 0; p < K; p++)
                sum += a[i * K + p] * b[p * N + j];
            want[i * N + j] = sum;
        }
    for (int ldc = N; ldc <= LDC; ldc += LDC - N) {
        for (int i = 0; i < M * LDC; i++)
            c[i] = i % 2 ? NAN : 1e30f;
        assert_int_equal(dt_gemm(dev, 0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f,
                                 c, ldc),
                         DT_OK);
        for (int i = 0; i < M; i++) {
            for (int j = 0; j < N; j++)
                assert_true(c[i * ldc + j] == want[i * N + j]);
            for (int j = N; j < ldc; j++) { /* past the row: untouched */
                int at = i * ldc + j;
                assert_true(at % 2 ? isnan(c[at]) : c[at] == 1e30f);
            }
        }
        assert_int_equal(dt_gemm(dev, 0, 0, M, N, K, 1.0f, a, K, b, N, 1.0f,
                                 c, ldc),
                         DT_OK);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                assert_true(c[i * ldc + j] == 2.0f * want[i * N + j]);
    }
    dt_device_close(dev);
}

static void test_device_open(void **state)
{
    dt_device_t *dev = NULL;
    assert_int_equal(dt_device_open("cpu", 0, 1, &dev), DT_OK);
    assert_int_equal(dev->kind, DT_DEVICE_CPU);
    assert_int_equal(dev->mem, DT_MEM_HOST);
    dt_device_close(dev);
    assert_int_equal(dt_device_open("auto", 0, 1, &dev), DT_OK);
    if (dt_cuda_device_count() == 0)
        assert_int_equal(dev->kind, DT_DEVICE_CPU);
    dt_device_close(dev);
    dt_log_set_level(DT_LOG_ERROR);
    assert_int_equal(dt_device_open("tpu", 0, 1, &dev), DT_ERR_CONFIG);
    assert_int_equal(dt_device_open("cpu", 0, 0, &dev), DT_ERR_CONFIG);
    if (dt_cuda_device_count() == 0)
        assert_int_equal(dt_device_open("cuda", 0, 1, &dev),
                         DT_ERR_UNSUPPORTED);
    dt_log_set_level(DT_LOG_INFO);
}


/* ---- ResNets: batchnorm, stages, the summary ---- */

#define RESNET20 "conv(16,3,pad=1,bias=no) batchnorm relu " \
    "stage(basic,16,3) stage(basic,32,3,stride=2) " \
    "stage(basic,64,3,stride=2) gap flatten linear(10)"

typedef struct lines {
    char text[16384];
    int n;
} lines_t;

static void collect(void *arg, const char *line)
{
    lines_t *ls = arg;
    size_t at = strlen(ls->text);
    snprintf(ls->text + at, sizeof ls->text - at, "%s\n", line);
    ls->n++;
}

static size_t conv_p(size_t in, size_t out, size_t k)
{
    return in * out * k * k; /* bias=no */
}

/* ResNet-20 in the CIFAR form of He et al. (2016), projection shortcuts
 * (1x1 conv + batchnorm) where a stage changes channels and size:
 * counted layer by layer here, independently of the parser. */
static size_t resnet20_params(size_t in_c, size_t classes)
{
    size_t n = conv_p(in_c, 16, 3) + 2 * 16;
    size_t width[3] = {16, 32, 64}, prev = 16;
    for (int s = 0; s < 3; s++) {
        size_t c = width[s];
        for (int b = 0; b < 3; b++) {
            size_t in = b == 0 ? prev : c;
            n += conv_p(in, c, 3) + 2 * c + conv_p(c, c, 3) + 2 * c;
            if (in != c)
                n += conv_p(in, c, 1) + 2 * c;
        }
        prev = c;
    }
    return n + 64 * classes + classes;
}

static void test_resnet20_params(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(RESNET20, "job.ini:9", 1, 28, 28, 10, &m,
                                    NULL), DT_OK);
    assert_int_equal(dt_model_nparams(m), resnet20_params(1, 10));
    assert_int_equal(dt_model_nparams(m), 272186);
    /* 19 batchnorms of the main path + 2 of the projections, mean + var */
    assert_int_equal(dt_model_nbuffers(m),
                     2 * (16 + 3 * 2 * 16 + 3 * 2 * 32 + 32 + 3 * 2 * 64 +
                          64));
    dt_model_free(m);
    /* CIFAR-10: 3 input channels, 32x32 */
    assert_int_equal(dt_model_parse(RESNET20, NULL, 3, 32, 32, 10, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_nparams(m), resnet20_params(3, 10));
    assert_int_equal(dt_model_nparams(m), 272474);
    dt_model_free(m);
}

/* Backward's gradients share one block with the activations, placed by
 * lifetime (core/nn/model_arena.c): no two buffers live at one step
 * overlap; a layer's dy and dx are never the same memory; what the
 * gradients add to the activations is at most the two (a chain) or few
 * (ResNet-20: under 1.5) largest gradients live at once, and training is
 * unchanged (the finite-difference checks of test_nn_grad run on the
 * shared block too). Returns what the gradients add, in largest
 * gradients. */
static double grads_after_step(const char *layers, int c, int h, int w,
                               dt_model_t **out)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 1), DT_OK);
    size_t in = (size_t)4 * c * h * w;
    float *x = malloc(in * sizeof *x);
    assert_non_null(x);
    fill_random(x, in, 5);
    int y[4] = {1, 2, 3, 4};
    float loss;
    assert_int_equal(dt_model_forward(m, x, y, 4, 1, &loss, NULL), DT_OK);
    assert_int_equal(dt_model_backward(m, NULL, NULL), DT_OK);
    free(x);
    assert_int_equal(dt_model_block_overlaps(m, 4, 0), 0);
    int first = dt_model_first_backward(m);
    size_t largest = 0;
    for (int i = first; i < m->nlayers; i++) {
        const dt_layer_t *l = &m->layers[i];
        int o = i + 1 + l->fused;
        if (dt_layer_out_size(l) > largest)
            largest = dt_layer_out_size(l);
        if (l->absorbed)
            continue;
        assert_non_null(m->dacts[o]);
        if (l->src > first)
            assert_ptr_not_equal(m->dacts[l->src], m->dacts[o]);
        if (l->skip > first)
            assert_ptr_not_equal(m->dacts[l->skip], m->dacts[o]);
    }
    dt_model_memory_t k;
    dt_model_memory(m, &k);
    assert_int_equal(k.act_copies, 0); /* float32 activations: none */
    *out = m;
    return (double)k.act_grads / (double)(4 * largest * sizeof(float));
}

static void test_grad_buffers_shared(void **state)
{
    (void)state;
    dt_model_t *m;
    double g = grads_after_step("flatten linear(32) relu linear(32) "
                                "relu linear(32) relu linear(10)",
                                1, 8, 8, &m);
    print_message("MLP: gradients add %.2f largest ones\n", g);
    assert_true(g <= 2.0 + 1e-9);
    dt_model_free(m);
    g = grads_after_step(RESNET20, 1, 12, 12, &m);
    print_message("ResNet-20: gradients add %.2f largest ones for %d "
                  "layers\n", g, m->nlayers);
    assert_true(g <= 1.5); /* 0.69 measured */
    dt_model_free(m);
}

/* dt_model_memory_estimate before dt_model_init counts what init and a
 * step then allocate (dt_model_memory after them): the layers fused on
 * the cpu hold no activation of their own, and the estimate knows it
 * (unfused it would count conv-relu's and add-relu's outputs); the
 * layers' scratch is left out, never more. */
static void estimate_matches(const char *layers, int c, int h, int w)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse(layers, NULL, c, h, w, 10, &m, NULL),
                     DT_OK);
    dt_model_memory_t e, k;
    assert_int_equal(dt_model_memory_estimate(m, 4, 0, &e), DT_OK);
    assert_null(m->params); /* nothing allocated, nothing decided */
    for (int i = 0; i < m->nlayers; i++)
        assert_int_equal(m->layers[i].fused, 0);
    dt_model_t *done;
    grads_after_step(layers, c, h, w, &done); /* init, forward, backward */
    dt_model_memory(done, &k);
    print_message("%.40s...: estimate %zu + %zu + %zu, allocated %zu + %zu "
                  "+ %zu\n", layers, e.params, e.activations, e.act_grads,
                  k.params, k.activations, k.act_grads);
    assert_true(e.params == k.params);
    assert_true(e.activations == k.activations);
    assert_true(e.act_grads == k.act_grads);
    assert_true(e.act_copies == k.act_copies);
    assert_true(e.scratch <= k.scratch);
    /* after init the model's own fusion stands */
    assert_int_equal(dt_model_memory_estimate(done, 4, 0, &e), DT_OK);
    assert_true(e.activations == k.activations);
    dt_model_free(done);
    dt_model_free(m);
}

static void test_memory_estimate(void **state)
{
    (void)state;
    estimate_matches("flatten linear(32) relu linear(32) relu linear(10)", 1,
                     8, 8);
    estimate_matches("conv(8,3,pad=1) relu maxpool(2) conv(8,3,pad=1) relu "
                     "flatten linear(10)", 1, 8, 8);
    estimate_matches(RESNET20, 1, 12, 12);
    /* terabytes of parameters: counted, not allocated (size_t, no wrap) */
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(16000000) relu "
                                    "linear(65536) relu linear(10)", NULL, 1,
                                    28, 28, 10, &m, NULL), DT_OK);
    dt_model_memory_t e;
    assert_int_equal(dt_model_memory_estimate(m, 32, 0, &e), DT_OK);
    size_t n = 784ull * 16000000 + 16000000 + 16000000ull * 65536 + 65536 +
               65536 * 10 + 10;
    assert_true(e.params == 2 * n * sizeof(float));
    assert_true(e.activations > 32ull * 16000000 * sizeof(float));
    assert_int_equal(dt_model_memory_estimate(m, 0, 0, &e), DT_ERR_INVALID);
    dt_model_free(m);
}

/* dt_model_flops: 2 per multiply-add of convolutions and linear layers.
 * ResNet-20 on CIFAR-10 is the often-quoted ~41M multiply-adds:
 * stem 3->16 at 32x32, 6 convs 16->16 at 32x32, per later stage one
 * strided 3x3, a 1x1 projection and 5 3x3 at 16x16 (32 ch) / 8x8 (64),
 * the classifier: 40,813,184 multiply-adds. */
static void test_flops(void **state)
{
    (void)state;
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("conv(16,3,pad=1) relu maxpool(2) "
                                    "flatten linear(10)", NULL, 1, 28, 28,
                                    10, &m, NULL), DT_OK);
    /* 2*9*1*16*28*28 + 2*(16*14*14)*10 */
    assert_true(dt_model_flops(m) == 225792.0 + 62720.0);
    dt_model_free(m);
    assert_int_equal(dt_model_parse(RESNET20, NULL, 3, 32, 32, 10, &m, NULL),
                     DT_OK);
    assert_true(dt_model_flops(m) == 2.0 * 40813184.0);
    dt_model_free(m);
}

/* An optimizer that records what the trainer gives it. */
typedef struct tensor_rec {
    size_t off[16], n, nkinds;
    unsigned char kinds[16];
    int kinds_after_tensors;
} tensor_rec_t;

static dt_status_t rec_tensors(void *state, const size_t *off, size_t n)
{
    tensor_rec_t *r = state;
    assert_true(n < 16);
    memcpy(r->off, off, (n + 1) * sizeof *off);
    r->n = n;
    return DT_OK;
}

static dt_status_t rec_kinds(void *state, const unsigned char *kinds,
                             size_t n)
{
    tensor_rec_t *r = state;
    assert_true(n < 16);
    memcpy(r->kinds, kinds, n);
    r->nkinds = n;
    r->kinds_after_tensors = r->n == n;
    return DT_OK;
}

/* The parameter tensors and their kinds, as the trainer hands them to a
 * layer-wise optimizer: conv weights (no bias), batchnorm's scale and
 * shift as norm tensors, linear weights and bias; an optimizer built
 * before set_tensor_kinds gets the boundaries alone. */
static void test_param_tensor_kinds(void **state)
{
    (void)state;
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("conv(4,3,pad=1,bias=no) batchnorm relu "
                                    "flatten linear(8) batchnorm relu "
                                    "linear(3)", NULL, 1, 4, 4, 3, &m, NULL),
                     DT_OK);
    /* conv 4*9, bn 4 + 4, linear 64*8 + 8, bn 8 + 8, linear 8*3 + 3 */
    const size_t want_off[] = {0, 36, 40, 44, 556, 564, 572, 580, 604, 607};
    const unsigned char W = DT_TENSOR_WEIGHT, B = DT_TENSOR_BIAS,
                        N = DT_TENSOR_NORM;
    const unsigned char want_kinds[] = {W, N, N, W, B, N, N, W, B};
    size_t *off = NULL, n = 0, nk = 0;
    unsigned char *kinds = NULL;
    assert_int_equal(dt_model_param_tensors(m, &off, &n), DT_OK);
    assert_int_equal(n, 9);
    assert_memory_equal(off, want_off, sizeof want_off);
    assert_int_equal(dt_model_param_kinds(m, &kinds, &nk), DT_OK);
    assert_int_equal(nk, 9);
    assert_memory_equal(kinds, want_kinds, sizeof want_kinds);
    free(off);
    free(kinds);

    dt_optimizer_ops_t ops = {.size = sizeof ops,
                              .set_tensors = rec_tensors,
                              .set_tensor_kinds = rec_kinds};
    tensor_rec_t r = {0};
    assert_int_equal(dt_trainer_opt_tensors(NULL, &ops, &r, m, "rec"), DT_OK);
    assert_int_equal(r.n, 9);
    assert_memory_equal(r.off, want_off, sizeof want_off);
    assert_int_equal(r.nkinds, 9);
    assert_memory_equal(r.kinds, want_kinds, sizeof want_kinds);
    assert_true(r.kinds_after_tensors);
    /* A table that ends before set_tensor_kinds: boundaries only. */
    ops.size = offsetof(dt_optimizer_ops_t, set_tensor_kinds);
    memset(&r, 0, sizeof r);
    assert_int_equal(dt_trainer_opt_tensors(NULL, &ops, &r, m, "rec"), DT_OK);
    assert_int_equal(r.n, 9);
    assert_int_equal(r.nkinds, 0);
    dt_model_free(m);
}

/* stage() expands to blocks: layer counts, the projection only where the
 * shape changes, output shapes, and the summary's indentation. */
static void test_stage_expansion(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("conv(8,3,pad=1,bias=no) batchnorm relu "
                                    "stage(basic,8,2) stage(basic,16,1,"
                                    "stride=2) gap flatten linear(10)",
                                    NULL, 1, 28, 28, 10, &m, NULL), DT_OK);
    lines_t ls = {"", 0};
    dt_model_summary(m, collect, &ls);
    fprintf(stderr, "%s", ls.text);
    /* header, input, 3 stem, 2 x (7 + block line), 9 + block line, gap
     * flatten linear, total */
    assert_int_equal(ls.n, 2 + 3 + 2 * 8 + 10 + 3 + 1);
    assert_non_null(strstr(ls.text, "stage 1, block 2"));
    assert_non_null(strstr(ls.text, "stage 2, block 1"));
    assert_null(strstr(ls.text, "stage 2, block 2"));
    /* identity blocks in stage 1, a projection in stage 2 only */
    char *st2 = strstr(ls.text, "stage 2, block 1");
    char *proj = strstr(ls.text, "shortcut: conv(16,1,stride=2,bias=no)");
    assert_non_null(proj);
    assert_true(proj > st2);
    assert_null(strstr(proj + 1, "shortcut: conv"));
    assert_non_null(strstr(ls.text, "conv(16,3,stride=2,pad=1,bias=no)"));
    assert_non_null(strstr(ls.text, "16x14x14"));
    /* the indented block layers, and the two add layers of stage 1 */
    assert_non_null(strstr(ls.text, "    conv(8,3,pad=1,bias=no)"));
    int adds = 0;
    for (char *a = ls.text; (a = strstr(a, " add ")) != NULL; a++)
        adds++;
    assert_int_equal(adds, 3);
    size_t want = conv_p(1, 8, 3) + 16 + 2 * (2 * conv_p(8, 8, 3) + 32) +
                  conv_p(8, 16, 3) + conv_p(16, 16, 3) + 2 * 32 +
                  conv_p(8, 16, 1) + 32 + 16 * 10 + 10;
    assert_int_equal(dt_model_nparams(m), want);
    char total[64];
    snprintf(total, sizeof total, "total: %zu parameters", want);
    assert_non_null(strstr(ls.text, total));
    dt_model_free(m);
}

static void test_stage_errors(void **state)
{
    expect_error("conv(8,3) stage(bottleneck,16,3) gap flatten linear(10)",
                 16, "unknown block type 'bottleneck' (known: basic)");
    expect_error("conv(8,3) stage(16,3) gap flatten linear(10)", 16,
                 "the first argument is the block type");
    expect_error("conv(8,3) stage(basic,16) gap flatten linear(10)", 10,
                 "stage needs argument 'n'");
    expect_error("conv(8,3) stage gap flatten linear(10)", 10,
                 "stage needs its arguments");
    expect_error("flatten stage(basic,16,1) linear(10)", 8,
                 "stage 1: a residual stage needs an image input");
    expect_error("conv(8,3) stage(basic,16,1,strde=2) gap flatten "
                 "linear(10)", 27, "stage has no argument 'strde'");
    expect_error("conv(8,3,bias=maybe) flatten linear(10)", 14,
                 "argument 'bias' = 'maybe' is not yes or no");
    /* shape errors name the layer: its position and how it was written */
    expect_error("conv(8,3) flatten gap linear(10)", 18,
                 "layer 2 'gap': gap needs an image input");
    expect_error("conv(8,3) avgpool(30) flatten linear(10)", 10,
                 "layer 1 'avgpool(30)': avgpool window 30x30 is larger");
    /* (a stage's own layers always fit: 3x3 pad 1 and 1x1 convs) */
    expect_error("batchnorm(momentum=2) flatten linear(10)", 19,
                 "out of range");
    expect_error("gap flatten linear(12)", 12, "must end in linear(10)");
    expect_error("conv(3000000,1) flatten linear(10)", 5,
                 "argument 'out' = 3000000 is out of range [1, 65536]");
    /* per-sample sizes are ints: 32768 x 256 x 256 would overflow one
     * (an image folder of 256 x 256 images) */
    dt_model_t *m = NULL;
    dt_model_error_t err;
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_model_parse("conv(32768,1) flatten linear(10)",
                                    "job.ini:3", 3, 256, 256, 10, &m, &err);
    free(capture_end(&cap));
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_null(m);
    assert_non_null(strstr(err.message, "32768x256x256 = 2147483648 values "
                                        "per sample, more than dt's layers "
                                        "take"));
}

/* Eval mode normalizes with the running statistics, train mode with the
 * batch's, and a train forward moves the running statistics by momentum
 * (PyTorch: the running variance unbiased). */
static void test_batchnorm_running_stats(void **state)
{
    enum { B = 4, F = 3, K = 2 };
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten batchnorm linear(2)", NULL, 1, 1,
                                    F, K, &m, NULL), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 3), DT_OK);
    float *p, *buf;
    size_t n, nb;
    assert_int_equal(dt_model_params(m, &p, NULL, &n), DT_OK);
    assert_int_equal(n, F + F + K * F + K);
    assert_int_equal(dt_model_buffers(m, &buf, &nb), DT_OK);
    assert_int_equal(nb, 2 * F);
    for (int c = 0; c < F; c++) {
        assert_true(p[c] == 1.0f && p[F + c] == 0.0f); /* gamma, beta */
        assert_true(buf[c] == 0.0f && buf[F + c] == 1.0f);
    }
    const float gamma[F] = {1.0f, 2.0f, 0.5f}, beta[F] = {0.1f, -0.2f, 0.3f};
    const float W[K * F] = {0.3f, -0.7f, 1.1f, 0.9f, 0.2f, -0.4f};
    for (int c = 0; c < F; c++)
        p[c] = gamma[c], p[F + c] = beta[c];
    for (int i = 0; i < K * F; i++)
        p[2 * F + i] = W[i];
    p[2 * F + K * F] = 0.05f, p[2 * F + K * F + 1] = -0.05f;
    float x[B * F];
    fill_random(x, B * F, 5);
    for (int i = 0; i < B * F; i++)
        x[i] = 3.0f * x[i] + 2.0f; /* mean 2, far from the running 0 */
    int y[B] = {0, 1, 1, 0};
    float train_out[B * K], eval_out[B * K];
    assert_int_equal(dt_model_forward(m, x, y, B, 1, NULL, NULL), DT_OK);
    memcpy(train_out, dt_model_output(m)->data, sizeof train_out);
    double rm[F], rv[F];
    for (int c = 0; c < F; c++) {
        double s = 0, sq = 0;
        for (int b = 0; b < B; b++)
            s += x[b * F + c];
        double mean = s / B;
        for (int b = 0; b < B; b++)
            sq += (x[b * F + c] - mean) * (x[b * F + c] - mean);
        rm[c] = 0.1 * mean;
        rv[c] = 0.9 * 1.0 + 0.1 * sq / (B - 1);
        assert_float_equal(buf[c], rm[c], 1e-6);
        assert_float_equal(buf[F + c], rv[c], 1e-5);
    }
    assert_int_equal(dt_model_forward(m, x, NULL, B, 0, NULL, NULL), DT_OK);
    memcpy(eval_out, dt_model_output(m)->data, sizeof eval_out);
    double maxdiff = 0;
    for (int b = 0; b < B; b++)
        for (int k = 0; k < K; k++) {
            double z = p[2 * F + K * F + k];
            for (int c = 0; c < F; c++) {
                double xh = (x[b * F + c] - rm[c]) / sqrt(rv[c] + 1e-5);
                z += W[k * F + c] * (gamma[c] * xh + beta[c]);
            }
            assert_float_equal(eval_out[b * K + k], z, 1e-4);
            maxdiff = fmax(maxdiff, fabs(eval_out[b * K + k] -
                                         train_out[b * K + k]));
        }
    assert_true(maxdiff > 0.5); /* the batch's statistics are not used */
    /* eval leaves the running statistics alone */
    assert_float_equal(buf[0], rm[0], 1e-6);
    assert_float_equal(buf[F], rv[0], 1e-5);
    /* a batch of one sample (one value per channel, as an epoch's last
     * batch can be): nothing to learn, the running statistics stay
     * (moving them toward that batch's 0 variance wrecked evaluation) */
    assert_int_equal(dt_model_forward(m, x, y, 1, 1, NULL, NULL), DT_OK);
    for (int c = 0; c < F; c++) {
        assert_float_equal(buf[c], rm[c], 1e-6);
        assert_float_equal(buf[F + c], rv[c], 1e-5);
    }
    int layer = -1;
    assert_int_equal(dt_model_batchnorm_plane(m, &layer), 1);
    assert_int_equal(layer, 1);
    dt_model_free(m);
}

/* A layer without a CUDA path refuses a CUDA device by name, before it
 * touches it (a stand-in device: no GPU needed). */
static void test_cuda_refused(void **state)
{
    dt_device_t fake;
    memset(&fake, 0, sizeof fake);
    fake.kind = DT_DEVICE_CUDA;
    fake.mem = DT_MEM_CUDA;
    snprintf(fake.name, sizeof fake.name, "cuda:0 (stand-in)");
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("conv(4,3,bias=no) batchnorm relu flatten"
                                    " linear(10)", NULL, 1, 8, 8, 10, &m,
                                    NULL), DT_OK);
    capture_t cap;
    capture_begin(&cap);
    dt_status_t st = dt_model_init(m, &fake, 1);
    char *text = capture_end(&cap);
    assert_int_equal(st, DT_ERR_UNSUPPORTED);
    assert_non_null(strstr(text, "layer 1 'batchnorm' cannot run on cuda:0"));
    assert_non_null(strstr(text, "device = cpu"));
    free(text);
    dt_model_free(m);
}

/* The smoothed loss against a hand computation. */
static void test_label_smoothing_value(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(3)", NULL, 1, 1, 2, 3, &m,
                                    NULL), DT_OK);
    assert_int_equal(dt_model_set_label_smoothing(m, 1.5f), DT_ERR_INVALID);
    assert_int_equal(dt_model_set_label_smoothing(m, 0.1f), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 1), DT_OK);
    float *p;
    assert_int_equal(dt_model_params(m, &p, NULL, NULL), DT_OK);
    const float w[9] = {1, 0, 0, 1, 0.5f, -1, 0, 0, 0};
    memcpy(p, w, sizeof w);
    const float x[2] = {1, 2};
    const int y[1] = {2};
    float loss;
    assert_int_equal(dt_model_forward(m, x, y, 1, 0, &loss, NULL), DT_OK);
    double z[3] = {1, 2, -1.5}, lse = log(exp(z[0]) + exp(z[1]) + exp(z[2]));
    double want = 0.9 * (lse - z[2]) + 0.1 / 3 * (3 * lse - z[0] - z[1] -
                                                  z[2]);
    assert_float_equal(loss, want, 1e-5);
    dt_model_free(m);
}

/* He init for conv/linear followed by batchnorm, as by relu. */
static void test_init_before_batchnorm(void **state)
{
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(200) batchnorm relu "
                                    "linear(10)", NULL, 1, 20, 20, 10, &m,
                                    NULL), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 9), DT_OK);
    float *p;
    assert_int_equal(dt_model_params(m, &p, NULL, NULL), DT_OK);
    double sq = 0;
    for (size_t i = 0; i < 200 * 400; i++)
        sq += (double)p[i] * p[i];
    assert_true(fabs(sqrt(sq / (200 * 400)) / sqrt(2.0 / 400) - 1.0) < 0.02);
    dt_model_free(m);
}

static void no_line(void *arg, const char *line)
{
    (void)line;
    ++*(int *)arg;
}

/* What a program's mistakes with the C API get: an error naming the
 * argument, never a crash (a NULL input was read as a batch). */
static void test_bad_arguments(void **state)
{
    (void)state;
    dt_model_t *m = NULL;
    assert_int_equal(dt_model_parse("flatten linear(3)", NULL, 1, 4, 4, 3,
                                    &m, NULL), DT_OK);
    assert_int_equal(dt_model_init(m, NULL, 1), DT_OK);
    int labels[2] = {0, 1};
    float loss;
    capture_t c;
    capture_begin(&c);
    dt_status_t fwd = dt_model_forward(m, NULL, labels, 2, 1, &loss, NULL);
    dt_status_t step = dt_model_train_step(m, NULL, labels, 2, &loss, NULL,
                                           NULL);
    dt_model_memory_t mem;
    dt_status_t est = dt_model_memory_estimate(m, 0, 0, &mem);
    double f, b;
    size_t p;
    dt_status_t cost = dt_model_layer_cost(m, 7, 4, &f, &b, &p);
    char *text = capture_end(&c);
    assert_int_equal(fwd, DT_ERR_INVALID);
    assert_int_equal(step, DT_ERR_INVALID);
    assert_int_equal(est, DT_ERR_INVALID);
    assert_int_equal(cost, DT_ERR_INVALID);
    assert_non_null(strstr(text, "dt_model_forward: the input x is NULL for "
                                 "a batch of 2 samples: pass batch x 1x4x4 "
                                 "floats of host memory"));
    assert_non_null(strstr(text, "dt_model_memory_estimate: a batch below "
                                 "1"));
    assert_non_null(strstr(text, "dt_model_layer_cost: layer 7 of a model "
                                 "of 2 layers (0..1)"));
    free(text);
    /* no callback: nothing to do, nothing read through NULL */
    dt_model_summary(m, NULL, NULL);
    assert_int_equal(dt_model_set_profiling(m, 1), DT_OK);
    dt_model_profile(m, 1, NULL, NULL);
    int lines = 0;
    dt_model_summary(m, no_line, &lines);
    assert_true(lines > 0);
    dt_model_free(m);
}

int main(void)
{
    /* every step runs with the shared block's free bytes filled with
     * junk (core/nn/model_arena.c): a buffer read outside the lifetime
     * the planner gave it gets wrong numbers, and the checks fail */
    setenv("DT_DEBUG_POISON_BLOCK", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_cnn),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_init_deterministic),
        cmocka_unit_test(test_init_scales),
        cmocka_unit_test(test_grad_callback),
        cmocka_unit_test(test_learns),
        cmocka_unit_test(test_conv_algos_agree),
        cmocka_unit_test(test_conv_winograd4_agrees),
        cmocka_unit_test(test_layouts_agree),
        cmocka_unit_test(test_layout_choice),
        cmocka_unit_test(test_device_open),
        cmocka_unit_test(test_gemm_beta_zero),
        cmocka_unit_test(test_resnet20_params),
        cmocka_unit_test(test_grad_buffers_shared),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_param_tensor_kinds),
        cmocka_unit_test(test_stage_expansion),
        cmocka_unit_test(test_stage_errors),
        cmocka_unit_test(test_batchnorm_running_stats),
        cmocka_unit_test(test_cuda_refused),
        cmocka_unit_test(test_label_smoothing_value),
        cmocka_unit_test(test_init_before_batchnorm),
        cmocka_unit_test(test_memory_estimate),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
