/* run_culprit.h — dtctl's look at the job's failure record (dt/store.h:
 * the rank the workers agreed failed first, and how), read from the job's
 * own store as a client, for supervise's final line and exit status. */
#ifndef DT_CLI_RUN_CULPRIT_H
#define DT_CLI_RUN_CULPRIT_H

#include <dt/hosts.h>
#include <dt/store.h>
#include "supervise.h"

typedef struct run_culprit {
    const char *rendezvous;   /* "host:port" of the job's store */
    const uint8_t *token;
    const dt_hostlist_t *hosts;
    const dt_placement_t *placement;
    int np;
    dt_store_t *conn;         /* opened on first use */
} run_culprit_t;

/* supervise_args_t's culprit callback (arg: a run_culprit_t). */
int run_culprit_lookup(void *arg, supervise_culprit_t *out);
/* supervise_args_t's finalized callback (arg: a run_culprit_t): 1 when
 * every rank has marked its arrival in dt_finalize. */
int run_finalized_all(void *arg);
void run_culprit_close(run_culprit_t *rc);

#endif /* DT_CLI_RUN_CULPRIT_H */
