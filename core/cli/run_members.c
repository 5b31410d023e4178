/* run_members.c — elastic membership of `dtctl run` (see run_members.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <dt/clock.h>
#include <dt/log.h>
#include "run_members.h"

static const char *where_of(const dt_config_t *cfg, const char *key)
{
    const char *where = "default";
    dt_config_origin(cfg, "cluster", key, NULL, &where);
    return where;
}

dt_status_t run_members_init(const dt_config_t *cfg,
                             const dt_hostlist_t *all, int np,
                             long long max_restarts, run_members_t *mb)
{
    memset(mb, 0, sizeof *mb);
    mb->all = all;
    mb->np = np;
    mb->min_np = np;
    mb->max_np = np;
    mb->host_failures = 2;
    dt_status_t st = dt_config_get_int(cfg, "cluster", "min_np", &mb->min_np);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    mb->elastic = st == DT_OK;
    st = dt_config_get_int(cfg, "cluster", "max_np", &mb->max_np);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    int have_max = st == DT_OK;
    DT_CHECK(dt_config_get_int(cfg, "cluster", "host_failures",
                               &mb->host_failures));
    DT_CHECK(dt_config_get_duration(cfg, "cluster", "host_cooldown",
                                    &mb->cooldown));
    long long slots = (long long)dt_hostlist_slots(all);
    if (mb->elastic && (mb->min_np < 1 || mb->min_np > np)) {
        dt_error("%s: [cluster] min_np = %lld: want 1 to np (%d), the "
                 "fewest workers the job may go on with",
                 where_of(cfg, "min_np"), mb->min_np, np);
        return DT_ERR_CONFIG;
    }
    if (have_max && (mb->max_np < mb->min_np || mb->max_np > slots)) {
        dt_error("%s: [cluster] max_np = %lld: want min_np (%lld) to the "
                 "hosts' slots (%lld)", where_of(cfg, "max_np"), mb->max_np,
                 mb->min_np, slots);
        return DT_ERR_CONFIG;
    }
    if (have_max && !mb->elastic && mb->max_np != np)
        dt_warn("%s: [cluster] max_np without min_np: the job runs np = %d "
                "workers (set min_np for elastic membership)",
                where_of(cfg, "max_np"), np);
    if (mb->host_failures < 1) {
        dt_error("%s: [cluster] host_failures = %lld: want 1 or more",
                 where_of(cfg, "host_failures"), mb->host_failures);
        return DT_ERR_CONFIG;
    }
    if (!mb->elastic)
        mb->max_np = np;
    if (mb->elastic && max_restarts == 0)
        dt_info("[cluster] min_np = %lld without max_restarts: hosts that "
                "cannot be reached at the start are left out, but a failure "
                "ends the job", mb->min_np);
    mb->m = calloc(all->n ? all->n : 1, sizeof *mb->m);
    mb->cur.hosts = calloc(all->n ? all->n : 1, sizeof *mb->cur.hosts);
    mb->cur_of = calloc(all->n ? all->n : 1, sizeof *mb->cur_of);
    if (!mb->m || !mb->cur.hosts || !mb->cur_of) {
        run_members_free(mb);
        return DT_ERR_NOMEM;
    }
    return DT_OK;
}

void run_members_free(run_members_t *mb)
{
    free(mb->m);
    free(mb->cur.hosts); /* the names belong to mb->all */
    free(mb->cur_of);
    memset(mb, 0, sizeof *mb);
}

int run_members_capacity(const run_members_t *mb)
{
    return (int)(mb->max_np > mb->np ? mb->max_np : mb->np);
}

/* The launcher runs `true` there: 1 when it answered. No run_on_host op:
 * nothing to ask, the host counts as reachable. */
static int reachable(const dt_launcher_ops_t *ops, void *ctx,
                     const dt_host_t *h)
{
    if (!DT_OPS_HAS(ops, dt_launcher_ops_t, run_on_host) || !ops->run_on_host)
        return 1;
    const char *const argv[] = {"true", NULL};
    char *out = NULL;
    int code = -1;
    dt_status_t st = ops->run_on_host(ctx, h, argv, &out, &code);
    free(out);
    return st == DT_OK && code == 0;
}

/* Append to a log line under construction. */
static void add(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
}

/* "h2 (2 failures: ...), h3 (unreachable)" */
static void excluded_list(const run_members_t *mb, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < mb->all->n; i++)
        if (mb->m[i].excluded)
            add(buf, len, "%s%s (%s)", buf[0] ? ", " : "",
                mb->all->hosts[i].name, mb->m[i].why);
}

