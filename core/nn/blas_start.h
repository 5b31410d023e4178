/* blas_start.h — OpenBLAS for a cpu device: loaded (blas_load.h), with as
 * many of the device's threads as an address-space limit has room for
 * (blas_room.h), so that none of them hangs mapping its buffer. */
#ifndef DT_NN_BLAS_START_H
#define DT_NN_BLAS_START_H

#include "config.h"

#ifdef HAVE_OPENBLAS_CBLAS
#include <dt/status.h>

/* Load OpenBLAS and have it run threads threads (>= 1), or, under an
 * address-space limit (ulimit -v, SGE's h_vmem) without room for all
 * their buffers, as many as fit, with a warning naming both numbers;
 * *started: how many. Under a limit the calling thread's buffer is
 * mapped here, while the room for it is known, instead of at its first
 * matrix product. Errors are logged: DT_ERR_CONFIG when not even that
 * buffer fits (the limit, what OpenBLAS needs and by how much to raise
 * it), DT_ERR_UNSUPPORTED when OpenBLAS cannot be loaded. Thread-safe;
 * the environment rule of dt_blas_load applies. */
dt_status_t dt_blas_start(int threads, int *started);
#endif

#endif /* DT_NN_BLAS_START_H */
