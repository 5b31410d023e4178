/* test_optimizers_cuda.c — the optimizer plugins' CUDA path against their
 * CPU path: the same parameters, gradients and settings give the same
 * parameters after several steps (within float tolerance: the GPU may
 * fuse multiply-adds), and state saved on one device loads on the other.
 * Skipped (exit 77) without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dt/config.h>
#include <dt/log.h>
#include <dt/nn.h>
#include "plugin/plugin_loader.h"

#define N 10007 /* odd, more than one block */
#define STEPS 5

static dt_device_t *gpu;

typedef struct opt {
    const dt_optimizer_ops_t *ops;
    dt_config_t *cfg;
    void *state;
} opt_t;

static void opt_open(opt_t *o, const char *name, const char *const *settings,
                     dt_mem_t mem)
{
    const dt_plugin_t *p;
    memset(o, 0, sizeof *o);
    assert_int_equal(dt_plugin_load(DT_KIND_OPTIMIZER, name, &p, NULL), DT_OK);
    o->ops = p->ops;
    char section[64];
    snprintf(section, sizeof section, "optimizer.%s", name);
    assert_int_equal(dt_config_new(&o->cfg), DT_OK);
    assert_int_equal(dt_config_add_schema(o->cfg, section, p->keys), DT_OK);
    for (const char *const *s = settings; s && *s; s++) {
        char key[64];
        const char *eq = strchr(*s, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - *s), *s);
        assert_int_equal(dt_config_set(o->cfg, section, key, eq + 1,
                                       DT_SRC_CLI, "--set"), DT_OK);
    }
    assert_int_equal(o->ops->create(o->cfg, N, mem, &o->state), DT_OK);
}

static void opt_close(opt_t *o)
{
    o->ops->destroy(o->state);
    dt_config_free(o->cfg);
}

static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Each element within 1e-4 of its value plus 1e-6 of the largest: an
 * element that several steps brought near zero carries the absolute
 * rounding of the larger values it was computed from (seen on an H200:
 * Adam, relative 1.7e-4 at such an element, 2e-8 absolute), while a wrong
 * update rule is off by about the step itself (lr = 0.01). */
static void assert_close(const float *a, const float *b, size_t n,
                         const char *what)
{
    double worst = 0, rel = 0, big = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)a[i]) > big)
            big = fabs((double)a[i]);
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        double e = d / (1e-4 * fabs((double)a[i]) + 1e-6 * big);
        if (e > worst)
            worst = e;
        if (d / (1e-6 + fabs((double)a[i])) > rel)
            rel = d / (1e-6 + fabs((double)a[i]));
    }
    printf("%s: max relative difference cpu/cuda %.2g, worst/tolerance "
           "%.2g\n", what, rel, worst);
    assert_true(worst < 1.0);
}

/* STEPS steps on the CPU and on the GPU from the same start; then save
 * the GPU state, load it into a CPU instance (and the CPU state into a
 * GPU instance) and take one more step on each: all four agree. */
