/* test_optimizers.c — the sgd, adam, adamw, lars and lamb plugins, loaded the way dt
 * loads them, against steps computed by hand (the numbers in comments),
 * lars and lamb's plain step for biases and normalization tensors, and
 * their state save/load round trip. */
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
#include "plugin/plugin_loader.h"
#include "stderr_capture.h"

typedef struct opt {
    const dt_optimizer_ops_t *ops;
    dt_config_t *cfg;
    void *state;
} opt_t;

/* Load plugin `name` and create it for n params with settings
 * "key=value" (NULL-terminated). */
static dt_status_t opt_open(opt_t *o, const char *name, size_t n,
                            const char *const *settings)
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
    return o->ops->create(o->cfg, n, DT_MEM_HOST, &o->state);
}

static void opt_close(opt_t *o)
{
    if (o->state)
        o->ops->destroy(o->state);
    dt_config_free(o->cfg);
}

/* One parameter p = 1, gradients g1 then g2, lr 0.1: p after each step. */
static void two_steps(const char *name, const char *const *settings, float g1,
                      float g2, double want1, double want2)
{
    opt_t o;
    float p = 1.0f;
    assert_int_equal(opt_open(&o, name, 1, settings), DT_OK);
    assert_int_equal(o.ops->step(o.state, &p, &g1, 0.1f, 1, NULL), DT_OK);
    assert_float_equal(p, want1, 1e-6);
    assert_int_equal(o.ops->step(o.state, &p, &g2, 0.1f, 2, NULL), DT_OK);
    assert_float_equal(p, want2, 1e-6);
    opt_close(&o);
}

static void test_sgd(void **state)
{
    /* p -= 0.1 * 0.5 -> 0.95; again -> 0.90 */
    two_steps("sgd", NULL, 0.5f, 0.5f, 0.95, 0.90);
    /* weight decay 0.1: g = 0.5 + 0.1*1 = 0.6 -> 0.94;
     * g = 0.5 + 0.094 = 0.594 -> 0.8806 */
    const char *wd[] = {"weight_decay=0.1", NULL};
    two_steps("sgd", wd, 0.5f, 0.5f, 0.94, 0.8806);
}

static void test_sgd_momentum(void **state)
{
    /* buf = 0.5, p = 0.95; buf = 0.9*0.5 + 0.5 = 0.95, p = 0.855 */
    const char *mom[] = {"momentum=0.9", NULL};
    two_steps("sgd", mom, 0.5f, 0.5f, 0.95, 0.855);
    /* nesterov: buf = 0.5, d = 0.5 + 0.45 = 0.95, p = 0.905;
     * buf = 0.95, d = 0.5 + 0.855 = 1.355, p = 0.7695 */
    const char *nest[] = {"momentum=0.9", "nesterov=yes", NULL};
    two_steps("sgd", nest, 0.5f, 0.5f, 0.905, 0.7695);
}

static void test_adam(void **state)
{
    /* t=1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25,
     *      p = 1 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.900000002
     * t=2 (g=-1): m = -0.055, v = 0.00124975,
     *      mhat = -0.055/0.19, vhat = 0.00124975/0.001999,
     *      p = 0.9366103542 */
    two_steps("adam", NULL, 0.5f, -1.0f, 0.900000002, 0.9366103542);
    /* L2 decay in the gradient: g = 0.5 + 0.5*1 = 1; the first Adam step
     * moves by lr whatever the gradient's size: 0.9 */
    const char *wd[] = {"weight_decay=0.5", NULL};
    opt_t o;
    float p[2] = {1.0f, -2.0f}, g[2] = {0.5f, 0.5f};
    assert_int_equal(opt_open(&o, "adam", 2, wd), DT_OK);
    assert_int_equal(o.ops->step(o.state, p, g, 0.1f, 1, NULL), DT_OK);
    assert_float_equal(p[0], 0.9, 1e-6);  /* g = 1 > 0            */
    assert_float_equal(p[1], -1.9, 1e-6); /* g = 0.5 - 1 = -0.5 < 0 */
    opt_close(&o);
}

static void test_adamw(void **state)
{
    /* decoupled: p = 1 * (1 - 0.1*0.1) = 0.99, then the Adam move of 0.1:
     * 0.89; t=2 (g=-1): 0.89 * 0.99 + 0.0366103542 = 0.9177103542 */
    const char *wd[] = {"weight_decay=0.1", NULL};
    two_steps("adamw", wd, 0.5f, -1.0f, 0.89 - 0.1 * 2e-8, 0.9177103542);
    /* weight_decay=0 is exactly adam */
    const char *none[] = {"weight_decay=0", NULL};
    two_steps("adamw", none, 0.5f, -1.0f, 0.900000002, 0.9366103542);
}

