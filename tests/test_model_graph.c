/* test_model_graph.c — dt_model_train_step and [train] cuda_graphs
 * (core/nn/model_graph.c) on the STAND-IN CUDA backend
 * (fixtures/fixture_cuda_graph.c: a capture there computes nothing and
 * notes the entries; a launch runs the step's entries and fails when
 * they are not the captured ones). NOT CUDA graphs: what this shows is
 * dt's side — when a step is captured, that every result then comes from
 * launches, that the gradient callbacks come after each launch with the
 * same ranges, and what happens to an epoch's odd batch, moved backend
 * buffers, a capture that fails and a model that cannot be captured.
 * That a GPU replays the step right: test_nn_cuda, on a GPU. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dt/device.h>
#include "cuda/backend.h"
#include "nn/model.h"
#include "nn_testutil.h"
#include "fixtures/standin_cuda.h"
#include "standin_load.h"

#define BATCH 4
#define RESNET                                                               \
    "conv(4,3,pad=1,bias=no) batchnorm relu stage(basic,4,1,stride=2) gap " \
    "flatten linear(10)"

static dt_device_t standin_dev = {.kind = DT_DEVICE_CUDA,
                                  .mem = DT_MEM_CUDA,
                                  .ordinal = 0,
                                  .name = "cuda:0 (stand-in)"};
static standin_stats_t *stats;
static unsigned long long *generation;

static int setup(void **state)
{
    (void)state;
    void *h = NULL;
    if (standin_load(&h) != 0)
        return -1;
    stats = dlsym(h, "standin_cuda_stats");
    generation = dlsym(h, "standin_graph_generation");
    return stats && generation ? 0 : -1;
}

/* The gradient ranges a step hands its callback, in order. */
typedef struct {
    size_t r[64][2];
    int n;
} ranges_t;

static dt_status_t on_ready(void *arg, size_t offset, size_t len)
{
    ranges_t *r = arg;
    assert_true(r->n < 64);
    r->r[r->n][0] = offset;
    r->r[r->n][1] = len;
    r->n++;
    return DT_OK;
}

typedef struct {
    dt_model_t *m;
    float *p, *g, *buf;
    size_t n, nbuf;
} run_t;

static void open_run(run_t *r, const char *layers, dt_cuda_graphs_t mode)
{
    assert_int_equal(dt_model_parse(layers, NULL, 2, 6, 6, 10, &r->m, NULL),
                     DT_OK);
    assert_int_equal(dt_model_init(r->m, &standin_dev, 5), DT_OK);
    assert_int_equal(dt_model_set_cuda_graphs(r->m, mode), DT_OK);
    assert_int_equal(dt_model_params(r->m, &r->p, &r->g, &r->n), DT_OK);
    assert_int_equal(dt_model_buffers(r->m, &r->buf, &r->nbuf), DT_OK);
}

/* One step on batch b of sample set k, then p -= 0.1 g (the stand-in's
 * device memory is host memory): the next step sees new parameters. */
static dt_status_t step(run_t *r, int b, int k, float *loss, ranges_t *rg)
{
    float x[BATCH * 2 * 6 * 6];
    int y[BATCH];
    fill_random(x, (size_t)b * 2 * 6 * 6, 100 + (uint64_t)k);
    for (int i = 0; i < b; i++)
        y[i] = (3 * i + k) % 10;
    rg->n = 0;
    dt_status_t st = dt_model_train_step(r->m, x, y, b, loss, on_ready, rg);
    if (st == DT_OK)
        for (size_t i = 0; i < r->n; i++)
            r->p[i] -= 0.1f * r->g[i];
    return st;
}

/* Steps of eager and of graphed alike: the same losses, ranges,
 * parameters and running statistics, bit for bit (the stand-in computes
 * both with the same loops). */
