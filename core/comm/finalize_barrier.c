/* finalize_barrier.c — dt_finalize's wait for every rank (see
 * finalize_barrier.h). */
#include <stdio.h>
#include <stdlib.h>

#include <dt/log.h>
#include <dt/store.h>
#include "rendezvous/store_client.h"
#include "finalize_barrier.h"

/* Ranks named in the error line; the first is recorded. */
#define MISSING_NAMED 8

/* The ranks whose key is unset (they never reached dt_finalize), the
 * first MISSING_NAMED into missing; how many in all, or -1 when the
 * store does not answer. A failure path only: a bounded probe first,
 * then one pipelined look at every key. */
static int find_missing(dt_store_t *s, int size, int *missing)
{
    int64_t ignored = 0;
    if (dt_store_add_bounded(s, "dt/finalized/probe", 0, &ignored,
                             DT_STORE_FAILURE_WAIT_S) != DT_OK)
        return -1;
    char (*names)[32] = malloc((size_t)size * sizeof *names);
    const char **keys = malloc((size_t)size * sizeof *keys);
    void **values = calloc((size_t)size, sizeof *values);
    size_t *lens = calloc((size_t)size, sizeof *lens);
    int n = -1;
    if (names && keys && values && lens) {
        for (int r = 0; r < size; r++) {
            snprintf(names[r], sizeof names[r], DT_FINALIZED_KEY, r);
            keys[r] = names[r];
        }
        if (dt_store_lookup(s, keys, (size_t)size, values, lens) == DT_OK) {
            n = 0;
            for (int r = 0; r < size; r++)
                if (!values[r] && n++ < MISSING_NAMED)
                    missing[n - 1] = r;
        }
    }
    for (int r = 0; values && r < size; r++)
        free(values[r]);
    free(names);
    free(keys);
    free(values);
    free(lens);
    return n;
}

/* "1, 4 and 7" (and "and 3 more" past those named). */
static void rank_list(const int *missing, int n, char *buf, size_t len)
{
    size_t at = 0;
    int shown = n < MISSING_NAMED ? n : MISSING_NAMED;
    buf[0] = '\0';
    for (int i = 0; i < shown && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d",
                               i == 0 ? ""
                               : i == shown - 1 && n == shown ? " and "
                                                              : ", ",
                               missing[i]);
    if (n > shown && at < len)
        snprintf(buf + at, len - at, " and %d more", n - shown);
}

dt_status_t dt_finalize_barrier(dt_store_t *s, int rank, int size,
                                double timeout)
{
    char key[32];
    snprintf(key, sizeof key, DT_FINALIZED_KEY, rank);
    /* Asked first, bounded: a store that does not answer (dtctl stopped,
     * this host cut off from dtctl's) cannot give the barrier. */
    dt_status_t st = dt_store_set_bounded(s, key, "1", 1,
                                          DT_STORE_FAILURE_WAIT_S);
    if (st == DT_ERR_TIMEOUT) {
        /* Every collective of this rank completed: its part of the job is
         * done, and a stopped dtctl is no failure of it (a finished job
         * was reported failed, and restarted, after dtctl's SIGSTOP). */
        dt_warn("rank %d: dt_finalize: the rendezvous store did not answer "
                "within %.0f s (dtctl stopped, or its host cut off?): "
                "leaving without waiting for the other ranks to finish "
                "(this rank's part of the job is done)",
                rank, DT_STORE_FAILURE_WAIT_S);
        return DT_OK;
    }
    if (st != DT_OK)
        return st;
    st = store_barrier_bounded(s, "dt_finalize", size, timeout,
                               DT_STORE_FAILURE_WAIT_S);
    if (st != DT_ERR_TIMEOUT)
        return st;
    /* A rank stuck after its last collective (stopped, hung in its
     * teardown or on a file system) is no transport's to find: named
     * here, it is what dtctl reports, not this rank that gave up. */
    int missing[MISSING_NAMED];
    int n = find_missing(s, size, missing);
    if (n <= 0)
        return st;
    char list[160];
    rank_list(missing, n, list, sizeof list);
    dt_error("rank %d: dt_finalize: rank%s %s did not reach dt_finalize "
             "within %g s ([cluster] timeout): stuck after the last "
             "collective (stopped, hung in its own code or on a file "
             "system), or ended without calling dt_finalize",
             rank, n == 1 ? "" : "s", list, timeout);
    dt_store_culprit_record_bounded(s, missing[0], rank, "hung",
                                    DT_STORE_FAILURE_WAIT_S);
    return st;
}
