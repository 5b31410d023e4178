/* test_env.c — dt/env.h (core/base/env.c), the SDK's environment helpers
 * the launchers share: a variable of a "NAME=VALUE" list (whole names
 * only, the first entry wins) and whether a program is runnable here
 * (a path, or a name in a non-empty directory of PATH). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <dt/env.h>

static void test_env_value(void **state)
{
    (void)state;
    const char *const env[] = {"DT_JOB_IDX=9", "DT_JOB_ID=42", "EMPTY=",
                               "DT_JOB_ID=7", "NOEQUALS", NULL};
    assert_string_equal(dt_env_value(env, "DT_JOB_ID"), "42");
    assert_string_equal(dt_env_value(env, "DT_JOB_IDX"), "9");
    assert_string_equal(dt_env_value(env, "EMPTY"), "");
    assert_null(dt_env_value(env, "DT_JOB"));   /* a prefix is no name */
    assert_null(dt_env_value(env, "NOEQUALS")); /* no value: not set */
    assert_null(dt_env_value(env, "ABSENT"));
    assert_null(dt_env_value(NULL, "DT_JOB_ID"));
    assert_null(dt_env_value(env, NULL));
    /* environ-style lists (char *const *) go with a cast */
    char a[] = "X=1";
    char *const mutable_env[] = {a, NULL};
    assert_string_equal(
        dt_env_value((const char *const *)mutable_env, "X"), "1");
}

typedef struct bin_dir {
    char dir[64];
    char tool[128];  /* executable */
    char plain[128]; /* not executable */
} bin_dir_t;

static void make_file(const char *path, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static int bin_dir_setup(void **state)
{
    bin_dir_t *b = calloc(1, sizeof *b);
    snprintf(b->dir, sizeof b->dir, "/tmp/dt-test-env-XXXXXX");
    if (!mkdtemp(b->dir))
        return -1;
    snprintf(b->tool, sizeof b->tool, "%s/dt-env-tool", b->dir);
    snprintf(b->plain, sizeof b->plain, "%s/dt-env-plain", b->dir);
    make_file(b->tool, 0755);
    make_file(b->plain, 0644);
    *state = b;
    return 0;
}

static int bin_dir_teardown(void **state)
{
    bin_dir_t *b = *state;
    unlink(b->tool);
    unlink(b->plain);
    rmdir(b->dir);
    free(b);
    return 0;
}

static void test_program_found(void **state)
{
    bin_dir_t *b = *state;
    char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char path[256];
    snprintf(path, sizeof path, "/nonexistent-dt-dir::%s:", b->dir);
    assert_int_equal(setenv("PATH", path, 1), 0);
    assert_true(dt_program_found("dt-env-tool"));
    assert_false(dt_program_found("dt-env-plain")); /* not executable */
    assert_false(dt_program_found("dt-env-absent"));
    assert_false(dt_program_found(""));
    assert_false(dt_program_found(NULL));
    /* a name with a '/' is a path: PATH plays no part */
    assert_true(dt_program_found(b->tool));
    assert_false(dt_program_found(b->plain));
    assert_int_equal(setenv("PATH", "/nonexistent-dt-dir", 1), 0);
    assert_true(dt_program_found(b->tool));
    assert_false(dt_program_found("dt-env-tool"));
    /* an empty PATH entry is not the current directory */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(b->dir), 0);
    assert_int_equal(setenv("PATH", ":", 1), 0);
    assert_false(dt_program_found("dt-env-tool"));
    assert_int_equal(chdir(cwd), 0);
    /* PATH unset: /usr/bin:/bin, where sh is */
    assert_int_equal(unsetenv("PATH"), 0);
    assert_true(dt_program_found("sh"));
    assert_false(dt_program_found("dt-env-tool"));
    if (saved)
        setenv("PATH", saved, 1);
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_value),
        cmocka_unit_test_setup_teardown(test_program_found, bin_dir_setup,
                                        bin_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