/* n parameters p, gradients g (one row of n per step), lr: p after the
 * steps; tensors (ntensors + 1 boundaries) through set_tensors, or NULL;
 * then their kinds through set_tensor_kinds, or NULL. */
static void steps_kinds(const char *name, const char *const *settings,
                        size_t n, float *p, const float *g, int nsteps,
                        float lr, const size_t *tensors, size_t ntensors,
                        const unsigned char *kinds)
{
    opt_t o;
    assert_int_equal(opt_open(&o, name, n, settings), DT_OK);
    if (tensors) {
        assert_true(DT_OPS_HAS(o.ops, dt_optimizer_ops_t, set_tensors));
        assert_int_equal(o.ops->set_tensors(o.state, tensors, ntensors),
                         DT_OK);
    }
    if (kinds) {
        assert_true(DT_OPS_HAS(o.ops, dt_optimizer_ops_t, set_tensor_kinds));
        assert_int_equal(o.ops->set_tensor_kinds(o.state, kinds, ntensors),
                         DT_OK);
    }
    for (int t = 0; t < nsteps; t++)
        assert_int_equal(o.ops->step(o.state, p, g + (size_t)t * n, lr,
                                     (uint64_t)t + 1, NULL), DT_OK);
    opt_close(&o);
}

static void steps(const char *name, const char *const *settings, size_t n,
                  float *p, const float *g, int nsteps, float lr,
                  const size_t *tensors, size_t ntensors)
{
    steps_kinds(name, settings, n, p, g, nsteps, lr, tensors, ntensors,
                NULL);
}

static void test_lars(void **state)
{
    /* w = (3, 4), |w| = 5; g = (0.6, 0.8), |g| = 1; eta 0.1, lr 1:
     * trust = 0.1 * 5 / 1 = 0.5, buf = (0.3, 0.4), w = (2.7, 3.6);
     * then |w| = 4.5, trust = 0.45, buf = 0.9 * (0.3, 0.4) + (0.27, 0.36)
     * = (0.54, 0.72), w = (2.16, 2.88) */
    const char *eta[] = {"eta=0.1", NULL};
    float p[2] = {3, 4}, g[4] = {0.6f, 0.8f, 0.6f, 0.8f};
    steps("lars", eta, 2, p, g, 1, 1.0f, NULL, 0);
    assert_float_equal(p[0], 2.7, 1e-6);
    assert_float_equal(p[1], 3.6, 1e-6);
    p[0] = 3, p[1] = 4;
    steps("lars", eta, 2, p, g, 2, 1.0f, NULL, 0);
    assert_float_equal(p[0], 2.16, 1e-6);
    assert_float_equal(p[1], 2.88, 1e-6);
    /* weight decay 0.1, g = (0, 1): trust = 0.1 * 5 / (1 + 0.1 * 5) = 1/3,
     * g + wd w = (0.3, 1.4), w -= (0.1, 0.4666667) -> (2.9, 3.5333333) */
    const char *wd[] = {"eta=0.1", "weight_decay=0.1", NULL};
    float q[2] = {3, 4}, g2[2] = {0, 1};
    steps("lars", wd, 2, q, g2, 1, 1.0f, NULL, 0);
    assert_float_equal(q[0], 2.9, 1e-6);
    assert_float_equal(q[1], 3.5333333, 1e-6);
}

static void test_lars_tensors(void **state)
{
    /* Two tensors, (3, 4) and (1) with g (0.6, 0.8) and (0.5): the first
     * moves as above; the second: trust = 0.1 * 1 / 0.5 = 0.2, w = 1 -
     * 0.2 * 0.5 = 0.9. As one tensor (|w| = sqrt 26, |g| = sqrt 1.25) the
     * trust would be 0.456 for all three: 2.72636, 3.63514, 0.77196. */
    const char *eta[] = {"eta=0.1", NULL};
    const size_t tensors[] = {0, 2, 3};
    float p[3] = {3, 4, 1}, g[3] = {0.6f, 0.8f, 0.5f};
    steps("lars", eta, 3, p, g, 1, 1.0f, tensors, 2);
    assert_float_equal(p[0], 2.7, 1e-6);
    assert_float_equal(p[1], 3.6, 1e-6);
    assert_float_equal(p[2], 0.9, 1e-6);
    float q[3] = {3, 4, 1};
    steps("lars", eta, 3, q, g, 1, 1.0f, NULL, 0);
    assert_float_equal(q[0], 2.726357898, 1e-5);
    assert_float_equal(q[2], 0.771964915, 1e-5);
    /* A table that does not cover the vector is refused. */
    opt_t o;
    const size_t bad[] = {0, 2};
    const size_t unordered[] = {0, 2, 2, 3};
    assert_int_equal(opt_open(&o, "lars", 3, NULL), DT_OK);
    assert_int_equal(o.ops->set_tensors(o.state, bad, 1), DT_ERR_INVALID);
    assert_int_equal(o.ops->set_tensors(o.state, unordered, 3),
                     DT_ERR_INVALID);
    opt_close(&o);
}

