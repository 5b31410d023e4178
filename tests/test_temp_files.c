/* test_temp_files.c — dtctl's scratch files (core/cli/temp_files.c) are
 * close-on-exec: a program dtctl starts while one is open (plan
 * --measure's benches, the simulator, gnuplot) does not hold it (a bench
 * and every worker it started kept plan --measure's capture file open). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/temp_files.h"

static char dir[] = "/tmp/dt-test-temp-XXXXXX";

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    return setenv("TMPDIR", dir, 1);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The exit status of a shell, started by fork and exec, that tests
 * whether it holds descriptor fd: 0 it does, 1 it does not. */
static int child_holds(int fd)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "[ -e /proc/$$/fd/%d ]", fd);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_scratch_file_not_inherited(void **state)
{
    (void)state;
    FILE *f = dt_temp_file("test");
    assert_non_null(f);
    assert_int_equal(child_holds(fileno(f)), 1);
    /* the test itself can see a descriptor that is inherited */
    int plain = dup(fileno(f));
    assert_true(plain >= 0);
    assert_int_equal(child_holds(plain), 0);
    close(plain);
    /* still a working scratch file */
    assert_true(fputs("data", f) >= 0);
    rewind(f);
    char buf[8] = "";
    assert_non_null(fgets(buf, sizeof buf, f));
    assert_string_equal(buf, "data");
    fclose(f);
}

static void test_named_file_not_inherited(void **state)
{
    (void)state;
    char path[4096];
    int fd = dt_temp_mkstemp("test", "dt-test-", path, sizeof path);
    assert_true(fd >= 0);
    assert_non_null(strstr(path, dir));
    assert_int_equal(child_holds(fd), 1);
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scratch_file_not_inherited),
        cmocka_unit_test(test_named_file_not_inherited),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
