/* ucx_wireup.c — every rank publishes its UCP worker address in the job's
 * rendezvous store and creates one endpoint to every other rank from the
 * addresses it reads back. Only clients that proved the job token to the
 * store can read or write those keys; ucx_auth.c then checks over each new
 * endpoint that the rank behind it holds the token too.
 *
 * Endpoints of a job across hosts use UCP_ERR_HANDLING_MODE_PEER: a peer
 * that dies (connection reset, or UCX's keepalive finding it gone) fails
 * the transport at once, naming the rank, instead of leaving a wait to run
 * into the timeout. UCX 1.13 then leaves out its shared-memory transports
 * (they cannot tell), which costs 2.5-4x on one host, so a job on one host
 * uses mode NONE ([transport.ucx] peer_errors = auto): its launcher sees a
 * worker's exit itself, and the timeout covers the rest. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/store.h>
#include "ucx.h"

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t s)
{
    ucx_peer_t *pe = arg;
    ucx_ctx_t *c = pe->ctx;
    (void)ep;
    pe->failed = 1;
    if (c->closing)
        return; /* peers leave at fini: not an error any more */
    char why[256];
    snprintf(why, sizeof why,
             "the connection to rank %d failed (%s): rank %d exited, "
             "crashed or became unreachable",
             pe->rank, ucs_status_string(s), pe->rank);
    ucx_fail(c, pe->rank, DT_ERR_PEER, why);
}

static dt_status_t publish_address(ucx_ctx_t *c, dt_store_t *store,
                                   long long epoch)
{
    ucp_address_t *addr = NULL;
    size_t len = 0;
    ucs_status_t s = ucp_worker_get_address(c->worker, &addr, &len);
    if (s != UCS_OK) {
        dt_error("ucx: rank %d: cannot get the UCX worker address: %s",
                 c->rank, ucs_status_string(s));
        return DT_ERR_IO;
    }
    char key[64];
    snprintf(key, sizeof key, "ucx/%lld/addr/%d", epoch, c->rank);
    dt_status_t st = dt_store_set(store, key, addr, len);
    ucp_worker_release_address(c->worker, addr);
    if (st == DT_OK)
        dt_debug("ucx: rank %d published its worker address (%zu bytes)",
                 c->rank, len);
    return st;
}

static dt_status_t connect_peer(ucx_ctx_t *c, dt_store_t *store,
                                long long epoch, int p, double deadline)
{
    char key[64];
    void *val = NULL;
    size_t len = 0;
    snprintf(key, sizeof key, "ucx/%lld/addr/%d", epoch, p);
    dt_status_t st = dt_store_get(store, key, deadline - dt_clock_now(), &val,
                                  &len);
    if (st != DT_OK) {
        dt_error("ucx: rank %d: rank %d never published its UCX address in "
                 "the store (%s); did it start, and does it use the ucx "
                 "transport too?",
                 c->rank, p, dt_status_str(st));
        return st == DT_ERR_TIMEOUT ? DT_ERR_PEER : st;
    }
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = val,
        .err_mode = c->peer_errors ? UCP_ERR_HANDLING_MODE_PEER
                                   : UCP_ERR_HANDLING_MODE_NONE,
        .err_handler = {.cb = ep_error, .arg = &c->peers[p]},
    };
    ucs_status_t s = ucp_ep_create(c->worker, &ep, &c->peers[p].ep);
    free(val);
    if (s != UCS_OK) {
        c->peers[p].ep = NULL;
        dt_error("ucx: rank %d: cannot create a UCX endpoint to rank %d: %s; "
                 "the hosts may share no transport (check [transport.ucx] "
                 "tls and devices on both)",
                 c->rank, p, ucs_status_string(s));
        return DT_ERR_PEER;
    }
    return DT_OK;
}

dt_status_t ucx_wireup(ucx_ctx_t *c, const dt_transport_args_t *a)
{
    if (!a->store) {
        dt_error("ucx: rank %d: no rendezvous store to exchange addresses "
                 "(DT_RENDEZVOUS unset?); start the job with dtctl run",
                 c->rank);
        return DT_ERR_INVALID;
    }
    double deadline = dt_clock_now() + c->timeout;
    char key[64];
    int64_t n = 0;
    /* Count this rank's inits so a second dt_init never reads the first
     * one's addresses: every rank inits the same number of times. */
    snprintf(key, sizeof key, "ucx/inits/%d", c->rank);
    DT_CHECK(dt_store_add(a->store, key, 1, &n));
    DT_CHECK(publish_address(c, a->store, (long long)n));
    /* Start with the next rank so that not every rank asks for rank 0's
     * address first. */
    for (int i = 1; i < c->size; i++)
        DT_CHECK(connect_peer(c, a->store, (long long)n,
                              (c->rank + i) % c->size, deadline));
    return ucx_authenticate(c, a->token, a->token_len, deadline);
}

void ucx_close_endpoints(ucx_ctx_t *c)
{
    void **pending = calloc((size_t)c->size, sizeof *pending);
    c->closing = 1;
    for (int p = 0; c->peers && p < c->size; p++) {
        if (!c->peers[p].ep)
            continue;
        ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                   .flags = UCP_EP_CLOSE_FLAG_FORCE};
        ucs_status_ptr_t r = ucp_ep_close_nbx(c->peers[p].ep, &prm);
        c->peers[p].ep = NULL;
        if (UCS_PTR_IS_PTR(r)) {
            if (pending)
                pending[p] = r;
            else
                ucp_request_free(r);
        }
    }
    /* A forced close finishes locally; bound it anyway. */
    double deadline = dt_clock_now() + 5.0;
    for (int p = 0; pending && p < c->size; p++) {
        while (pending[p] &&
               ucp_request_check_status(pending[p]) == UCS_INPROGRESS &&
               dt_clock_now() < deadline)
            ucp_worker_progress(c->worker);
        if (pending[p])
            ucp_request_free(pending[p]);
    }
    free(pending);
    /* Closing fails the sends still queued on those endpoints, from
     * progress: let UCX finish them, so that it frees its requests before
     * the worker goes away. */
    while (ucx_ucp_busy(c) && dt_clock_now() < deadline)
        if (ucp_worker_progress(c->worker) == 0)
            poll(NULL, 0, 1);
}
