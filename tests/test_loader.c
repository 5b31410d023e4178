/* test_loader.c — the plugin loader against real shared objects: a good
 * plugin, another ABI number, a struct that disagrees with its file name, a
 * missing symbol, a missing shared library, a required op missing, and a
 * name that does not exist. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/plugin_loader.h"

static char fixture_dir[4096];

/* ---- stderr capture: the loader's messages are part of its contract ---- */
static int saved_stderr = -1;
static FILE *capture_file;

static void capture_begin(void)
{
    fflush(stderr);
    capture_file = tmpfile();
    assert_non_null(capture_file);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fileno(capture_file), STDERR_FILENO);
}

static char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    long n = ftell(capture_file);
    char *text = calloc(1, (size_t)n + 1);
    rewind(capture_file);
    size_t got = fread(text, 1, (size_t)n, capture_file);
    text[got] = '\0';
    fclose(capture_file);
    return text;
}

static char *fixture(const char *file)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", fixture_dir, file);
    return path;
}

static void test_good_plugin_loads_and_runs(void **state)
{
    (void)state;
    const dt_plugin_t *p = NULL;
    const char *path = NULL;
    assert_int_equal(dt_plugin_load(DT_KIND_OPTIMIZER, "good", &p, &path),
                     DT_OK);
    assert_string_equal(p->name, "good");
    assert_string_equal(p->version, "9.9");
    assert_non_null(strstr(path, "dt_optimizer_good.so"));
    const dt_optimizer_ops_t *ops = p->ops;
    assert_true(ops->size >= offsetof(dt_optimizer_ops_t, step));
    void *opt = NULL;
    float params[3] = {1, 2, 3}, grads[3] = {10, 20, 30};
    assert_int_equal(ops->create(NULL, 3, DT_MEM_HOST, &opt), DT_OK);
    assert_int_equal(ops->step(opt, params, grads, 0.5f, 1, NULL), DT_OK);
    assert_true(params[0] == -4.0f && params[1] == -8.0f &&
                params[2] == -12.0f);
    ops->destroy(opt);
    /* Loading again gives the same, already loaded, plugin. */
    const dt_plugin_t *again = NULL;
    assert_int_equal(dt_plugin_load(DT_KIND_OPTIMIZER, "good", &again, NULL),
                     DT_OK);
    assert_ptr_equal(p, again);
}

static void expect_refused(const char *file, const char *const *needles)
{
    const dt_plugin_t *p = NULL;
    char why[1024] = "";
    assert_int_equal(dt_plugin_load_file(fixture(file), &p, why, sizeof why),
                     DT_ERR_PLUGIN);
    assert_null(p);
    assert_non_null(strstr(why, file)); /* names the file */
    for (const char *const *n = needles; *n; n++) {
        if (!strstr(why, *n))
            fail_msg("'%s' not in loader message: %s", *n, why);
    }
}

static void test_wrong_abi_names_both_numbers(void **state)
{
    (void)state;
    static const char *const needles[] = {"ABI 999", "ABI 1", NULL};
    expect_refused("dt_optimizer_badabi.so", needles);
}

static void test_name_mismatch(void **state)
{
    (void)state;
    static const char *const needles[] = {"'misnamed'", "'othername'", NULL};
    expect_refused("dt_optimizer_misnamed.so", needles);
}

static void test_missing_symbol(void **state)
{
    (void)state;
    static const char *const needles[] = {"dt_plugin_v1", NULL};
    expect_refused("dt_optimizer_nosym.so", needles);
}

static void test_missing_library_is_named(void **state)
{
    (void)state;
    static const char *const needles[] = {"libdtfixturegone.so.0", NULL};
    expect_refused("dt_optimizer_needsdep.so", needles);
}

/* Refused at load, not when first called: a transport without test and
 * fini (fixtures/fixture_transport.c), naming both. */
static void test_missing_required_ops(void **state)
{
    (void)state;
    static const char *const needles[] = {
        "transport plugin 'halfdone' lacks the required ops test, fini",
        NULL};
    expect_refused("dt_transport_halfdone.so", needles);
}