dt_status_t run_members_select(run_members_t *mb, int attempt,
                               long long max_restarts,
                               const dt_launcher_ops_t *ops, void *ctx,
                               const dt_hostlist_t **hosts, int *np)
{
    if (!mb->elastic) {
        *hosts = mb->all;
        *np = mb->np;
        return DT_OK;
    }
    char changes[2048] = "";
    long long now = dt_clock_now_ms();
    for (size_t i = 0; i < mb->all->n; i++) {
        run_member_t *m = &mb->m[i];
        const dt_host_t *h = &mb->all->hosts[i];
        if (m->excluded) {
            if (m->since_ms < 0) /* just excluded for its failures */
                continue;
            /* A way back: probed again once the cool-down has passed. */
            if ((double)(now - m->since_ms) < mb->cooldown * 1000.0)
                continue;
            if (!reachable(ops, ctx, h))
                continue;
            add(changes, sizeof changes, "%shost %s rejoins (reachable "
                "again; excluded for: %s)", changes[0] ? "; " : "",
                h->name, m->why);
            memset(m, 0, sizeof *m);
            continue;
        }
        if (reachable(ops, ctx, h))
            continue;
        m->excluded = m->unreachable = 1;
        m->since_ms = now;
        snprintf(m->why, sizeof m->why, "unreachable: the launcher could "
                 "not run a command there, see above");
        add(changes, sizeof changes, "%shost %s excluded (%s)",
            changes[0] ? "; " : "", h->name, m->why);
    }
    /* Hosts that failed too often were excluded after their attempt; say
     * so now, in the line of the attempt that runs without them. */
    for (size_t i = 0; i < mb->all->n; i++) {
        run_member_t *m = &mb->m[i];
        if (m->excluded && !m->unreachable && m->since_ms < 0) {
            m->since_ms = now;
            add(changes, sizeof changes, "%shost %s excluded (%s)",
                changes[0] ? "; " : "", mb->all->hosts[i].name, m->why);
        }
    }
    mb->cur.n = 0;
    long long slots = 0;
    for (size_t i = 0; i < mb->all->n; i++)
        if (!mb->m[i].excluded) {
            mb->cur_of[mb->cur.n] = i;
            mb->cur.hosts[mb->cur.n++] = mb->all->hosts[i];
            slots += mb->all->hosts[i].slots;
        }
    long long n = slots < mb->max_np ? slots : mb->max_np;
    char what[64];
    if (attempt > 0)
        snprintf(what, sizeof what, "restart %d of %lld", attempt,
                 max_restarts);
    else
        snprintf(what, sizeof what, "start");
    if (n < mb->min_np) {
        char ex[2048];
        excluded_list(mb, ex, sizeof ex);
        dt_error("%s: %s%sonly %lld slot%s left, fewer than min_np %lld: "
                 "not starting; excluded: %s", what, changes,
                 changes[0] ? "; " : "", slots, slots == 1 ? "" : "s",
                 mb->min_np, ex[0] ? ex : "none");
        return DT_ERR_NOT_FOUND;
    }
    if (changes[0] || (mb->last_np && n != mb->last_np))
        dt_warn("%s: %s%s%s on %lld worker%s (min_np %lld, max_np %lld)",
                what, changes, changes[0] ? "; " : "",
                attempt > 0 ? "continuing" : "starting", n,
                n == 1 ? "" : "s", mb->min_np, mb->max_np);
    mb->last_np = (int)n;
    *hosts = &mb->cur;
    *np = (int)n;
    return DT_OK;
}

/* The host of the attempt's root failure, as an index into mb->all; -1
 * when none matches (said). */
static long failed_host(const run_members_t *mb,
                        const supervise_result_t *res,
                        const dt_placement_t *place, int np)
{
    int r = res->root_rank;
    if (place && r >= 0 && r < np && place[r].host < mb->cur.n)
        return (long)mb->cur_of[place[r].host];
    for (size_t i = 0; res->root_host[0] && i < mb->all->n; i++)
        if (strcasecmp(mb->all->hosts[i].name, res->root_host) == 0)
            return (long)i;
    if (r >= 0 || res->root_host[0])
        dt_warn("elastic membership: the root failure (%s) is on host "
                "'%s', which is not in the host list: not counted against "
                "any host ([cluster] host_failures), so a failing host is "
                "never excluded; spell the hosts in -H or the hostfile as "
                "the launcher names them",
                res->cause[0] ? res->cause : "no cause recorded",
                res->root_host[0] ? res->root_host : "unknown");
    return -1;
}

void run_members_failed(run_members_t *mb, const supervise_result_t *res,
                        const dt_placement_t *place, int np)
{
    if (!mb->elastic)
        return;
    long i = failed_host(mb, res, place, np);
    if (i < 0 || mb->m[i].excluded)
        return;
    run_member_t *m = &mb->m[i];
    m->failures++;
    if (m->failures >= mb->host_failures) {
        m->excluded = 1;
        m->since_ms = -1; /* announced by the next select */
        snprintf(m->why, sizeof m->why, "%d failure%s: the last: %.300s",
                 m->failures, m->failures == 1 ? "" : "s", res->cause);
    }
}