static void test_lamb(void **state)
{
    /* t = 1, eps 1e-30 (0 is refused; this is 0 to float), wd 0: mhat = g, vhat = g^2, r = g / |g| = (1, -1),
     * |r| = sqrt 2, |w| = 5: trust = 5 / sqrt 2,
     * w = (3 - 0.1 * 5 / sqrt 2, 4 + 0.1 * 5 / sqrt 2)
     *   = (2.646446609, 4.353553391).
     * t = 2, g = (0.3, 0.4): m = (0.084, -0.032), mhat = m / 0.19,
     * v = (0.00044964, 0.00079936), vhat = v / 0.001999,
     * r = mhat / sqrt vhat = (0.932183, -0.266335), |w| = 5.0, trust =
     * |w| / |r| -> (2.156568259, 4.493518634) */
    const char *eps0[] = {"eps=1e-30", "weight_decay=0", NULL};
    float p[2] = {3, 4}, g[4] = {0.6f, -0.8f, 0.3f, 0.4f};
    steps("lamb", eps0, 2, p, g, 1, 0.1f, NULL, 0);
    assert_float_equal(p[0], 2.646446609, 1e-6);
    assert_float_equal(p[1], 4.353553391, 1e-6);
    p[0] = 3, p[1] = 4;
    steps("lamb", eps0, 2, p, g, 2, 0.1f, NULL, 0);
    assert_float_equal(p[0], 2.156568259, 1e-5);
    assert_float_equal(p[1], 4.493518634, 1e-5);
    /* weight decay 0.1 in the update: r = (1 + 0.3, -1 + 0.4) =
     * (1.3, -0.6), |r| = sqrt 2.05, trust = 5 / sqrt 2.05,
     * w = (3 - 0.5 * 1.3 / 1.431782, 4 + 0.5 * 0.6 / 1.431782)
     *   = (2.546020, 4.209529) */
    const char *wd[] = {"eps=1e-30", "weight_decay=0.1", NULL};
    float q[2] = {3, 4};
    steps("lamb", wd, 2, q, g, 1, 0.1f, NULL, 0);
    assert_float_equal(q[0], 2.546020244, 1e-5);
    assert_float_equal(q[1], 4.209528950, 1e-5);
    /* Two tensors: (3, 4) as above; (1) with g 0.5: r = 1, trust = 1,
     * w = 1 - 0.1 = 0.9 */
    const size_t tensors[] = {0, 2, 3};
    float t3[3] = {3, 4, 1}, g3[3] = {0.6f, -0.8f, 0.5f};
    steps("lamb", eps0, 3, t3, g3, 1, 0.1f, tensors, 2);
    assert_float_equal(t3[0], 2.646446609, 1e-6);
    assert_float_equal(t3[2], 0.9, 1e-6);
    /* w = 0 (a fresh bias): trust 1, the plain Adam-like step of lr */
    float z[1] = {0}, gz[1] = {2};
    steps("lamb", eps0, 1, z, gz, 1, 0.1f, NULL, 0);
    assert_float_equal(z[0], -0.1, 1e-6);
}

/* The kinds tests' model: a weight tensor, a bias, a norm tensor. */
static const unsigned char wbn_kinds[] = {DT_TENSOR_WEIGHT, DT_TENSOR_BIAS,
                                          DT_TENSOR_NORM};