static void test_unknown_name_lists_existing(void **state)
{
    (void)state;
    const dt_plugin_t *p = NULL;
    capture_begin();
    dt_status_t st = dt_plugin_load(DT_KIND_OPTIMIZER, "nope", &p, NULL);
    char *msg = capture_end();
    assert_int_equal(st, DT_ERR_NOT_FOUND);
    assert_non_null(strstr(msg, "dt_optimizer_nope.so"));
    /* The fixture is listed (with the in-tree optimizers beside it). */
    const char *avail = strstr(msg, "available optimizers: ");
    assert_non_null(avail);
    assert_non_null(strstr(avail, "good"));
    /* Broken fixtures are not offered as choices. */
    assert_null(strstr(msg, "badabi"));
    free(msg);
}

static void test_bad_names_are_rejected_not_searched(void **state)
{
    (void)state;
    const dt_plugin_t *p = NULL;
    capture_begin();
    dt_status_t st = dt_plugin_load(DT_KIND_OPTIMIZER, "../etc/x", &p, NULL);
    char *msg = capture_end();
    assert_int_equal(st, DT_ERR_NOT_FOUND);
    /* Says what a name may be, rather than "no such file". */
    assert_non_null(strstr(msg, "plugin names are lower case letters"));
    free(msg);
}

static void test_scan_reports_each_file(void **state)
{
    (void)state;
    dt_plugin_entry_t *v;
    size_t n;
    assert_int_equal(dt_plugin_scan(&v, &n), DT_OK);
    int good = 0, badabi = 0, needsdep = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind != DT_KIND_OPTIMIZER)
            continue;
        if (strcmp(v[i].name, "good") == 0)
            good = v[i].available && strcmp(v[i].version, "9.9") == 0;
        if (strcmp(v[i].name, "badabi") == 0)
            badabi = !v[i].available && strstr(v[i].why, "ABI 999");
        if (strcmp(v[i].name, "needsdep") == 0)
            needsdep = !v[i].available && strstr(v[i].why, "libdtfixturegone.so.0");
    }
    dt_plugin_entries_free(v, n);
    assert_true(good);
    assert_true(badabi);
    assert_true(needsdep);
}

static void test_schema_lookup_returns_plugin_keys(void **state)
{
    (void)state;
    const dt_key_spec_t *keys = dt_plugin_schema_lookup("optimizer.good", NULL);
    assert_non_null(keys);
    assert_string_equal(keys[0].name, "momentum");
    assert_null(dt_plugin_schema_lookup("optimizer.nope", NULL));
    assert_null(dt_plugin_schema_lookup("nokind.good", NULL));
}

static void test_search_path_order(void **state)
{
    (void)state;
    char **dirs = dt_plugin_search_path();
    assert_non_null(dirs);
    assert_string_equal(dirs[0], fixture_dir); /* DT_PLUGIN_PATH first */
    size_t n = 0;
    while (dirs[n])
        n++;
    assert_true(n >= 2);
    assert_string_equal(dirs[n - 1], DT_TEST_PLUGIN_DIR); /* pkglibdir last */
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
}

int main(void)
{
    const char *top = getenv("top_builddir");
    snprintf(fixture_dir, sizeof fixture_dir, "%s/tests/fixtures/.libs",
             top ? top : "..");
    setenv("DT_PLUGIN_PATH", fixture_dir, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_plugin_loads_and_runs),
        cmocka_unit_test(test_wrong_abi_names_both_numbers),
        cmocka_unit_test(test_name_mismatch),
        cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_missing_library_is_named),
        cmocka_unit_test(test_missing_required_ops),
        cmocka_unit_test(test_unknown_name_lists_existing),
        cmocka_unit_test(test_bad_names_are_rejected_not_searched),
        cmocka_unit_test(test_scan_reports_each_file),
        cmocka_unit_test(test_schema_lookup_returns_plugin_keys),
        cmocka_unit_test(test_search_path_order),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dt_plugins_unload_all();
    return rc;
}
