/* test_jobdir_mon.c — the job-directory monitor (sge, yarn) reports the
 * ranks' exits in the order they ended: a poll that finds the failing
 * rank's exit file together with those of the ranks the job then stopped
 * (SIGTERM: 143) must name the failing rank, not the lowest one. A loaded
 * sanitizer CI run blamed "rank 0 exited with code 143" for yarn's rank 1
 * exit 4. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../plugins/launcher/common/jobdir/jobdir.h"

static void write_file(const char *dir, const char *name, const char *text,
                       long sec)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    struct timespec ts[2] = {{sec, 0}, {sec, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_exits_in_the_order_written(void **state)
{
    (void)state;
    char dir[] = "/tmp/dt-jobdir-mon.XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "hosts", "0 h0\n1 h1\n2 h2\n", 1000);
    /* rank 1 failed first; 0 and 2 were stopped after it */
    write_file(dir, "exit.0", "143\n", 1002);
    write_file(dir, "exit.1", "4\n", 1001);
    write_file(dir, "exit.2", "143\n", 1003);
    jobdir_mon_t m;
    assert_int_equal(jobdir_mon_init(&m, dir, 3, "fallback", NULL, NULL),
                     DT_OK);
    assert_int_equal(jobdir_mon_poll(&m), 1); /* the hosts file */
    jobdir_mon_poll(&m);
    dt_worker_exit_t ev;
    int order[3], codes[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(jobdir_mon_next(&m, &ev), 1);
        order[i] = ev.rank;
        codes[i] = ev.code;
    }
    assert_int_equal(jobdir_mon_next(&m, &ev), -1);
    assert_int_equal(order[0], 1);
    assert_int_equal(codes[0], 4);
    assert_string_equal(ev.host, "h2");
    assert_int_equal(order[1], 0);
    assert_int_equal(order[2], 2);
    jobdir_mon_free(&m);
    const char *names[] = {"hosts", "exit.0", "exit.1", "exit.2"};
    for (size_t i = 0; i < 4; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* A rank without an exit file (ended with the job: the scheduler killed
 * it) comes after every rank that wrote one. */
static void test_lost_after_exited(void **state)
{
    (void)state;
    char dir[] = "/tmp/dt-jobdir-mon.XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "hosts", "0 h0\n1 h1\n", 1000);
    write_file(dir, "exit.1", "3\n", 1005);
    jobdir_mon_t m;
    assert_int_equal(jobdir_mon_init(&m, dir, 2, "fallback", NULL, NULL),
                     DT_OK);
    jobdir_mon_poll(&m);
    jobdir_mon_finish(&m);
    dt_worker_exit_t ev;
    assert_int_equal(jobdir_mon_next(&m, &ev), 1);
    assert_int_equal(ev.rank, 1);
    assert_int_equal(ev.code, 3);
    assert_int_equal(jobdir_mon_next(&m, &ev), 1);
    assert_int_equal(ev.rank, 0);
    assert_true(ev.signaled);
    assert_int_equal(jobdir_mon_next(&m, &ev), -1);
    jobdir_mon_free(&m);
    char path[4096];
    snprintf(path, sizeof path, "%s/hosts", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/exit.1", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exits_in_the_order_written),
        cmocka_unit_test(test_lost_after_exited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