static void same_steps(run_t *e, run_t *g, const int *batches, int steps)
{
    for (int s = 0; s < steps; s++) {
        float le, lg;
        ranges_t re, rgr;
        assert_int_equal(step(e, batches[s], s, &le, &re), DT_OK);
        assert_int_equal(step(g, batches[s], s, &lg, &rgr), DT_OK);
        assert_memory_equal(&le, &lg, sizeof le);
        assert_int_equal(re.n, rgr.n);
        assert_memory_equal(re.r, rgr.r, (size_t)re.n * sizeof re.r[0]);
        assert_memory_equal(e->p, g->p, e->n * sizeof *e->p);
        assert_memory_equal(e->buf, g->buf, e->nbuf * sizeof *e->buf);
    }
}

static void close_runs(run_t *e, run_t *g)
{
    dt_model_free(e->m);
    dt_model_free(g->m);
}

/* on: two warm-up steps, the capture, then one launch per step; the
 * results equal eager steps'. A capture that also computed would move
 * the batchnorm statistics twice in its step. */
static void test_captured_step_trains_as_eager(void **state)
{
    (void)state;
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_ON);
    unsigned long c0 = stats->graph_captures, l0 = stats->graph_launches;
    int b[8] = {BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH};
    same_steps(&e, &g, b, 8);
    assert_int_equal(stats->graph_captures - c0, 1);
    assert_int_equal(stats->graph_launches - l0, 6); /* steps 3 .. 8 */
    assert_true(stats->graph_ops > 10);
    assert_int_equal(e.m->graphs.captures, 0);
    close_runs(&e, &g);
}

/* An epoch's last, smaller batch runs eagerly and leaves the graph; a
 * smaller batch first warms up its own size. */
static void test_odd_batch_runs_eagerly(void **state)
{
    (void)state;
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_ON);
    unsigned long c0 = stats->graph_captures, l0 = stats->graph_launches;
    int b[9] = {BATCH, BATCH, BATCH, BATCH, 3, BATCH, BATCH, 2, BATCH};
    same_steps(&e, &g, b, 9);
    assert_int_equal(stats->graph_captures - c0, 1);
    assert_int_equal(stats->graph_launches - l0, 5); /* 3, 4, 6, 7, 9 */
    close_runs(&e, &g);
}

/* Backend buffers moved (cuDNN's workspace grown for an evaluation) and
 * the model's own buffers reallocated (a larger batch): captured anew
 * after two warm-up steps, results unchanged. */
static void test_moved_buffers_recapture(void **state)
{
    (void)state;
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_ON);
    unsigned long c0 = stats->graph_captures;
    int b[4] = {BATCH, BATCH, BATCH, BATCH};
    same_steps(&e, &g, b, 4);
    assert_int_equal(stats->graph_captures - c0, 1);
    (*generation)++;
    same_steps(&e, &g, b, 4); /* eager, eager, capture, launch */
    assert_int_equal(stats->graph_captures - c0, 2);
    assert_non_null(g.m->graphs.exec);
    /* an evaluation forward of a larger batch reallocates: no graph */
    float x[2 * BATCH * 2 * 6 * 6], loss;
    fill_random(x, sizeof x / sizeof *x, 7);
    assert_int_equal(dt_model_forward(g.m, x, NULL, 2 * BATCH, 0, &loss,
                                      NULL), DT_OK);
    assert_null(g.m->graphs.exec);
    same_steps(&e, &g, b, 4);
    assert_int_equal(stats->graph_captures - c0, 3);
    close_runs(&e, &g);
}

/* A capture that fails: auto goes on eagerly (and stays eager); on
 * stops the step with an error that says why. */
