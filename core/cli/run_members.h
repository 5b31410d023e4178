/* run_members.h — elastic membership of `dtctl run` ([cluster] min_np,
 * max_np, host_failures, host_cooldown; --min-np, --max-np).
 *
 * With min_np set, every attempt of the job (the first one and each
 * restart, run_restart.h) starts with a probe of the hosts through the
 * launcher's run_on_host op (`true` on the host): a host that cannot be
 * reached is left out of this attempt. A host whose workers were the root
 * failure of host_failures attempts is left out too. The attempt then runs
 * on the remaining hosts' slots, filled in order: N = min(max_np, slots
 * left) workers, at least min_np, else the job stops naming the excluded
 * hosts. An excluded host is probed again at each later attempt once
 * host_cooldown has passed since it was excluded; when it answers it
 * rejoins (its failure count starts again at 0), up to max_np workers.
 *
 * Without min_np nothing changes: every attempt runs np workers on the
 * configured hosts, as before. */
#ifndef DT_CLI_RUN_MEMBERS_H
#define DT_CLI_RUN_MEMBERS_H

#include <dt/config.h>
#include <dt/hosts.h>
#include <dt/plugin.h>
#include "supervise.h"

typedef struct run_member {
    int failures;          /* attempts whose root failure was here         */
    int excluded;          /* left out of the coming attempts              */
    int unreachable;       /* excluded because a probe failed              */
    long long since_ms;    /* when it was excluded (dt_clock_now_ms)       */
    char why[400];         /* "2 failures: rank 2 on h2 ...", "unreachable" */
} run_member_t;

typedef struct run_members {
    int elastic;             /* [cluster] min_np is set                    */
    long long min_np, max_np, host_failures;
    double cooldown;         /* seconds                                    */
    const dt_hostlist_t *all; /* the configured hosts (not owned)          */
    int np;                  /* the configured np                          */
    run_member_t *m;         /* all->n entries                             */
    int last_np;             /* workers of the previous attempt (0: none)  */
    dt_hostlist_t cur;       /* this attempt's hosts: names borrowed from
                                all (free with run_members_free only)      */
    size_t *cur_of;          /* cur.hosts[k] is all->hosts[cur_of[k]]      */
} run_members_t;

/* Read the keys (np: the job's configured workers, the default max_np).
 * Errors name the key's origin. */
dt_status_t run_members_init(const dt_config_t *cfg,
                             const dt_hostlist_t *all, int np,
                             long long max_restarts, run_members_t *mb);
void run_members_free(run_members_t *mb);

/* The largest number of workers any attempt may get (the output buffers'
 * size). */
int run_members_capacity(const run_members_t *mb);

/* Before an attempt (attempt: 0 the first, then the restart's number;
 * max_restarts for the log line): probe the hosts through the launcher
 * (ops/ctx initialised for this attempt), decide who takes part, log every
 * change of membership in one line, and give the attempt's hosts and
 * number of workers. DT_ERR_NOT_FOUND: fewer than min_np slots are left
 * (logged, naming the excluded hosts). Not elastic: *hosts = all, *np =
 * the configured np. */
dt_status_t run_members_select(run_members_t *mb, int attempt,
                               long long max_restarts,
                               const dt_launcher_ops_t *ops, void *ctx,
                               const dt_hostlist_t **hosts, int *np);

/* After a failed attempt: count its root failure against its host (res:
 * the supervisor's result; place, np: the attempt's placement on the
 * hosts run_members_select gave); the host is excluded once it reached
 * host_failures. The host is the root rank's in the placement: the name
 * a launcher reports may be the node's own (mpirun's "on node H"), not
 * the host list's spelling; only without a rank is it found by name.
 * Warns when neither names a host of the list. */
void run_members_failed(run_members_t *mb, const supervise_result_t *res,
                        const dt_placement_t *place, int np);

#endif /* DT_CLI_RUN_MEMBERS_H */
