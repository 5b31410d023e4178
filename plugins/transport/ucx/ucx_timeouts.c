/* ucx_timeouts.c — UCX's own failure detectors, derived from
 * [transport.ucx] timeout.
 *
 * UCX declares a peer dead (UCS_ERR_ENDPOINT_TIMEOUT, "Endpoint timeout")
 * by itself, on clocks of its own. The one that loses live ranks on one
 * host is TCP's kernel keepalive (UCX 1.13: KEEPIDLE 10 s, KEEPINTVL 2 s,
 * KEEPCNT the system's 9): seen under load, a connection between ranks
 * that both waited ~30 s ended in ETIMEDOUT, although dt's timeout was
 * 60 s. So the keepalive is set to give up no sooner than the timeout. A
 * peer that really exits is still reported at once: its sockets close
 * (TCP) and UCX's keepalive round finds its process gone (CMA, shared
 * memory), neither of which waits for these clocks.
 *
 * A UCX variable the user exported wins: nothing here overrides it. */
#include <stdio.h>
#include <stdlib.h>

#include <dt/log.h>
#include "ucx.h"

/* Kernel keepalive probes before TCP gives a connection up. */
#define TCP_KEEPALIVE_PROBES 5

/* Set the UCX setting key (as ucp_config_modify names it: a transport's
 * keys without the transport's prefix, UCX 1.13 matches them inside each
 * transport's table) unless the user exported the variable env. */
static dt_status_t set_derived(ucx_ctx_t *c, ucp_config_t *uc,
                               const char *env, const char *key,
                               const char *value)
{
    if (getenv(env))
        return DT_OK;
    ucs_status_t s = ucp_config_modify(uc, key, value);
    if (s != UCS_OK) {
        dt_error("ucx: rank %d: UCX rejected %s = '%s' (derived from "
                 "[transport.ucx] timeout = %g s): %s; export %s to choose "
                 "the value yourself",
                 c->rank, env, value, c->timeout, ucs_status_string(s), env);
        return DT_ERR_CONFIG;
    }
    dt_debug("ucx: rank %d: %s=%s (from [transport.ucx] timeout)", c->rank,
             env, value);
    return DT_OK;
}

/* Whole seconds, rounded up, at least 1: the kernel counts in seconds. */
static int ceil_s(double s)
{
    if (s <= 1)
        return 1;
    if (s >= 86400)
        return 86400;
    int r = (int)s;
    return r < s ? r + 1 : r;
}

dt_status_t ucx_apply_timeouts(ucx_ctx_t *c, ucp_config_t *uc)
{
    double t = c->timeout;
    char v[32];
    /* UCX's keepalive round checks every endpoint: for CMA and shared
     * memory whether the peer's process still exists, for TCP that the
     * connection still takes data. It never waits on the peer, so checking
     * often costs nothing and finds a dead peer well within the timeout. */
    double ka = t / 4 < 20 ? t / 4 : 20;
    snprintf(v, sizeof v, "%dms", ka < 0.5 ? 500 : (int)(ka * 1000));
    DT_CHECK(set_derived(c, uc, "UCX_KEEPALIVE_INTERVAL", "KEEPALIVE_INTERVAL",
                         v));

    /* TCP: idle for half the timeout, then probes spread over the other
     * half: the kernel drops the connection after at least the timeout.
     * (UCX rounds these down to whole seconds: add one.) */
    snprintf(v, sizeof v, "%ds", ceil_s(t / 2) + 1);
    DT_CHECK(set_derived(c, uc, "UCX_TCP_KEEPIDLE", "KEEPIDLE", v));
    snprintf(v, sizeof v, "%ds", ceil_s(t / 2 / TCP_KEEPALIVE_PROBES) + 1);
    DT_CHECK(set_derived(c, uc, "UCX_TCP_KEEPINTVL", "KEEPINTVL", v));
    snprintf(v, sizeof v, "%d", TCP_KEEPALIVE_PROBES);
    DT_CHECK(set_derived(c, uc, "UCX_TCP_KEEPCNT", "KEEPCNT", v));
    return DT_OK;
}