static void test_lars_kinds(void **state)
{
    /* Weight (3, 4), g (0, 1); bias (1), g 0.5; norm (1, 0.5), g (0.2,
     * -0.4); twice, lr 0.1, eta 0.1, weight decay 0.1, momentum 0.9. */
    const size_t tensors[] = {0, 2, 3, 5};
    const float g[10] = {0, 1, 0.5f, 0.2f, -0.4f, 0, 1, 0.5f, 0.2f, -0.4f};
    const char *wd[] = {"eta=0.1", "weight_decay=0.1", NULL};
    float p[5] = {3, 4, 1, 1, 0.5f};
    steps_kinds("lars", wd, 5, p, g, 2, 0.1f, tensors, 3, wbn_kinds);
    /* The weight keeps trust and decay: trust = 0.1 * 5 / (1 + 0.5) = 1/3,
     * buf = (0.1, 0.4666667), w = (2.99, 3.9533333); then trust =
     * 0.1 * |w| / (1 + 0.1 |w|) -> (2.971091031, 3.865091480) */
    assert_float_equal(p[0], 2.971091031, 1e-6);
    assert_float_equal(p[1], 3.865091480, 1e-6);
    /* Bias and norm: sgd with momentum 0.9 and no decay, bit for bit
     * (bias: 0.95, then 0.855) */
    const char *mom[] = {"momentum=0.9", NULL};
    float q[3] = {1, 1, 0.5f};
    const float gq[6] = {0.5f, 0.2f, -0.4f, 0.5f, 0.2f, -0.4f};
    steps("sgd", mom, 3, q, gq, 2, 0.1f, NULL, 0);
    assert_memory_equal(p + 2, q, sizeof q);
    assert_float_equal(p[2], 0.855, 1e-6);
    /* exclude_bias_norm = no: every tensor alike, as without kinds. Bias:
     * trust = 0.1 / (0.5 + 0.1) = 1/6, d = 0.6 / 6, w = 0.99; then
     * 0.9711. Norm: (0.9826214, 0.5202750). */
    const char *old[] = {"eta=0.1", "weight_decay=0.1",
                         "exclude_bias_norm=no", NULL};
    float r[5] = {3, 4, 1, 1, 0.5f}, u[5] = {3, 4, 1, 1, 0.5f};
    steps_kinds("lars", old, 5, r, g, 2, 0.1f, tensors, 3, wbn_kinds);
    steps("lars", wd, 5, u, g, 2, 0.1f, tensors, 3);
    assert_memory_equal(r, u, sizeof r);
    assert_memory_equal(r, p, 2 * sizeof *r);
    assert_float_equal(r[2], 0.9711, 1e-6);
    assert_float_equal(r[3], 0.982621431, 1e-6);
    assert_float_equal(r[4], 0.520274997, 1e-6);
}

static void test_lamb_kinds(void **state)
{
    /* Weight (3, 4), bias (1, 2), norm (1, 0.5); two steps, lr 0.1,
     * eps 1e-30 (0 to float), weight decay 0.1. */
    const size_t tensors[] = {0, 2, 4, 6};
    const float g[12] = {0.6f, -0.8f, 0.5f, -0.5f, 0.2f, -0.4f,
                         0.3f, 0.4f,  0.25f, 0.5f, 0.2f, 0.4f};
    const char *wd[] = {"eps=1e-30", "weight_decay=0.1", NULL};
    float p[6] = {3, 4, 1, 2, 1, 0.5f};
    steps_kinds("lamb", wd, 6, p, g, 2, 0.1f, tensors, 3, wbn_kinds);
    /* The weight: decay and trust, (2.546020, 4.209529) after step 1 as
     * in test_lamb, then (2.058184098, 4.145972984) */
    assert_float_equal(p[0], 2.058184098, 1e-5);
    assert_float_equal(p[1], 4.145972984, 1e-5);
    /* Bias and norm: the Adam update without decay or trust. Step 1
     * moves each by lr against its gradient's sign: (0.9, 2.1) and
     * (0.9, 0.6); step 2 -> (0.806782036, 2.094736842), (0.8,
     * 0.594736842); adam gives the same to float rounding. */
    assert_float_equal(p[2], 0.806782036, 1e-6);
    assert_float_equal(p[3], 2.094736842, 1e-6);
    assert_float_equal(p[4], 0.8, 1e-6);
    assert_float_equal(p[5], 0.594736842, 1e-6);
    const char *adam[] = {"eps=1e-30", "weight_decay=0", NULL};
    float q[4] = {1, 2, 1, 0.5f};
    const float gq[8] = {0.5f, -0.5f, 0.2f, -0.4f, 0.25f, 0.5f, 0.2f, 0.4f};
    steps("adam", adam, 4, q, gq, 2, 0.1f, NULL, 0);
    for (int i = 0; i < 4; i++)
        assert_float_equal(p[2 + i], q[i], 1e-6);
    /* exclude_bias_norm = no: every tensor alike, as without kinds. Bias
     * step 1: r = (1.1, -0.8), trust = sqrt 5 / sqrt 1.85 -> (0.819161,
     * 2.131519); after step 2 (0.598271086, 2.073626309); norm
     * (0.807930762, 0.562254218). */
    const char *old[] = {"eps=1e-30", "weight_decay=0.1",
                         "exclude_bias_norm=no", NULL};
    float r[6] = {3, 4, 1, 2, 1, 0.5f}, u[6] = {3, 4, 1, 2, 1, 0.5f};
    steps_kinds("lamb", old, 6, r, g, 2, 0.1f, tensors, 3, wbn_kinds);
    steps("lamb", wd, 6, u, g, 2, 0.1f, tensors, 3);
    assert_memory_equal(r, u, sizeof r);
    assert_memory_equal(r, p, 2 * sizeof *r);
    assert_float_equal(r[2], 0.598271086, 1e-5);
    assert_float_equal(r[3], 2.073626309, 1e-5);
    assert_float_equal(r[4], 0.807930762, 1e-5);
    assert_float_equal(r[5], 0.562254218, 1e-5);
}