static void compare(const char *name, const char *const *settings)
{
    size_t bytes = N * sizeof(float);
    float *p = malloc(bytes), *g = malloc(bytes * STEPS), *back = malloc(bytes);
    float *dp, *dg;
    assert_non_null(p);
    assert_non_null(g);
    assert_non_null(back);
    uint32_t seed = 7;
    for (size_t i = 0; i < N; i++)
        p[i] = rnd(&seed);
    for (size_t i = 0; i < N * STEPS; i++)
        g[i] = rnd(&seed) * 0.1f;
    assert_int_equal(dt_device_alloc(gpu, bytes, (void **)&dp), DT_OK);
    assert_int_equal(dt_device_alloc(gpu, bytes, (void **)&dg), DT_OK);
    assert_int_equal(dt_device_copy(gpu, dp, DT_MEM_CUDA, p, DT_MEM_HOST,
                                    bytes), DT_OK);
    opt_t c, d;
    opt_open(&c, name, settings, DT_MEM_HOST);
    opt_open(&d, name, settings, DT_MEM_CUDA);
    for (uint64_t t = 1; t <= STEPS; t++) {
        const float *gt = g + (t - 1) * N;
        assert_int_equal(c.ops->step(c.state, p, gt, 0.01f, t, NULL), DT_OK);
        assert_int_equal(dt_device_copy(gpu, dg, DT_MEM_CUDA, gt, DT_MEM_HOST,
                                        bytes), DT_OK);
        assert_int_equal(d.ops->step(d.state, dp, dg, 0.01f, t, gpu->stream),
                         DT_OK);
    }
    assert_int_equal(dt_device_copy(gpu, back, DT_MEM_HOST, dp, DT_MEM_CUDA,
                                    bytes), DT_OK);
    assert_close(p, back, N, name);

    /* Checkpoints: one format on both devices. */
    size_t len = c.ops->state_size(c.state);
    assert_int_equal(d.ops->state_size(d.state), len);
    char *sc = malloc(len), *sd = malloc(len);
    assert_non_null(sc);
    assert_non_null(sd);
    assert_int_equal(c.ops->save(c.state, sc, len), DT_OK);
    assert_int_equal(d.ops->save(d.state, sd, len), DT_OK);
    opt_t c2, d2;
    opt_open(&c2, name, settings, DT_MEM_HOST);
    opt_open(&d2, name, settings, DT_MEM_CUDA);
    assert_int_equal(c2.ops->load(c2.state, sd, len), DT_OK); /* gpu->cpu */
    assert_int_equal(d2.ops->load(d2.state, sc, len), DT_OK); /* cpu->gpu */
    float *p2 = malloc(bytes);
    assert_non_null(p2);
    memcpy(p2, p, bytes);
    assert_int_equal(c.ops->step(c.state, p, g, 0.01f, STEPS + 1, NULL),
                     DT_OK);
    assert_int_equal(c2.ops->step(c2.state, p2, g, 0.01f, STEPS + 1, NULL),
                     DT_OK);
    assert_close(p, p2, N, "state saved on cuda, stepped on cpu");
    assert_int_equal(dt_device_copy(gpu, dp, DT_MEM_CUDA, back, DT_MEM_HOST,
                                    bytes), DT_OK);
    assert_int_equal(dt_device_copy(gpu, dg, DT_MEM_CUDA, g, DT_MEM_HOST,
                                    bytes), DT_OK);
    assert_int_equal(d2.ops->step(d2.state, dp, dg, 0.01f, STEPS + 1,
                                  gpu->stream), DT_OK);
    assert_int_equal(dt_device_copy(gpu, back, DT_MEM_HOST, dp, DT_MEM_CUDA,
                                    bytes), DT_OK);
    assert_close(p, back, N, "state saved on cpu, stepped on cuda");
    opt_close(&c);
    opt_close(&d);
    opt_close(&c2);
    opt_close(&d2);
    dt_device_free(gpu, dp);
    dt_device_free(gpu, dg);
    free(p);
    free(p2);
    free(g);
    free(back);
    free(sc);
    free(sd);
}

static void test_sgd(void **state)
{
    (void)state;
    compare("sgd", NULL);
    const char *wd[] = {"weight_decay=0.01", NULL};
    compare("sgd", wd);
    const char *mom[] = {"momentum=0.9", "weight_decay=0.01", NULL};
    compare("sgd", mom);
    const char *nes[] = {"momentum=0.9", "nesterov=yes", NULL};
    compare("sgd", nes);
}

static void test_adam(void **state)
{
    (void)state;
    compare("adam", NULL);
    const char *wd[] = {"weight_decay=0.01", "beta1=0.8", NULL};
    compare("adam", wd);
    compare("adamw", NULL);
}

int main(void)
{
    if (dt_cuda_device_count() == 0) {
        printf("SKIP: no CUDA GPU visible (or dt built without CUDA): the "
               "optimizers' CUDA steps were not compared with the CPU\n");
        return 77;
    }
    if (dt_device_open("cuda", 0, 1, &gpu) != DT_OK)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd),
        cmocka_unit_test(test_adam),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dt_device_close(gpu);
    return rc;
}
