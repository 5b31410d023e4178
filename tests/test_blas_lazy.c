/* test_blas_lazy.c — libdt loads OpenBLAS on first use, not before main:
 * nothing of it is mapped until a cpu device is opened (or dt_gemm runs
 * on a cpu device it did not open); its constructor then starts the
 * device's threads, not one per CPU (each maps a buffer: under ulimit -v
 * that hung or stopped programs); OPENBLAS_NUM_THREADS is left as it was
 * for the processes started later; a file that cannot be loaded is
 * named, with what to install; under an address-space limit (OpenBLAS
 * retries a buffer that does not fit for ever) a device without room for
 * one buffer is refused, one with room for fewer threads than asked runs
 * those. The cases run in this order, in one process (a constructor runs
 * once): the loading ones in children where they must not load it
 * here. */
#define _GNU_SOURCE /* pthread_getattr_default_np */
#include <dirent.h>
#include <pthread.h>
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
#include "base/proc_status.h"
#include "nn/blas_load.h"
#include "nn/blas_room.h"
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

/* A pool thread's address space besides its buffer: its stack, guard. */
static unsigned long long stack_bytes(void)
{
    pthread_attr_t attr;
    size_t stack = 8u << 20, guard = 4096;
    if (pthread_getattr_default_np(&attr) == 0) {
        pthread_attr_getstacksize(&attr, &stack);
        pthread_attr_getguardsize(&attr, &guard);
        pthread_attr_destroy(&attr);
    }
    return (unsigned long long)stack + guard;
}

#define MIB (1ULL << 20)

/* In a child: OpenBLAS loaded (no threads, no buffer), then an
 * address-space limit of room bytes more than is mapped, then a cpu
 * device of threads. SIGALRM (exit 142) if it hangs. */
typedef struct limited_open {
    dt_status_t st;
    dt_device_t *dev;
    char *log;
    int threads_before; /* this process's, before the device */
} limited_open_t;

static int open_with_room(unsigned long long room, int threads,
                          limited_open_t *out)
{
    char why[2048];
    alarm(60); /* a hang fails the test instead of stalling it */
    if (!dt_blas_load(1, why, sizeof why))
        return -1;
    unsigned long long mapped = dt_proc_mapped_bytes();
    struct rlimit lim;
    if (!mapped || getrlimit(RLIMIT_AS, &lim) != 0)
        return -1;
    lim.rlim_cur = (rlim_t)(mapped + room);
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_cur > lim.rlim_max)
        return -1;
    if (setrlimit(RLIMIT_AS, &lim) != 0)
        return -1;
    out->threads_before = thread_count();
    capture_t cap;
    capture_begin(&cap);
    out->dev = NULL;
    out->st = dt_device_open("cpu", 0, threads, &out->dev);
    out->log = capture_end(&cap);
    return out->log ? 0 : -1;
}

/* 100 MiB: room for no 128 MiB buffer. Refused, with the limit, the need
 * and what to do (it used to warn, then hang at the first product). */
static int tight_limit_refused(void)
{
    limited_open_t o;
    if (open_with_room(100 * MIB, 1, &o) != 0)
        return 2;
    if (o.st != DT_ERR_CONFIG || o.dev)
        return 3;
    if (!strstr(o.log, "address-space limit of") ||
        !strstr(o.log, "OpenBLAS maps a 128 MiB buffer at the first matrix "
                       "product") ||
        !strstr(o.log, "the job would hang") ||
        !strstr(o.log, "Raise the limit by at least"))
        return 4;
    return 0;
}

/* 2 GiB: all threads, nothing said. */
static int roomy_limit_quiet(void)
{
    limited_open_t o;
    if (open_with_room(2048 * MIB, 2, &o) != 0 || o.st != DT_OK)
        return 2;
    if (strstr(o.log, "address-space limit") || o.dev->threads != 2)
        return 3;
    return gemm_right(o.dev) ? 0 : 4;
}

