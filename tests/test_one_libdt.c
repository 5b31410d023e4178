/* test_one_libdt.c — one libdt per test process. Unit tests link
 * libdt_private (every dt_* symbol exported), while the plugins they load
 * link the real libdt.so.1, which then comes along. Their dt_* calls must
 * still reach the test's copy — the logger's level, the loader's and the
 * store's state exist once — because the dynamic linker looks in the
 * global scope (the program and libdt_private) before a dlopen()ed
 * object's own libraries. A fixture linked like a plugin shows it. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dt/log.h>

typedef dt_log_level_t (*getter_fn)(void);
typedef void (*setter_fn)(dt_log_level_t);
typedef getter_fn (*address_fn)(void);

static void *fixture;

static void *sym(const char *name)
{
    void *p = dlsym(fixture, name);
    assert_non_null(p);
    return p;
}

static void test_plugin_brings_libdt_so(void **state)
{
    (void)state;
    /* Otherwise the test below proves nothing. */
    void *h = dlopen("libdt.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    dlclose(h);
}

static void test_same_functions(void **state)
{
    (void)state;
    address_fn address;
    void *p = sym("fixture_getter");
    memcpy(&address, &p, sizeof address);
    assert_true(address() == dt_log_get_level);
}

static void test_same_log_level(void **state)
{
    (void)state;
    getter_fn level;
    setter_fn set_level;
    void *p = sym("fixture_log_level");
    memcpy(&level, &p, sizeof level);
    p = sym("fixture_set_log_level");
    memcpy(&set_level, &p, sizeof set_level);

    dt_log_set_level(DT_LOG_TRACE);
    assert_int_equal(level(), DT_LOG_TRACE);
    set_level(DT_LOG_ERROR);
    assert_int_equal(dt_log_get_level(), DT_LOG_ERROR);
    dt_log_set_level(DT_LOG_INFO);
    assert_int_equal(level(), DT_LOG_INFO);
}

int main(void)
{
    const char *top = getenv("top_builddir");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/.libs/libdtuser.so",
             top ? top : "..");
    /* As the plugin loader opens plugins. */
    fixture = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!fixture) {
        fprintf(stderr, "FAIL: %s\n", dlerror());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plugin_brings_libdt_so),
        cmocka_unit_test(test_same_functions),
        cmocka_unit_test(test_same_log_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
