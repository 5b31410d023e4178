/* run_culprit.c — read the workers' failure record from the job's store
 * (see run_culprit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/hosts.h>
#include <dt/log.h>
#include "comm/finalize_barrier.h"
#include "run_culprit.h"

/* How long an elected writer may take to write its record. */
#define RECORD_WAIT_S 0.5

/* dtctl's placement says "localhost" where a scheduler (slurm, sge,
 * yarn) ignores its host list and puts ranks on its nodes: the host the
 * rank recorded itself ("dt/host/RANK", dt_init) names it then, unless
 * that is this machine. */
static void elsewhere(run_culprit_t *rc, int rank, char *host, size_t len)
{
    if (!dt_host_is_local(host))
        return;
    char key[32];
    void *v = NULL;
    size_t n = 0;
    snprintf(key, sizeof key, "dt/host/%d", rank);
    if (dt_store_get(rc->conn, key, 0, &v, &n) == DT_OK && n > 0 &&
        n < len && !dt_host_is_local(v))
        snprintf(host, len, "%s", (char *)v);
    free(v);
}

/* The job's store, connected on first use; NULL when it cannot be. */
static dt_store_t *conn_of(run_culprit_t *rc)
{
    if (!rc || !rc->rendezvous || !*rc->rendezvous)
        return NULL;
    if (!rc->conn &&
        dt_store_connect(rc->rendezvous, rc->token, 2.0, &rc->conn) != DT_OK) {
        dt_debug("cannot read the workers' records from the store");
        rc->conn = NULL;
    }
    return rc->conn;
}

int run_culprit_lookup(void *arg, supervise_culprit_t *out)
{
    run_culprit_t *rc = arg;
    if (!conn_of(rc))
        return 0;
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
    elsewhere(rc, rank, out->host, sizeof out->host);
    return 1;
}

/* Every rank marks its arrival in dt_finalize (finalize_barrier.c). */
int run_finalized_all(void *arg)
{
    run_culprit_t *rc = arg;
    if (!conn_of(rc) || rc->np <= 0)
        return 0;
    char (*names)[32] = malloc((size_t)rc->np * sizeof *names);
    const char **keys = malloc((size_t)rc->np * sizeof *keys);
    void **values = calloc((size_t)rc->np, sizeof *values);
    size_t *lens = calloc((size_t)rc->np, sizeof *lens);
    int all = 0;
    if (names && keys && values && lens) {
        for (int r = 0; r < rc->np; r++) {
            snprintf(names[r], sizeof names[r], DT_FINALIZED_KEY, r);
            keys[r] = names[r];
        }
        if (dt_store_lookup(rc->conn, keys, (size_t)rc->np, values, lens) ==
            DT_OK) {
            all = 1;
            for (int r = 0; r < rc->np; r++)
                all &= values[r] != NULL;
        }
    }
    for (int r = 0; values && r < rc->np; r++)
        free(values[r]);
    free(names);
    free(keys);
    free(values);
    free(lens);
    return all;
}

void run_culprit_close(run_culprit_t *rc)
{
    if (rc && rc->conn) {
        dt_store_close(rc->conn);
        rc->conn = NULL;
    }
}
