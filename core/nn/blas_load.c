/* blas_load.c — load OpenBLAS on first use (see blas_load.h). Built only
 * when configure found OpenBLAS and the file it links (DT_OPENBLAS_SONAME,
 * DT_OPENBLAS_PATH in config.h). */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "nn/blas_load.h"

#define THREADS_VAR "OPENBLAS_NUM_THREADS" /* read by its constructor */

/* By soname first: the dynamic linker's search (LD_LIBRARY_PATH, Debian's
 * alternatives) finds what a linked program would have used; then where
 * configure found it, for a prefix outside that search. */
static const char *const blas_files[] = {DT_OPENBLAS_SONAME,
                                         DT_OPENBLAS_PATH, NULL};

static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_blas_t blas_table;
static const dt_blas_t *blas_loaded; /* &blas_table once loaded; never
                                        unloaded */
static int blas_tried;
static char blas_why[2048];

/* dlopen file with OpenBLAS's constructor starting threads threads (0: as
 * the environment says). The variable is restored at once, so processes
 * started later (dtctl's workers, a user's) inherit what they would
 * have; the caller's contract (blas_load.h) makes setenv safe here. */
static void *open_with_threads(const char *file, int threads, char *err,
                               size_t err_len)
{
    char want[16];
    snprintf(want, sizeof want, "%d", threads);
    const char *was = threads > 0 ? getenv(THREADS_VAR) : NULL;
    int set = threads > 0 && !(was && strcmp(was, want) == 0);
    char *saved = set && was ? strdup(was) : NULL;
    if (set && was && !saved)
        set = 0; /* out of memory: better OpenBLAS's default than a lost
                    setting of the user's */
    if (set && setenv(THREADS_VAR, want, 1) != 0)
        set = 0;
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(err, err_len, "%s", e ? e : file);
    }
    if (set && saved)
        setenv(THREADS_VAR, saved, 1);
    else if (set)
        unsetenv(THREADS_VAR);
    free(saved);
    return h;
}

dt_status_t dt_blas_open_files(const char *const *files, int threads,
                               dt_blas_t *out, char *why, size_t why_len)
{
    char tried[1536] = "";
    size_t used = 0;
    memset(out, 0, sizeof *out);
    for (const char *const *f = files; *f; f++) {
        char err[512];
        void *h = open_with_threads(*f, threads, err, sizeof err);
        if (h) {
            out->sgemm = (__typeof__(out->sgemm))dlsym(h, "cblas_sgemm");
            out->set_num_threads = (__typeof__(out->set_num_threads))dlsym(
                h, "openblas_set_num_threads");
            if (out->sgemm && out->set_num_threads) {
                out->threads_at_load = threads > 0 ? threads : 0;
                dt_debug("OpenBLAS loaded from %s", *f);
                return DT_OK; /* never closed: its threads serve to exit */
            }
            snprintf(err, sizeof err, "%s: has no cblas_sgemm or "
                     "openblas_set_num_threads: not OpenBLAS", *f);
            memset(out, 0, sizeof *out);
            dlclose(h);
        }
        if (used < sizeof tried) {
            int n = snprintf(tried + used, sizeof tried - used, "%s%s",
                             used ? "; " : "", err);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    snprintf(why, why_len,
             "cannot load OpenBLAS, which this dt was built to use for the "
             "CPU's matrix products (%s): install it (Debian: apt-get "
             "install libopenblas0), or add the directory holding %s to "
             "LD_LIBRARY_PATH", tried, files[0] ? files[0] : "it");
    return DT_ERR_UNSUPPORTED;
}

const dt_blas_t *dt_blas_load(int threads, char *why, size_t why_len)
{
    const dt_blas_t *b = __atomic_load_n(&blas_loaded, __ATOMIC_ACQUIRE);
    if (b)
        return b;
    pthread_mutex_lock(&blas_lock);
    if (!blas_tried) {
        blas_tried = 1;
        if (dt_blas_open_files(blas_files, threads, &blas_table, blas_why,
                               sizeof blas_why) == DT_OK)
            __atomic_store_n(&blas_loaded, &blas_table, __ATOMIC_RELEASE);
    }
    b = blas_loaded;
    if (!b && why && why_len)
        snprintf(why, why_len, "%s", blas_why);
    pthread_mutex_unlock(&blas_lock);
    return b;
}