static void test_capture_failure(void **state)
{
    (void)state;
    run_t e, g, on;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_AUTO);
    open_run(&on, RESNET, DT_CUDA_GRAPHS_ON);
    setenv("STANDIN_CAPTURE_FAIL", "1", 1);
    int b[8] = {BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH};
    same_steps(&e, &g, b, 8);
    assert_null(g.m->graphs.exec);
    assert_int_equal(g.m->graphs.decided, -1);
    float loss;
    ranges_t r;
    assert_int_equal(step(&on, BATCH, 0, &loss, &r), DT_OK);
    assert_int_equal(step(&on, BATCH, 1, &loss, &r), DT_OK);
    assert_int_equal(step(&on, BATCH, 2, &loss, &r), DT_ERR_UNSUPPORTED);
    unsetenv("STANDIN_CAPTURE_FAIL");
    dt_model_free(on.m);
    close_runs(&e, &g);
}

/* auto: times eager and captured steps of the batch, then keeps one
 * (either may win on the stand-in: both run the same loops) and says
 * so; the results are the eager ones throughout. */
static void test_auto_decides(void **state)
{
    (void)state;
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_AUTO);
    int b[12];
    for (int i = 0; i < 12; i++)
        b[i] = BATCH;
    same_steps(&e, &g, b, 12);
    struct dt_model_graphs *gr = &g.m->graphs;
    assert_int_equal(gr->captures, 1);
    assert_true(gr->decided == 1 || gr->decided == -1);
    assert_true(gr->eager_s > 0 && gr->graph_s > 0);
    if (gr->decided > 0)
        assert_non_null(gr->exec);
    else
        assert_null(gr->exec);
    close_runs(&e, &g);
}

/* auto timed by the caller (the trainer's whole steps, the gradient sync
 * included): given times decide it, both ways, and only steps that auto
 * times take one (a warm-up step's time is ignored). */
static void auto_with_times(double eager, double graph, int want)
{
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_AUTO);
    dt_model_graph_external_timing(g.m);
    for (int s = 0; s < 12; s++) {
        float le, lg;
        ranges_t re, rg;
        assert_int_equal(step(&e, BATCH, s, &le, &re), DT_OK);
        assert_int_equal(step(&g, BATCH, s, &lg, &rg), DT_OK);
        assert_memory_equal(&le, &lg, sizeof le);
        /* the caller's time: eager steps take `eager`, captured ones
         * `graph` (a warm-up step's 1000 s must not count) */
        dt_model_graph_step_time(g.m, s < 2 ? 1000.0
                                      : g.m->graphs.exec ? graph : eager);
    }
    struct dt_model_graphs *gr = &g.m->graphs;
    assert_int_equal(gr->captures, 1);
    assert_int_equal(gr->decided, want);
    assert_true(gr->eager_s == eager && gr->graph_s == graph);
    if (want > 0)
        assert_non_null(gr->exec);
    else
        assert_null(gr->exec);
    assert_memory_equal(e.p, g.p, e.n * sizeof *e.p);
    close_runs(&e, &g);
}

static void test_auto_by_whole_steps(void **state)
{
    (void)state;
    auto_with_times(0.005, 0.002, 1);
    auto_with_times(0.002, 0.005, -1);
}

/* A step the host changes from step to step is not captured, even with
 * on: per-layer profiling here (dropout and sync_bn alike; the stand-in
 * has no dropout entry). Turned on after a capture, the graph goes;
 * turned off again, graphs come back after the warm-up. */
static void test_unfit_model_not_captured(void **state)
{
    (void)state;
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_ON);
    unsigned long c0 = stats->graph_captures;
    int b[5] = {BATCH, BATCH, BATCH, BATCH, BATCH};
    same_steps(&e, &g, b, 4);
    assert_int_equal(stats->graph_captures - c0, 1);
    assert_int_equal(dt_model_set_profiling(g.m, 1), DT_OK);
    same_steps(&e, &g, b, 5);
    assert_int_equal(stats->graph_captures - c0, 1);
    assert_null(g.m->graphs.exec);
    assert_int_equal(dt_model_set_profiling(g.m, 0), DT_OK);
    same_steps(&e, &g, b, 4); /* eager, eager, capture, launch */
    assert_int_equal(stats->graph_captures - c0, 2);
    assert_non_null(g.m->graphs.exec);
    close_runs(&e, &g);
}

