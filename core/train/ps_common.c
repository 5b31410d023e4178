/* ps_common.c — the parts of the parameter-server protocol both sides
 * use (ps_common.h). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/dt.h>
#include <dt/log.h>
#include "coll/transport_call.h"
#include "ps_common.h"
#include "rendezvous/store_client.h"

extern char **environ;

void dt_ps_shard(size_t n, int nservers, int s, size_t *lo, size_t *hi)
{
    *lo = (size_t)((unsigned __int128)n * (unsigned)s / (unsigned)nservers);
    *hi = (size_t)((unsigned __int128)n * (unsigned)(s + 1) /
                   (unsigned)nservers);
}

uint64_t ps_fbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

double ps_bitsf(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

dt_status_t ps_isend(dt_comm_t *c, int peer, const void *buf, size_t len,
                     int tag, dt_request_t **req)
{
    return dt_transport_isend(c, peer, buf, len, DT_MEM_HOST, tag, req);
}

dt_status_t ps_irecv(dt_comm_t *c, int peer, void *buf, size_t len,
                     int tag, dt_request_t **req)
{
    return dt_transport_irecv(c, peer, buf, len, DT_MEM_HOST, tag, req);
}

dt_status_t ps_wait_all(dt_comm_t *c, dt_request_t **r, size_t n)
{
    return n ? dt_transport_wait(c, r, n, -1) : DT_OK;
}



ps_live_t ps_live_from(const dt_config_t *cfg)
{
    double t = 60.0;
    if (dt_config_get_duration(cfg, "cluster", "timeout", &t) != DT_OK ||
        !(t > 0))
        t = 60.0;
    double p = t / 4;
    return (ps_live_t){t, p < 0.01 ? 0.01 : p > 1.0 ? 1.0 : p};
}

/* A client is made without the job's config: read it the way dt_init
 * does, from the environment dtctl gave every rank. */
ps_live_t ps_live_from_env(void)
{
    dt_config_t *cfg = NULL;
    ps_live_t l = {60.0, 1.0};
    if (dt_config_new(&cfg) == DT_OK &&
        dt_config_load_env(cfg, environ) == DT_OK)
        l = ps_live_from(cfg);
    dt_config_free(cfg);
    return l;
}

/* A connection of this thread's own to the job's store (dt_init's is not
 * shared); NULL when there is none to reach, said at level. */
static dt_store_t *store_open_at(double timeout, dt_log_level_t level)
{
    const char *rdv = getenv("DT_RENDEZVOUS");
    const char *hex = getenv("DT_JOB_TOKEN");
    uint8_t token[DT_TOKEN_BYTES];
    dt_store_t *s = NULL;
    if (!rdv || !*rdv || !hex || dt_token_from_hex(hex, token) != DT_OK)
        return NULL;
    if (store_connect_logged(rdv, token, timeout, level, &s) != DT_OK)
        s = NULL;
    explicit_bzero(token, sizeof token);
    return s;
}

dt_store_t *ps_store_open(double timeout)
{
    return store_open_at(timeout, DT_LOG_ERROR);
}

dt_store_t *ps_store_reopen(double timeout)
{
    return store_open_at(timeout, DT_LOG_DEBUG);
}

double ps_failure_wait(double timeout)
{
    return timeout < DT_STORE_FAILURE_WAIT_S ? timeout
                                             : DT_STORE_FAILURE_WAIT_S;
}

/* The job's failure record (dt/store.h): rank hung, as this rank found;
 * the first record wins, so every rank and dtctl name the same one. A
 * failure path: the store gets DT_STORE_FAILURE_WAIT_S to connect and to
 * answer each request, not the timeout and 60 s. */
void ps_record_hung(dt_store_t **s, double timeout, int rank)
{
    if (!*s)
        *s = ps_store_open(ps_failure_wait(timeout));
    if (*s)
        dt_store_culprit_record_bounded(*s, rank, dt_rank(), "hung",
                                        DT_STORE_FAILURE_WAIT_S);
}

dt_status_t ps_beat_add(dt_store_t *s, const char *key, int64_t delta,
                        double wait, int *silent, int64_t *result)
{
    dt_status_t st = dt_store_add_bounded(s, key, delta, result, wait);
    if (st == DT_OK && *silent)
        dt_info("rank %d: the rendezvous store answers heartbeats again",
                dt_rank());
    else if (st != DT_OK && !*silent)
        dt_warn("rank %d: the rendezvous store did not take heartbeat '%s' "
                "within %.1f s (%s; dtctl stopped, or its host cut off?): "
                "skipped, the next period tries again (said once)",
                dt_rank(), key, wait, dt_status_str(st));
    *silent = st != DT_OK;
    return st;
}

/* "worker 1 (rank 1)", "parameter server 0 (rank 3)". */
const char *ps_role(int W, int rank, char *buf, size_t len)
{
    if (rank < W)
        snprintf(buf, len, "worker %d (rank %d)", rank, rank);
    else
        snprintf(buf, len, "parameter server %d (rank %d)", rank - W, rank);
    return buf;
}


ps_hook_t ps_hook_from_env(void)
{
    const char *r = getenv("DT_TEST_PS_SIGNAL_RANK");
    const char *a = getenv("DT_TEST_PS_SIGNAL_AFTER");
    const char *s = getenv("DT_TEST_PS_SIGNAL");
    ps_hook_t h = {0, SIGSTOP};
    if (!r || !*r || atoi(r) != dt_rank())
        return h;
    h.after = a && *a ? atol(a) : 20;
    if (s && strcmp(s, "KILL") == 0)
        h.sig = SIGKILL;
    else if (s && strcmp(s, "EXIT") == 0)
        h.sig = 0;
    return h;
}

void ps_hook_fire(const ps_hook_t *h, uint64_t pushes)
{
    if (h->after <= 0 || pushes != (uint64_t)h->after)
        return;
    dt_warn("rank %d (pid %ld): test hook DT_TEST_PS_SIGNAL_RANK: %s after "
            "%ld pushes", dt_rank(), (long)getpid(),
            h->sig == SIGKILL ? "SIGKILL" : h->sig ? "SIGSTOP" : "exit 3",
            h->after);
    if (!h->sig)
        _exit(3);
    raise(h->sig);
}
