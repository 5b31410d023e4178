/* finalize_barrier.h — dt_finalize's wait for every rank: nobody closes
 * connections a peer may still be reading from. */
#ifndef DT_FINALIZE_BARRIER_H
#define DT_FINALIZE_BARRIER_H

#include <dt/status.h>
#include <dt/store.h>

/* The key of a rank's arrival (printf format, the rank); dtctl reads
 * them too (run_culprit.c: a rank stuck after every rank arrived). */
#define DT_FINALIZED_KEY "dt/finalized/%d"

/* Each rank marks its arrival (DT_FINALIZED_KEY, bounded: a store that
 * does not answer in DT_STORE_FAILURE_WAIT_S is said and DT_OK returned,
 * the rank's collectives all completed), then waits in the store's barrier up to
 * timeout. When the barrier does not fill, the ranks that never arrived
 * are named in an error line and the first is recorded in the job's
 * failure record as hung, so that dtctl names it rather than the rank
 * that gave up waiting. DT_ERR_TIMEOUT then. */
dt_status_t dt_finalize_barrier(dt_store_t *s, int rank, int size,
                                double timeout);

#endif