/* What the captured kernels were given and cannot change: a new loss
 * scale, label smoothing or precision is captured anew (the stand-in
 * would compute the new values anyway: the count of captures shows it). */
static void test_new_arguments_recapture(void **state)
{
    (void)state;
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_ON);
    unsigned long c0 = stats->graph_captures;
    int b[3] = {BATCH, BATCH, BATCH};
    same_steps(&e, &g, b, 3);
    assert_int_equal(stats->graph_captures - c0, 1);
    assert_int_equal(dt_model_set_loss_scale(e.m, 8.0f), DT_OK);
    assert_int_equal(dt_model_set_loss_scale(g.m, 8.0f), DT_OK);
    same_steps(&e, &g, b, 3);
    assert_int_equal(stats->graph_captures - c0, 2);
    assert_int_equal(dt_model_set_label_smoothing(e.m, 0.1f), DT_OK);
    assert_int_equal(dt_model_set_label_smoothing(g.m, 0.1f), DT_OK);
    same_steps(&e, &g, b, 3);
    assert_int_equal(stats->graph_captures - c0, 3);
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    assert_int_equal(cu->set_precision(&standin_dev, DT_PRECISION_TF32),
                     DT_OK);
    same_steps(&e, &g, b, 3);
    assert_int_equal(stats->graph_captures - c0, 4);
    assert_int_equal(cu->set_precision(&standin_dev, DT_PRECISION_FP32),
                     DT_OK);
    close_runs(&e, &g);
}

/* A batch size that stays (work_load = auto's new share): after two
 * steps of it the graph is captured anew at that size. */
static void test_new_batch_size_recaptures(void **state)
{
    (void)state;
    run_t e, g;
    open_run(&e, RESNET, DT_CUDA_GRAPHS_OFF);
    open_run(&g, RESNET, DT_CUDA_GRAPHS_ON);
    unsigned long c0 = stats->graph_captures, l0 = stats->graph_launches;
    int b[10] = {BATCH, BATCH, BATCH, BATCH, 3, 3, 3, 3, 3, 3};
    same_steps(&e, &g, b, 10);
    assert_int_equal(stats->graph_captures - c0, 2);
    assert_int_equal(g.m->graphs.batch, 3);
    /* launches: steps 3, 4 at 4; 7 (the capture at 3) .. 10 */
    assert_int_equal(stats->graph_launches - l0, 6);
    close_runs(&e, &g);
}

static void test_parse(void **state)
{
    (void)state;
    dt_cuda_graphs_t mode;
    assert_int_equal(dt_cuda_graphs_parse("auto", &mode), DT_OK);
    assert_int_equal(mode, DT_CUDA_GRAPHS_AUTO);
    assert_int_equal(dt_cuda_graphs_parse("on", &mode), DT_OK);
    assert_int_equal(mode, DT_CUDA_GRAPHS_ON);
    assert_int_equal(dt_cuda_graphs_parse("off", &mode), DT_OK);
    assert_int_equal(mode, DT_CUDA_GRAPHS_OFF);
    assert_int_equal(dt_cuda_graphs_parse("yes", &mode), DT_ERR_INVALID);
    assert_int_equal(dt_cuda_graphs_parse(NULL, &mode), DT_ERR_INVALID);
}

int main(void)
{
    unsetenv("DT_DEBUG_POISON_BLOCK");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_captured_step_trains_as_eager),
        cmocka_unit_test(test_odd_batch_runs_eagerly),
        cmocka_unit_test(test_moved_buffers_recapture),
        cmocka_unit_test(test_capture_failure),
        cmocka_unit_test(test_auto_decides),
        cmocka_unit_test(test_auto_by_whole_steps),
        cmocka_unit_test(test_unfit_model_not_captured),
        cmocka_unit_test(test_new_arguments_recapture),
        cmocka_unit_test(test_new_batch_size_recaptures),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
