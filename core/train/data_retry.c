/* data_retry.c — what a worker says when its data set is missing or
 * could not be read (storage not mounted yet, an I/O error): a failure
 * that may pass, so whether a restart comes for it, from what dtctl
 * gave the worker (DT_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS:
 * run_restart.c). Said once a host (local rank 0) at start: every rank
 * of a host reads the same storage, and the error above each says which
 * path; while training, by the rank that met it. */
#include <stdlib.h>

#include <dt/log.h>
#include "train.h"

#define MAY_PASS "the data set is missing or could not be read (above): a " \
                 "failure that may pass (storage not mounted yet, an I/O "  \
                 "error)"

static void say_may_pass(void)
{
    const char *used_s = getenv("DT_RESTART_COUNT");
    const char *max_s = getenv("TORCHELASTIC_MAX_RESTARTS");
    if (!used_s || !*used_s || !max_s || !*max_s) { /* not under dtctl */
        dt_error(MAY_PASS ": run the job again once the data is there "
                 "(dtctl run --max-restarts N restarts a job for such a "
                 "failure)");
        return;
    }
    long used = strtol(used_s, NULL, 10), max = strtol(max_s, NULL, 10);
    if (used < max)
        dt_error(MAY_PASS ", so dtctl run --max-restarts ([cluster] "
                 "max_restarts) restarts the job for it (%ld of %ld "
                 "restarts left); data in a wrong format or layout is not "
                 "restarted", max - used, max);
    else if (max > 0)
        dt_error(MAY_PASS ", but the job's %ld restarts ([cluster] "
                 "max_restarts) are used up: run it again once the data is "
                 "there", max);
    else
        dt_error(MAY_PASS ": run the job again once the data is there, or "
                 "with dtctl run --max-restarts N ([cluster] max_restarts) "
                 "to have it restarted for such a failure");
}

void dt_trainer_say_data_may_pass(const dt_trainer_t *t)
{
    if (t->local_rank == 0)
        say_may_pass();
}

/* While training, one rank meets the image alone (decode = loader: a
 * file gone since the folder was listed): that rank says it. */
dt_status_t dt_trainer_batch_data_status(dt_status_t st)
{
    if (st == DT_ERR_NOT_FOUND || st == DT_ERR_IO)
        say_may_pass();
    return st;
}
