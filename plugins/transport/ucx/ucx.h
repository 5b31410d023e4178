/* ucx.h — the ucx transport's internal state (not installed).
 *
 * One UCP context and worker per rank, one endpoint per peer. Worker
 * addresses travel through the job's rendezvous store; every pair then
 * proves the job token over its new endpoints (ucx_auth.c). Messages are
 * UCP tagged sends whose 64-bit tag is (source rank << 32 | user tag), so a
 * receive names exactly one peer and tag and matches in order. UCX picks
 * the protocol: eager copies for small messages, zero-copy rendezvous
 * (CMA, shared memory, RDMA) for large ones. Waiting sleeps on the
 * worker's event fd (ucp_worker_arm + poll); nothing spins. */
#ifndef DT_UCX_H
#define DT_UCX_H

#include <stddef.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include <dt/plugin.h>
#include <dt/wait.h>
#include <dt/clock.h>

/* Tag layout: bit 63 marks the plugin's own handshake messages. */
#define UCX_TAG_INTERNAL (1ull << 63)
#define UCX_TAG_MASK_ALL (~0ull)

typedef struct ucx_ctx ucx_ctx_t;

typedef struct ucx_peer {
    ucx_ctx_t *ctx;
    int rank;
    ucp_ep_h ep;
    int failed;       /* the endpoint reported an error */
} ucx_peer_t;

/* A live request; freed by test/wait (or orphaned, see ucx_progress.c). */
struct dt_request {
    ucx_ctx_t *ctx;
    void *ucp_req;    /* UCP's request, NULL once released or immediate  */
    int is_recv, peer, tag;
    size_t len;
    int complete;
    int orphan;       /* the caller let go before UCP finished            */
    dt_status_t st;
    struct dt_request *prev, *next; /* every live request (freed at fini) */
};

struct ucx_ctx {
    int rank, size;
    double timeout;          /* seconds */
    int want_cuda;           /* [transport.ucx] memory: 0 host, 1 auto, 2 cuda */
    int peer_errors;         /* [transport.ucx] peer_errors: 1 report      */
    dt_wait_spin_t spin;     /* [transport.ucx] spin: poll before sleeping */
    int cuda;                /* UCX moves CUDA memory (DT_CAP_CUDA_MEM)   */
    ucp_context_h context;
    ucp_worker_h worker;
    int efd;                 /* the worker's event fd for sleeping       */
    ucx_peer_t *peers;       /* size entries; peers[rank].ep stays NULL  */
    struct dt_request *all;  /* live requests */
    dt_status_t failed;      /* sticky: after a peer failure nothing works */
    int failed_rank;
    unsigned long completions; /* requests UCP finished: the activity a
                                  wait's idle timeout watches */
    int closing;             /* fini has begun: peer errors are expected */
    int no_shm;              /* [transport.ucx] shm = off, or a tls list
                                without shared memory: DT_CAP_NO_SHM     */
    char tls[256], devices[256], rndv_thresh[64];
};

/* ucx_setup.c: configuration, context and worker. */
dt_status_t ucx_read_config(ucx_ctx_t *c, const dt_config_t *cfg,
                            const dt_transport_args_t *a);
dt_status_t ucx_open(ucx_ctx_t *c);
void ucx_close(ucx_ctx_t *c);

/* ucx_timeouts.c: UCX's keepalive and peer timeouts from c->timeout,
 * unless the user exported the UCX variable. */
dt_status_t ucx_apply_timeouts(ucx_ctx_t *c, ucp_config_t *uc);

/* ucx_wireup.c: worker addresses through the store, endpoints. */
dt_status_t ucx_wireup(ucx_ctx_t *c, const dt_transport_args_t *a);
void ucx_close_endpoints(ucx_ctx_t *c);

/* ucx_auth.c: every pair proves the job token over its endpoints. */
dt_status_t ucx_authenticate(ucx_ctx_t *c, const uint8_t *token,
                             size_t token_len, double deadline);

/* ucx_progress.c: the ops, and the tagged primitives the handshake uses. */
dt_status_t ucx_post(ucx_ctx_t *c, int is_recv, int peer, void *buf,
                     size_t len, dt_mem_t mem, uint64_t tag, int user_tag,
                     dt_request_t **req);
dt_status_t ucx_isend(void *ctx, int peer, const void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req);
dt_status_t ucx_irecv(void *ctx, int peer, void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req);
dt_status_t ucx_test(void *ctx, dt_request_t *req, int *done);
dt_status_t ucx_wait(void *ctx, dt_request_t **reqs, size_t n,
                     int timeout_ms);
/* Wait with an absolute deadline (monotonic seconds); no failure report on
 * timeout (the handshake words its own). */
dt_status_t ucx_wait_until(ucx_ctx_t *c, dt_request_t **reqs, size_t n,
                           double deadline);
void ucx_fail(ucx_ctx_t *c, int peer, dt_status_t st, const char *why);
void ucx_free_requests(ucx_ctx_t *c);
/* Whether UCP still owns a request of c (its callback is still due). */
int ucx_ucp_busy(const ucx_ctx_t *c);

#endif /* DT_UCX_H */
