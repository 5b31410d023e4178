/* test_blas_lazy.c — libdt loads OpenBLAS on first use, not before main:
 * nothing of it is mapped until a cpu device is opened (or dt_gemm runs
 * on a cpu device it did not open); its constructor then starts the device's threads, not one
 * per CPU (each maps a buffer: under ulimit -v that hung or stopped
 * programs); OPENBLAS_NUM_THREADS is left as it was for the processes
 * started later; a file that cannot be loaded is named, with what to
 * install; an address-space limit without room for OpenBLAS's buffers is
 * said (it would retry mapping one for ever). The cases run in this order, in one process (a constructor
 * runs once): the loading ones in children where they must not load it
 * here. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <dt/nn.h>
#include "nn/blas_load.h"
#include "nn/layer.h"
#include "proc_maps.h"
#include "stderr_capture.h"

/* Threads of this process (/proc/self/task); -1 if it cannot be read. */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50]: exact in float. */
static int gemm_right(dt_device_t *dev)
{
    const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    float c[4] = {-1, -1, -1, -1};
    if (dt_gemm(dev, 0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2) != DT_OK)
        return 0;
    return c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50;
}

/* Run fn in a child; its exit status (0: all its checks held), 128 + the
 * signal that killed it (cmocka's handlers would carry on with the next
 * tests in the child). */
static int in_child(int (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
            signal(sigs[i], SIG_DFL);
        _exit(fn());
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_not_mapped_before_use(void **state)
{
    (void)state;
    assert_int_equal(maps_has("libopenblas"), 0);
    assert_int_equal(maps_has("libgfortran"), 0);
}

static void test_missing_file_named(void **state)
{
    (void)state;
    const char *files[] = {"/nonexistent/libopenblas.so.0", NULL};
    dt_blas_t b;
    char why[2048] = "";
    assert_int_equal(dt_blas_open_files(files, 1, &b, why, sizeof why),
                     DT_ERR_UNSUPPORTED);
    assert_null(b.sgemm);
    assert_non_null(strstr(why, "/nonexistent/libopenblas.so.0"));
    assert_non_null(strstr(why, "apt-get install libopenblas0"));
    /* A library that is not OpenBLAS is refused, by name. */
    const char *not_blas[] = {"libm.so.6", NULL};
    assert_int_equal(dt_blas_open_files(not_blas, 1, &b, why, sizeof why),
                     DT_ERR_UNSUPPORTED);
    assert_non_null(strstr(why, "libm.so.6: has no cblas_sgemm"));
    assert_int_equal(maps_has("libopenblas"), 0);
}

/* dt_gemm on a cpu device that dt_device_open did not make loads it
 * itself (OpenBLAS's default threads). */
static int gemm_without_device(void)
{
    dt_device_t cpu = {.kind = DT_DEVICE_CPU, .mem = DT_MEM_HOST,
                       .ordinal = -1, .threads = 1};
    if (maps_has("libopenblas") != 0)
        return 2;
    if (!gemm_right(&cpu))
        return 3;
    return maps_has("libopenblas") == 1 ? 0 : 4;
}

static void test_gemm_loads_it(void **state)
{
    (void)state;
    assert_int_equal(in_child(gemm_without_device), 0);
    assert_int_equal(maps_has("libopenblas"), 0); /* the child's, not ours */
}

/* threads = 2 with OPENBLAS_NUM_THREADS unset: one thread more than
 * before on any host (linked, the constructor started one per CPU), and
 * the variable unset again after. */
static int device_two_threads(void)
{
    unsetenv("OPENBLAS_NUM_THREADS");
    int before = thread_count();
    dt_device_t *dev = NULL;
    if (before < 1 || dt_device_open("cpu", 0, 2, &dev) != DT_OK)
        return 2;
    if (thread_count() != before + 1)
        return 3;
    if (getenv("OPENBLAS_NUM_THREADS"))
        return 4;
    int ok = gemm_right(dev) && strstr(dev->name, "2 threads");
    dt_device_close(dev);
    return ok ? 0 : 5;
}

static void test_device_starts_its_threads(void **state)
{
    (void)state;
    assert_int_equal(in_child(device_two_threads), 0);
}

/* Open a cpu device (threads 1) under an address-space limit of room_mib
 * more than is mapped now; 1 when the no-room warning was logged, 0 when
 * not, -1 on failure. */
static int warned_with_room(unsigned long room_mib)
{
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1 || pages <= 0)
        return -1;
    fclose(f);
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) != 0)
        return -1;
    lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) +
                   ((rlim_t)room_mib << 20);
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_cur > lim.rlim_max)
        return -1;
    capture_t cap;
    capture_begin(&cap);
    dt_device_t *dev = NULL;
    int ok = setrlimit(RLIMIT_AS, &lim) == 0 &&
             dt_device_open("cpu", 0, 1, &dev) == DT_OK;
    char *text = capture_end(&cap);
    int warned = text && strstr(text, "OpenBLAS maps 128 MiB per thread") &&
                 strstr(text, "the job hangs");
    free(text);
    dt_device_close(dev);
    return ok ? warned : -1;
}

/* 100 MiB: room to load the library, not for the 128 MiB buffer. */
static int tight_limit_said(void)
{
    return warned_with_room(100) == 1 ? 0 : 2;
}

static int roomy_limit_quiet(void)
{
    return warned_with_room(2048) == 0 ? 0 : 2;
}

static void test_no_room_said(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip(); /* ASan maps its own shadow and allocator under the limit */
#endif
    assert_int_equal(in_child(tight_limit_said), 0);
    assert_int_equal(in_child(roomy_limit_quiet), 0);
}

/* Here: threads = 1 starts none, and the user's setting is kept. */
static void test_device_keeps_user_setting(void **state)
{
    (void)state;
    assert_int_equal(setenv("OPENBLAS_NUM_THREADS", "5", 1), 0);
    int before = thread_count();
    assert_true(before >= 1);
    dt_device_t *dev = NULL;
    assert_int_equal(dt_device_open("cpu", 0, 1, &dev), DT_OK);
    assert_int_equal(maps_has("libopenblas"), 1);
    assert_int_equal(thread_count(), before);
    assert_string_equal(getenv("OPENBLAS_NUM_THREADS"), "5");
    assert_non_null(strstr(dev->name, "OpenBLAS, 1 thread"));
    assert_true(gemm_right(dev));
    dt_device_close(dev);
    unsetenv("OPENBLAS_NUM_THREADS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_mapped_before_use),
        cmocka_unit_test(test_missing_file_named),
        cmocka_unit_test(test_gemm_loads_it),
        cmocka_unit_test(test_device_starts_its_threads),
        cmocka_unit_test(test_no_room_said),
        cmocka_unit_test(test_device_keeps_user_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
