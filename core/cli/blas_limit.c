/* blas_limit.c — see blas_limit.h.
 *
 * OpenBLAS starts one thread per CPU in its constructor, before main, and
 * each maps a buffer of its own. Under a finite RLIMIT_AS a thread whose
 * mmap fails retries it for ever (OpenBLAS 0.3.21's blas_memory_alloc),
 * spinning on a CPU, and the process then hangs at its first fork (the
 * atfork handler joins that thread) and at exit: `ulimit -v 150000;
 * dtctl --version` never ended on this 2-CPU machine, and the threads
 * (and the buffers they map) grow with the CPUs of the host. Only the
 * environment read by that constructor prevents it, so the program runs
 * itself again with OPENBLAS_NUM_THREADS=1; what it needs later it sets
 * (openblas_set_num_threads starts more threads: dt-train's [train]
 * threads, which may spin the same way under too tight a limit).
 * Unlimited (the usual case) costs nothing. Not covered: a host with so
 * many CPUs that the constructor cannot even create its threads under the
 * limit; OpenBLAS then stops the program itself before main (exit 130,
 * "pthread_create failed"): OPENBLAS_NUM_THREADS=1 in the environment
 * there (docs/TRAINING.md). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "blas_limit.h"

#define MARK "DT_BLAS_ONE_THREAD" /* set only for the run again */

/* path: this program's file when /proc/self/exe is the program called
 * name, not a loader that runs it (ld.so called by name: running that
 * again with our argv would run something else); 0 otherwise, and under
 * valgrind (its client would leave it). */
static int own_file(const char *name, char *path, size_t len)
{
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload"))
        return 0;
    ssize_t n = readlink("/proc/self/exe", path, len - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "lt-", 3) == 0) /* libtool's name in a build tree */
        base += 3;
    return strcmp(base, name) == 0;
}

void dt_blas_limit_reexec(char **argv, const char *name)
{
    if (getenv(MARK)) {
        unsetenv(MARK);
        unsetenv("OPENBLAS_NUM_THREADS"); /* ours, not the workers' */
        return;
    }
    struct rlimit as;
    char path[4096];
    if (getenv("OPENBLAS_NUM_THREADS") || getrlimit(RLIMIT_AS, &as) != 0 ||
        as.rlim_cur == RLIM_INFINITY || !own_file(name, path, sizeof path))
        return;
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0 ||
        setenv(MARK, "1", 1) != 0)
        return;
    execv(path, argv);
    unsetenv(MARK); /* no /proc: on as before */
    unsetenv("OPENBLAS_NUM_THREADS");
}
