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
 * threads). Unlimited (the usual case) costs nothing. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "blas_limit.h"

#define MARK "DT_BLAS_ONE_THREAD" /* set only for the run again */

void dt_blas_limit_reexec(char **argv)
{
    if (getenv(MARK)) {
        unsetenv(MARK);
        unsetenv("OPENBLAS_NUM_THREADS"); /* ours, not the workers' */
        return;
    }
    struct rlimit as;
    if (getenv("OPENBLAS_NUM_THREADS") || getrlimit(RLIMIT_AS, &as) != 0 ||
        as.rlim_cur == RLIM_INFINITY)
        return;
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0 ||
        setenv(MARK, "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    unsetenv(MARK); /* no /proc: on as before */
    unsetenv("OPENBLAS_NUM_THREADS");
}
