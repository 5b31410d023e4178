/* dt/auth.h — authenticate a transport's peer connection with the job token.
 *
 * Call it on a freshly connected stream socket (TCP, Unix), before any data
 * of your own: the connecting side calls dt_auth_connect naming the rank it
 * meant to reach, the accepting side dt_auth_accept, which learns who
 * connected. Both prove they hold the job token without sending it:
 *
 *   connector -> acceptor  hello: magic, protocol label, connector rank,
 *                          job size, channel, nonce_c (32 random bytes)
 *   acceptor -> connector  nonce_a (32 random bytes)
 *   connector -> acceptor  HMAC-SHA256(token, "connector" label ids
 *                          nonce_c nonce_a)
 *   acceptor -> connector  HMAC-SHA256(token, "acceptor" label ids
 *                          nonce_c nonce_a), then the byte 1 (accepted);
 *                          a refused connector sees the socket close
 *
 * ids are both ranks, the job size and the channel, so a proof made for one
 * pair, direction, socket or protocol is worthless for any other, and fresh
 * nonces make a replayed handshake fail. Proofs are compared in constant
 * time. Every wait is bounded by the timeout. A failure is logged once,
 * naming this rank, the peer rank (or, before the acceptor knows it, the
 * peer's address) and what went wrong; the token is never logged.
 *
 * The socket may be blocking or non-blocking; the helpers do not change
 * its mode and never close it: on an error the caller closes it.
 *
 *   dt_auth_t au = {"myproto", a->token, a->token_len, a->rank, a->size,
 *                   a->timeout};
 *   connector:  st = dt_auth_connect(fd, &au, peer, 0);
 *   acceptor:   st = dt_auth_accept(fd, &au, a->rank + 1, a->size, 1,
 *                                   &peer, NULL);
 */
#ifndef DT_AUTH_H
#define DT_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_AUTH_PROTO_MAX 16 /* bytes of the protocol label that count */

typedef struct dt_auth {
    /* Names your wire protocol ("tcp", "skel"): both ends must give the
     * same, so one transport's listener never accepts another's socket.
     * At most DT_AUTH_PROTO_MAX bytes. */
    const char *proto;
    const uint8_t *token;   /* the job token (dt_transport_args_t.token)   */
    size_t token_len;
    int rank;               /* this process's rank                         */
    int size;               /* ranks in the job: both ends must agree      */
    double timeout;         /* seconds for the whole handshake (> 0)       */
} dt_auth_t;

/* The connecting side: prove the token to `peer` and check its proof.
 * `channel` tells the acceptor which of several sockets to the same peer
 * this is (0 when there is one).
 * DT_OK: authenticated. DT_ERR_AUTH: the peer refused us (different token,
 * rank or channel out of its range), closed during the handshake (it may
 * also have timed out, had this channel already, or exited: its own log
 * says) or could not prove the token.
 * DT_ERR_PEER: the connection broke off. DT_ERR_TIMEOUT: it stalled. */
dt_status_t dt_auth_connect(int fd, const dt_auth_t *a, int peer,
                            uint32_t channel);

/* The connecting side, one step at a time, for a loop that runs several
 * handshakes at once (to many peers): the hello goes out at once.
 *
 *   dt_auth_connector_new(fd, &au, peer, channel, &x);
 *   on POLLIN of fd, or at dt_auth_connector_deadline(x):
 *     st = dt_auth_connector_step(x);
 *     DT_DECLINED: not done, poll again; else as dt_auth_connect (a
 *     failure is logged). Then dt_auth_connector_free(x).
 *
 * fd is best non-blocking; new fails as dt_auth_connect, with nothing to
 * free. */
typedef struct dt_auth_connector dt_auth_connector_t;
dt_status_t dt_auth_connector_new(int fd, const dt_auth_t *a, int peer,
                                  uint32_t channel, dt_auth_connector_t **out);
dt_status_t dt_auth_connector_step(dt_auth_connector_t *x);
int dt_auth_connector_fd(const dt_auth_connector_t *x);
/* When the handshake times out (dt_clock_now() seconds). */
double dt_auth_connector_deadline(const dt_auth_connector_t *x);
void dt_auth_connector_free(dt_auth_connector_t *x);

/* The accepting side: accept only a connector of rank in [peer_lo,
 * peer_hi) of the same job size with channel < nchannels, that proves the
 * token; then prove it back. *peer and (when not NULL) *channel say who it
 * is. Returns as dt_auth_connect; anything but DT_OK means: close the
 * socket and keep accepting (a stray or hostile client has been logged). */
dt_status_t dt_auth_accept(int fd, const dt_auth_t *a, int peer_lo,
                           int peer_hi, uint32_t nchannels, int *peer,
                           uint32_t *channel);

/* The accepting side, one step at a time, for a loop that polls a
 * listener and several handshakes together, so that a client that
 * connects and stays silent holds up nobody but itself. fd must be
 * non-blocking; the handshake must end within a->timeout.
 *
 *   dt_auth_acceptor_new(fd, &au, lo, hi, nch, &x);
 *   on POLLIN of fd, or at dt_auth_acceptor_deadline(x):
 *     st = dt_auth_acceptor_step(x, &peer, &channel);
 *     DT_DECLINED: not done, poll again; DT_OK: authenticated;
 *     else as dt_auth_accept: close fd. Then dt_auth_acceptor_free(x).
 *
 * A connection that failed before it said which rank it is (it sent
 * nothing, closed, or sent no hello of this protocol) is not logged:
 * dt_auth_acceptor_stray says why, for the caller to log strangers
 * without flooding. Every later failure is logged as by dt_auth_accept. */
typedef struct dt_auth_acceptor dt_auth_acceptor_t;
dt_status_t dt_auth_acceptor_new(int fd, const dt_auth_t *a, int peer_lo,
                                 int peer_hi, uint32_t nchannels,
                                 dt_auth_acceptor_t **out);
dt_status_t dt_auth_acceptor_step(dt_auth_acceptor_t *x, int *peer,
                                  uint32_t *channel);
/* Why a failed step was a stranger's connection; NULL otherwise. */
const char *dt_auth_acceptor_stray(const dt_auth_acceptor_t *x);
/* "host:port" of the connecting side. */
const char *dt_auth_acceptor_from(const dt_auth_acceptor_t *x);
/* The rank the connection's hello named (a hello of this job's protocol,
 * size and ranks), while the proof is awaited or after it; -1 before a
 * hello. Not proven until a step returned DT_OK: for the caller that
 * drops a handshake midway to say whose it was. */
int dt_auth_acceptor_claimed_rank(const dt_auth_acceptor_t *x);
/* When the handshake times out (dt_clock_now() seconds). */
double dt_auth_acceptor_deadline(const dt_auth_acceptor_t *x);
void dt_auth_acceptor_free(dt_auth_acceptor_t *x);

#ifdef __cplusplus
}
#endif
#endif /* DT_AUTH_H */
