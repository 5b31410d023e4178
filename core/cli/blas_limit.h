/* blas_limit.h — dtctl and dt-train under a finite address-space limit
 * (ulimit -v, SGE's h_vmem): OpenBLAS threads that would spin for ever
 * (blas_limit.c says why) are not started. */
#ifndef DT_CLI_BLAS_LIMIT_H
#define DT_CLI_BLAS_LIMIT_H

/* Call first thing in main, with main's argv. Under a finite RLIMIT_AS,
 * and when OPENBLAS_NUM_THREADS is not set, runs the program again with
 * OPENBLAS_NUM_THREADS=1 (returns when that fails, or when
 * /proc/self/exe is not the program called name but a loader running it);
 * in the program run again, takes the variable out of the environment so
 * that the processes it starts do not inherit it. */
void dt_blas_limit_reexec(char **argv, const char *name);

#endif /* DT_CLI_BLAS_LIMIT_H */
