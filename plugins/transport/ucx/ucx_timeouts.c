/* ucx_timeouts.c — UCX's own failure detectors, derived from
 * [transport.ucx] timeout.
 *
 * UCX declares a peer dead (UCS_ERR_ENDPOINT_TIMEOUT, "Endpoint timeout")
 * by itself, on clocks of its own: TCP's kernel keepalive (UCX 1.13:
 * KEEPIDLE 10 s, KEEPINTVL 2 s, KEEPCNT the system's 9: about 28 s of
 * silence on an idle connection) and UD's peer timeout (30 s without an
 * acknowledgement, which a busy peer sends only when it progresses). A job
 * whose [transport.ucx] timeout is longer than those would lose live but
 * slow peers earlier than dt's own timeout says; one whose timeout is
 * shorter already has dt's wait report them. So each detector is set to
 * give up no sooner than the timeout. A peer that really exits is still
 * reported at once: its sockets close (TCP) and UCX's keepalive finds its
 * process gone (CMA, shared memory), neither of which waits for these
 * clocks. RC and DC retries are acknowledged by the adapter, not by the
 * peer process, so a slow peer never trips them; they are left alone.
 *
 * A UCX variable the user exported wins: nothing here overrides it. */
#include <stdio.h>
#include <stdlib.h>

#include <dt/log.h>
#include "ucx.h"

/* UCX 1.13's UD peer timeout: never made shorter. */
#define UD_DEFAULT_TIMEOUT_S 30.0
/* Kernel keepalive probes before TCP gives a connection up. */
#define TCP_KEEPALIVE_PROBES 5

/* Set UCX_<name> unless the user exported it or one of the alternative
 * spellings UCX also reads (UD_VERBS_TIMEOUT, UD_MLX5_TIMEOUT for
 * UD_TIMEOUT). */
static dt_status_t set_derived(ucx_ctx_t *c, ucp_config_t *uc,
                               const char *name, const char *value,
                               const char *const *also)
{
    char env[64];
    snprintf(env, sizeof env, "UCX_%s", name);
    if (getenv(env))
        return DT_OK;
    for (size_t i = 0; also && also[i]; i++) {
        snprintf(env, sizeof env, "UCX_%s", also[i]);
        if (getenv(env))
            return DT_OK;
    }
    ucs_status_t s = ucp_config_modify(uc, name, value);
    if (s != UCS_OK) {
        dt_error("ucx: rank %d: UCX rejected %s = '%s' (derived from "
                 "[transport.ucx] timeout = %g s): %s; export UCX_%s to "
                 "choose the value yourself",
                 c->rank, name, value, c->timeout, ucs_status_string(s),
                 name);
        return DT_ERR_CONFIG;
    }
    dt_debug("ucx: rank %d: UCX_%s=%s (from [transport.ucx] timeout)",
             c->rank, name, value);
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
    DT_CHECK(set_derived(c, uc, "KEEPALIVE_INTERVAL", v, NULL));

    /* TCP: idle for half the timeout, then probes spread over the other
     * half: the kernel drops the connection after at least the timeout. */
    snprintf(v, sizeof v, "%ds", ceil_s(t / 2));
    DT_CHECK(set_derived(c, uc, "TCP_KEEPIDLE", v, NULL));
    snprintf(v, sizeof v, "%ds", ceil_s(t / 2 / TCP_KEEPALIVE_PROBES));
    DT_CHECK(set_derived(c, uc, "TCP_KEEPINTVL", v, NULL));
    snprintf(v, sizeof v, "%d", TCP_KEEPALIVE_PROBES);
    DT_CHECK(set_derived(c, uc, "TCP_KEEPCNT", v, NULL));

    /* UD (InfiniBand): a peer that sends no acknowledgement for this long
     * is declared dead. */
    static const char *const ud_also[] = {"UD_VERBS_TIMEOUT",
                                          "UD_MLX5_TIMEOUT", NULL};
    snprintf(v, sizeof v, "%ds",
             ceil_s(t > UD_DEFAULT_TIMEOUT_S ? t : UD_DEFAULT_TIMEOUT_S));
    DT_CHECK(set_derived(c, uc, "UD_TIMEOUT", v, ud_also));
    return DT_OK;
}
