/* ucx_plugin.c — the ucx transport plugin: its keys, init, caps and fini.
 * Settings and the UCP context are in ucx_setup.c, endpoints in
 * ucx_wireup.c, the token handshake in ucx_auth.c, the data path in
 * ucx_progress.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/plugin.h>
#include "ucx.h"

static const dt_key_spec_t ucx_keys[] = {
    {"tls", DT_KEY_STRING, "",
     "UCX transports, passed as UCX_TLS (e.g. 'tcp', 'shm,cma,self', "
     "'rc,ud,sm'); empty: UCX_TLS from the environment, else all"},
    {"devices", DT_KEY_STRING, "",
     "network devices, passed as UCX_NET_DEVICES (e.g. 'mlx5_0:1', "
     "'eth0'); empty: the interface [cluster] interface selects when it is "
     "set, loopback for a rank bound to loopback, else every device"},
    {"rndv_thresh", DT_KEY_STRING, "auto",
     "message size from which UCX uses its zero-copy rendezvous protocol, "
     "passed as UCX_RNDV_THRESH (e.g. '64K', 'auto')"},
    {"memory", DT_KEY_STRING, "auto",
     "buffers UCX moves directly: auto (CUDA memory too when this UCX "
     "supports it, else the core stages through host), host, or cuda "
     "(an error unless UCX supports it)"},
    {"spin", DT_KEY_STRING, "auto",
     "a wait first polls this long (a duration: 30us), yielding the CPU "
     "between polls, before it sleeps on the worker's event fd; auto: "
     "100us when this rank has CPUs of its own ([cluster] bind), 30us when "
     "this host's ranks outnumber its CPUs, else 0"},
    {"peer_errors", DT_KEY_STRING, "auto",
     "report: UCX reports a peer that dies at once (UCP_ERR_HANDLING_MODE_"
     "PEER; UCX then avoids its shared-memory transports, which cannot "
     "tell); ignore: UCX may use them (2.5-4x faster on one host here), a "
     "dead peer is noticed by dtctl or after the timeout; auto: ignore for "
     "a job on one host, report across hosts"},
    {"shm", DT_KEY_STRING, "auto",
     "auto: the core's collectives may bypass UCX through shared memory "
     "for the ranks of one host ([collectives] shm; 2-7x faster than over "
     "UCX here); off: every byte goes over UCX (so does a tls list "
     "without shared memory)"},
    {"timeout", DT_KEY_DURATION, "60s",
     "a peer silent this long while a transfer waits on it is an error "
     "(a crashed peer is reported sooner); also bounds connection setup; "
     "default: [cluster] timeout"},
    {NULL, 0, NULL, NULL}};

static void ucx_fini(void *ctx)
{
    ucx_ctx_t *c = ctx;
    if (!c)
        return;
    /* Give up pending receives first: their callbacks free them now. */
    for (struct dt_request *q = c->all, *next; q && c->worker; q = next) {
        next = q->next;
        if (q->ucp_req && q->is_recv) {
            q->orphan = 1;
            ucp_request_cancel(c->worker, q->ucp_req);
        }
    }
    if (c->worker)
        ucx_close_endpoints(c);
    ucx_close(c);
    ucx_free_requests(c);
    free(c->peers);
    free(c);
}

static dt_status_t ucx_init(const dt_config_t *cfg,
                            const dt_transport_args_t *a, void **out)
{
    if (a->size < 1 || a->rank < 0 || a->rank >= a->size || !a->token ||
        a->token_len == 0) {
        dt_error("ucx: init needs a rank in 0..size-1 and the job token");
        return DT_ERR_INVALID;
    }
    ucx_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return DT_ERR_NOMEM;
    c->rank = a->rank;
    c->size = a->size;
    c->efd = -1;
    dt_status_t st = ucx_read_config(c, cfg, a);
    if (st != DT_OK)
        goto out;
    c->peers = calloc((size_t)a->size, sizeof *c->peers);
    if (!c->peers) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    for (int p = 0; p < a->size; p++)
        c->peers[p] = (ucx_peer_t){.ctx = c, .rank = p};
    if ((st = ucx_open(c)) != DT_OK)
        goto out;
    if (a->size > 1)
        st = ucx_wireup(c, a);
out:
    if (st != DT_OK) {
        ucx_fini(c);
        return st;
    }
    *out = c;
    return DT_OK;
}

static uint32_t ucx_caps(void *ctx)
{
    const ucx_ctx_t *c = ctx;
    if (!c)
        return 0;
    return (c->cuda ? DT_CAP_CUDA_MEM : 0) | (c->no_shm ? DT_CAP_NO_SHM : 0);
}

static const dt_transport_ops_t ucx_ops = {
    .size = sizeof(dt_transport_ops_t),
    .init = ucx_init,
    .caps = ucx_caps,
    .isend = ucx_isend,
    .irecv = ucx_irecv,
    .test = ucx_test,
    .wait = ucx_wait,
    .fini = ucx_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    DT_PLUGIN_ABI,
    DT_KIND_TRANSPORT,
    "ucx",
    "1.0",
    "UCX tagged messages (shared memory, CMA, TCP, InfiniBand/RoCE; "
    "zero-copy rendezvous)",
    ucx_keys,
    NULL,
    &ucx_ops,
};
