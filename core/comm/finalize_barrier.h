/* finalize_barrier.h — dt_finalize's wait for every rank: nobody closes
 * connections a peer may still be reading from. */
#ifndef DT_FINALIZE_BARRIER_H
#define DT_FINALIZE_BARRIER_H

#include <dt/status.h>
#include <dt/store.h>

/* Each rank marks its arrival ("dt/finalized/RANK", bounded: a store
 * that does not answer in DT_STORE_FAILURE_WAIT_S is said and
 * DT_ERR_TIMEOUT returned), then waits in the store's barrier up to
 * timeout. When the barrier does not fill, the ranks that never arrived
 * are named in an error line and the first is recorded in the job's
 * failure record as hung, so that dtctl names it rather than the rank
 * that gave up waiting. DT_ERR_TIMEOUT then. */
dt_status_t dt_finalize_barrier(dt_store_t *s, int rank, int size,
                                double timeout);

#endif
