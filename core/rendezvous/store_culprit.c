/* store_culprit.c — the job's failure record in the store (dt/store.h):
 * the first rank to record a culprit is elected by an atomic add, then
 * writes it; readers wait briefly for an elected writer's record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/store.h>
#include "store_client.h"

#define CULPRIT_KEY "dt/culprit"
#define VOTES_KEY "dt/culprit/votes"

/* The election (an add), then the winner's record; io bounds each answer. */
static dt_status_t culprit_record(dt_store_t *s, int rank, int detector,
                                  const char *how, double io)
{
    if (!s || rank < 0 || !how || !(io > 0))
        return DT_ERR_INVALID;
    int64_t votes = 0;
    dt_status_t st = dt_store_add_bounded(s, VOTES_KEY, 1, &votes, io);
    if (st != DT_OK || votes != 1)
        return st;
    char val[64];
    int n = snprintf(val, sizeof val, "%d %d %.*s", rank, detector,
                     DT_CULPRIT_HOW_MAX - 1, how);
    return dt_store_set_bounded(s, CULPRIT_KEY, val, (size_t)n, io);
}

dt_status_t dt_store_culprit_record(dt_store_t *s, int rank, int detector,
                                    const char *how)
{
    return culprit_record(s, rank, detector, how, STORE_IO_SECONDS);
}

dt_status_t dt_store_culprit_record_bounded(dt_store_t *s, int rank,
                                            int detector, const char *how,
                                            double timeout)
{
    dt_status_t st = culprit_record(s, rank, detector, how, timeout);
    if (st == DT_ERR_TIMEOUT)
        dt_warn("rank %d: the rendezvous store did not answer within %.0f s: "
                "is dtctl stopped or its host unreachable? Rank %d's failure "
                "(%s) is not recorded; this rank reports its own view of it",
                detector, timeout, rank, how);
    return st;
}

/* Read in failure paths (a ps server that lost a worker, dtctl's last
 * line): each answer is bounded by DT_STORE_FAILURE_WAIT_S, not 60 s. */
dt_status_t dt_store_culprit_get(dt_store_t *s, double timeout, int *rank,
                                 int *detector, char *how)
{
    if (!s || !rank || !detector || !how)
        return DT_ERR_INVALID;
    int64_t votes = 0;
    dt_status_t st = dt_store_add_bounded(s, VOTES_KEY, 0, &votes,
                                       DT_STORE_FAILURE_WAIT_S);
    if (st != DT_OK)
        return st;
    if (votes <= 0)
        return DT_ERR_NOT_FOUND;
    void *val = NULL;
    size_t len = 0;
    st = dt_store_get_bounded(s, CULPRIT_KEY, timeout, DT_STORE_FAILURE_WAIT_S,
                           &val, &len);
    if (st == DT_ERR_TIMEOUT)
        return DT_ERR_NOT_FOUND;
    if (st != DT_OK)
        return st;
    char text[64], word[DT_CULPRIT_HOW_MAX];
    snprintf(text, sizeof text, "%.*s", (int)(len < 63 ? len : 63),
             (const char *)val);
    free(val);
    if (sscanf(text, "%d %d %15s", rank, detector, word) != 3 || *rank < 0)
        return DT_ERR_INVALID;
    snprintf(how, DT_CULPRIT_HOW_MAX, "%s", word);
    return DT_OK;
}