/* A kinds table must have one known kind per tensor of set_tensors. */
static void test_kinds_refused(void **state)
{
    const size_t tensors[] = {0, 2, 3, 5};
    const unsigned char unknown[] = {DT_TENSOR_WEIGHT, DT_TENSOR_KIND_COUNT,
                                     DT_TENSOR_NORM};
    const unsigned char junk[] = {DT_TENSOR_WEIGHT, DT_TENSOR_BIAS, 255};
    const char *const names[] = {"lars", "lamb"};
    for (int i = 0; i < 2; i++) {
        opt_t o;
        assert_int_equal(opt_open(&o, names[i], 5, NULL), DT_OK);
        /* Before set_tensors the vector is one tensor. */
        assert_int_equal(o.ops->set_tensor_kinds(o.state, wbn_kinds, 3),
                         DT_ERR_INVALID);
        assert_int_equal(o.ops->set_tensors(o.state, tensors, 3), DT_OK);
        assert_int_equal(o.ops->set_tensor_kinds(o.state, wbn_kinds, 2),
                         DT_ERR_INVALID);
        assert_int_equal(o.ops->set_tensor_kinds(o.state, NULL, 3),
                         DT_ERR_INVALID);
        /* Kinds added later step as weights (an older plugin, a newer
         * trainer). */
        assert_int_equal(o.ops->set_tensor_kinds(o.state, unknown, 3),
                         DT_OK);
        assert_int_equal(o.ops->set_tensor_kinds(o.state, junk, 3), DT_OK);
        assert_int_equal(o.ops->set_tensor_kinds(o.state, wbn_kinds, 3),
                         DT_OK);
        opt_close(&o);
    }
    /* Not a yes/no. */
    opt_t o;
    const char *maybe[] = {"exclude_bias_norm=maybe", NULL};
    assert_int_equal(opt_open(&o, "lars", 1, maybe), DT_ERR_CONFIG);
    opt_close(&o);
}