/* ones(m x k) ones(k x n) = k everywhere: a product OpenBLAS splits
 * among its threads (each must have its buffer, or this hangs). */
static int big_gemm_right(dt_device_t *dev)
{
    enum { N = 512 };
    float *m = malloc(3 * (size_t)N * N * sizeof *m);
    if (!m)
        return 0;
    for (size_t i = 0; i < 2 * (size_t)N * N; i++)
        m[i] = 1.0f;
    int ok = dt_gemm(dev, 0, 0, N, N, N, 1.0f, m, N, m + N * N, N, 0.0f,
                     m + 2 * N * N, N) == DT_OK;
    for (size_t i = 0; ok && i < (size_t)N * N; i++)
        ok = m[2 * N * N + i] == (float)N;
    free(m);
    return ok;
}

/* Room for the calling thread's buffer and one pool thread (and a
 * little): threads = 4 runs 2, says so, and multiplies. */
static int fewer_threads_said(void)
{
    limited_open_t o;
    unsigned long long thread = 128 * MIB + stack_bytes();
    if (open_with_room(128 * MIB + 16 * MIB + thread + 8 * MIB, 4, &o) != 0 ||
        o.st != DT_OK)
        return 2;
    if (!strstr(o.log, "[train] threads = 4, but the address-space limit") ||
        !strstr(o.log, "room for the buffers of 2 OpenBLAS threads") ||
        !strstr(o.log, "running 2"))
        return 3;
    if (o.dev->threads != 2 || !strstr(o.dev->name, "2 threads") ||
        thread_count() != o.threads_before + 1)
        return 4;
    return gemm_right(o.dev) && big_gemm_right(o.dev) ? 0 : 5;
}

static void test_address_space_limit(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip(); /* ASan maps its own shadow and allocator under the limit */
#endif
    assert_int_equal(in_child(tight_limit_refused), 0);
    assert_int_equal(in_child(roomy_limit_quiet), 0);
    assert_int_equal(in_child(fewer_threads_said), 0);
}

/* What fits, worked out: the caller's buffer first, then whole threads. */
static void test_threads_fitting(void **state)
{
    (void)state;
    const dt_blas_cost_t c = {.caller = 128 * MIB, .thread = 136 * MIB,
                              .margin = 16 * MIB};
    assert_int_equal(dt_blas_bytes_needed(&c, 1, 1), 144 * MIB);
    assert_int_equal(dt_blas_bytes_needed(&c, 3, 1), 416 * MIB);
    assert_int_equal(dt_blas_threads_fitting(143 * MIB, &c, 4, 1), 0);
    assert_int_equal(dt_blas_threads_fitting(144 * MIB, &c, 4, 1), 1);
    assert_int_equal(dt_blas_threads_fitting(279 * MIB, &c, 4, 1), 1);
    assert_int_equal(dt_blas_threads_fitting(280 * MIB, &c, 4, 1), 2);
    assert_int_equal(dt_blas_threads_fitting(10000 * MIB, &c, 4, 1), 4);
    /* running threads cost nothing more; a mapped caller neither */
    const dt_blas_cost_t mapped = {.caller = 0, .thread = 136 * MIB,
                                   .margin = 16 * MIB};
    assert_int_equal(dt_blas_threads_fitting(0, &mapped, 3, 3), 3);
    assert_int_equal(dt_blas_threads_fitting(0, &mapped, 4, 3), 3);
    assert_int_equal(dt_blas_threads_fitting(152 * MIB, &mapped, 4, 3), 4);
    /* a want too large to count does not wrap into a small need */
    assert_true(dt_blas_bytes_needed(&c, 2000000000, 1) > 1000000 * MIB);
    /* the room measured: all of a cap that fits (no limit here) */
    assert_int_equal(dt_blas_room_now(64 * MIB), 64 * MIB);
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
        cmocka_unit_test(test_address_space_limit),
        cmocka_unit_test(test_threads_fitting),
        cmocka_unit_test(test_device_keeps_user_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
