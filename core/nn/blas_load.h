/* blas_load.h — OpenBLAS, loaded on first use instead of linked into
 * libdt. Its constructor starts a thread per CPU unless told otherwise,
 * and each thread maps a buffer: linked, that ran before main in every
 * program (dtctl, dt-train, tests, users' programs), and under an
 * address-space limit (ulimit -v, SGE's h_vmem) a thread whose buffer did
 * not fit spun for ever (the process hung at fork and exit), or, with many
 * CPUs, the constructor stopped the program (exit 130) before main.
 * Loaded here, it starts only the threads the cpu device asks for, and a
 * program that multiplies no matrices never loads it. */
#ifndef DT_NN_BLAS_LOAD_H
#define DT_NN_BLAS_LOAD_H

#include "config.h"

#ifdef HAVE_OPENBLAS_CBLAS
#include <stddef.h>
#include <cblas.h>
#include <dt/status.h>

/* The two entry points dt calls, typed as cblas.h declares them. */
typedef struct dt_blas {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(openblas_set_num_threads) *set_num_threads;
    int threads_at_load; /* its constructor's threads; 0: its default */
} dt_blas_t;

/* OpenBLAS, loaded and resolved once per process (thread-safe); later
 * calls return the same table. threads > 0: its constructor starts that
 * many threads (OPENBLAS_NUM_THREADS is set for the dlopen and restored
 * after, so call it while no other thread reads or writes the
 * environment); 0: the environment is left as it is (OpenBLAS's own
 * default: OPENBLAS_NUM_THREADS, else one thread per CPU). NULL when it
 * cannot be loaded, with the reason and what to install in why; nothing
 * is logged. */
const dt_blas_t *dt_blas_load(int threads, char *why, size_t why_len);

/* The first of files (NULL-terminated) that loads and has both symbols,
 * into out; the work of dt_blas_load, without its once-only state (tests
 * give it files that do not exist). */
dt_status_t dt_blas_open_files(const char *const *files, int threads,
                               dt_blas_t *out, char *why, size_t why_len);
#endif

#endif /* DT_NN_BLAS_LOAD_H */