static void test_bad_settings(void **state)
{
    opt_t o;
    const char *nan_beta[] = {"beta1=lots", NULL};
    assert_int_equal(opt_open(&o, "adam", 1, nan_beta), DT_ERR_CONFIG);
    opt_close(&o);
    const char *big_mom[] = {"momentum=1.5", NULL};
    assert_int_equal(opt_open(&o, "sgd", 1, big_mom), DT_ERR_CONFIG);
    opt_close(&o);
    /* named where it was set, and what to do (it named neither) */
    const char *nest[] = {"nesterov=yes", NULL};
    capture_t cap;
    capture_begin(&cap);
    assert_int_equal(opt_open(&o, "sgd", 1, nest), DT_ERR_CONFIG);
    char *said = capture_end(&cap);
    assert_non_null(strstr(said, "--set: [optimizer.sgd] nesterov = yes "
                                 "needs momentum > 0 (momentum is 0): set "
                                 "momentum"));
    free(said);
    opt_close(&o);
    const char *eta0[] = {"eta=0", NULL};
    assert_int_equal(opt_open(&o, "lars", 1, eta0), DT_ERR_CONFIG);
    opt_close(&o);
    const char *beta[] = {"beta2=1", NULL};
    assert_int_equal(opt_open(&o, "lamb", 1, beta), DT_ERR_CONFIG);
    opt_close(&o);
    /* eps = 0: 0/0 on every parameter whose gradients were all 0 so far
     * (NaN at step 1); a value below 1 in double that is 1.0f as the
     * optimizer keeps it */
    const char *eps0[] = {"eps=0", NULL};
    const char *const names[] = {"adam", "adamw", "lamb"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(opt_open(&o, names[i], 1, eps0), DT_ERR_CONFIG);
        opt_close(&o);
    }
    const char *b2f[] = {"beta2=0.99999999", NULL};
    assert_int_equal(opt_open(&o, "adam", 1, b2f), DT_ERR_CONFIG);
    opt_close(&o);
    const char *momf[] = {"momentum=0.999999999", NULL};
    assert_int_equal(opt_open(&o, "sgd", 1, momf), DT_ERR_CONFIG);
    opt_close(&o);
    const char *ok[] = {"eps=1e-12", "beta2=0.9999", NULL};
    assert_int_equal(opt_open(&o, "adam", 1, ok), DT_OK);
    opt_close(&o);
}

/* Save after two steps, load into a fresh instance: both continue
 * identically. Damaged or foreign state is refused. */
static void round_trip(const char *name, const char *const *settings)
{
    enum { N = 5 };
    opt_t a, b;
    float pa[N] = {1, 2, 3, 4, 5}, g[N] = {0.1f, -0.2f, 0.3f, -0.4f, 0.5f};
    assert_int_equal(opt_open(&a, name, N, settings), DT_OK);
    assert_int_equal(opt_open(&b, name, N, settings), DT_OK);
    for (uint64_t t = 1; t <= 2; t++)
        assert_int_equal(a.ops->step(a.state, pa, g, 0.05f, t, NULL), DT_OK);
    size_t len = a.ops->state_size(a.state);
    assert_int_equal(len, b.ops->state_size(b.state));
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(a.ops->save(a.state, buf, len), DT_OK);
    assert_int_equal(b.ops->load(b.state, buf, len), DT_OK);
    float pb[N];
    memcpy(pb, pa, sizeof pa);
    assert_int_equal(a.ops->step(a.state, pa, g, 0.05f, 3, NULL), DT_OK);
    assert_int_equal(b.ops->step(b.state, pb, g, 0.05f, 3, NULL), DT_OK);
    assert_memory_equal(pa, pb, sizeof pa);
    if (len > 0) {
        assert_int_equal(b.ops->load(b.state, buf, len - 1), DT_ERR_INVALID);
        buf[0] ^= 0xff;
        assert_int_equal(b.ops->load(b.state, buf, len), DT_ERR_INVALID);
    }
    free(buf);
    opt_close(&a);
    opt_close(&b);
}

static void test_round_trip(void **state)
{
    const char *mom[] = {"momentum=0.9", "nesterov=true", NULL};
    round_trip("sgd", mom);
    round_trip("sgd", NULL);
    round_trip("adam", NULL);
    const char *wd[] = {"weight_decay=0.05", NULL};
    round_trip("adamw", wd);
    round_trip("lars", NULL);
    const char *nomom[] = {"momentum=0", NULL};
    round_trip("lars", nomom);
    round_trip("lamb", wd);
}

/* adam's state does not load into adamw: the error names the owner. */
static void test_foreign_state(void **state)
{
    opt_t a, w;
    assert_int_equal(opt_open(&a, "adam", 3, NULL), DT_OK);
    assert_int_equal(opt_open(&w, "adamw", 3, NULL), DT_OK);
    size_t len = a.ops->state_size(a.state);
    void *buf = malloc(len);
    assert_int_equal(a.ops->save(a.state, buf, len), DT_OK);
    assert_int_equal(w.ops->load(w.state, buf, len), DT_ERR_INVALID);
    free(buf);
    opt_close(&a);
    opt_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd),
        cmocka_unit_test(test_sgd_momentum),
        cmocka_unit_test(test_adam),
        cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_lars),
        cmocka_unit_test(test_lars_tensors),
        cmocka_unit_test(test_lamb),
        cmocka_unit_test(test_lars_kinds),
        cmocka_unit_test(test_lamb_kinds),
        cmocka_unit_test(test_kinds_refused),
        cmocka_unit_test(test_bad_settings),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_foreign_state),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dt_plugins_unload_all();
    return rc;
}
