/* run_culprit.c — read the workers' failure record from the job's store
 * (see run_culprit.h). */
#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include "run_culprit.h"

/* How long an elected writer may take to write its record. */
#define RECORD_WAIT_S 0.5

int run_culprit_lookup(void *arg, supervise_culprit_t *out)
{
    run_culprit_t *rc = arg;
    if (!rc || !rc->rendezvous || !*rc->rendezvous)
        return 0;
    if (!rc->conn &&
        dt_store_connect(rc->rendezvous, rc->token, 2.0, &rc->conn) != DT_OK) {
        dt_debug("cannot read the workers' failure record from the store");
        rc->conn = NULL;
        return 0;
    }
    int rank = -1, detector = -1;
    char how[DT_CULPRIT_HOW_MAX];
    if (dt_store_culprit_get(rc->conn, RECORD_WAIT_S, &rank, &detector, how) !=
            DT_OK ||
        rank >= rc->np)
        return 0;
    out->rank = rank;
    out->detector = detector;
    snprintf(out->how, sizeof out->how, "%s", how);
    snprintf(out->host, sizeof out->host, "%s",
             rc->hosts->hosts[rc->placement[rank].host].name);
    return 1;
}

void run_culprit_close(run_culprit_t *rc)
{
    if (rc && rc->conn) {
        dt_store_close(rc->conn);
        rc->conn = NULL;
    }
}
