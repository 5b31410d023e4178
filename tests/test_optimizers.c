/* test_optimizers.c — the sgd, adam and adamw plugins, loaded the way dt
 * loads them, against steps computed by hand (the numbers in comments),
 * and their state save/load round trip. */
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

static void test_bad_settings(void **state)
{
    opt_t o;
    const char *nan_beta[] = {"beta1=lots", NULL};
    assert_int_equal(opt_open(&o, "adam", 1, nan_beta), DT_ERR_CONFIG);
    opt_close(&o);
    const char *big_mom[] = {"momentum=1.5", NULL};
    assert_int_equal(opt_open(&o, "sgd", 1, big_mom), DT_ERR_CONFIG);
    opt_close(&o);
    const char *nest[] = {"nesterov=yes", NULL};
    assert_int_equal(opt_open(&o, "sgd", 1, nest), DT_ERR_CONFIG);
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
        cmocka_unit_test(test_bad_settings),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_foreign_state),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dt_plugins_unload_all();
    return rc;
}
