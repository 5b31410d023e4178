/* tcp.h — the tcp transport's internal state (not installed).
 *
 * Every pair of ranks shares `sockets_per_peer` connections, set up through
 * the rendezvous store and authenticated with the job token (dt/auth.h).
 * A message is a 16-byte header and its payload, written with one writev
 * straight from the user's buffer and read straight into the receiver's;
 * messages of stripe_min bytes or more are cut into one part per socket.
 * Progress happens inside isend/irecv/test/wait; wait sleeps in poll(). */
#ifndef DT_TCP_H
#define DT_TCP_H

#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/uio.h>

#include <dt/plugin.h>
#include <dt/wait.h>
#include <dt/clock.h>

#define TCP_MAX_SOCKETS 16
/* Wireup: handshakes authenticated at once (more: the oldest is dropped),
 * each within this long (a real connector sends its hello right after
 * connecting; the slack is for a loaded host), none dropped for room
 * before it ran TCP_EVICT_GRACE_S, the first few strangers logged one by
 * one. */
#define TCP_PENDING_MAX 32
#define TCP_HANDSHAKE_S 10.0
#define TCP_EVICT_GRACE_S 1.0
#define TCP_STRAYS_LOGGED 3
/* Wireup looks up this many lower ranks' addresses per store round trip. */
#define TCP_LOOKUP_AHEAD 64
/* ... and runs at most this many handshakes with lower ranks at once. */
#define TCP_CONNECT_AHEAD 16
/* Descriptors beyond the open ones and the mesh's sockets: the listener,
 * a store reconnect, the resolver's files. */
#define TCP_FD_SPARE 8
/* A wait record's store write gives up after this long (tcp_cause.c). */
#define TCP_WAIT_NOTE_IO_S 1.0
/* buffer_size = auto on one host: SO_SNDBUF/SO_RCVBUF of 2 MiB (the kernel
 * doubles it). Autotuning starts the receive window at 128K and grows it
 * only with traffic, so a 512 KiB ring chunk waited on it: 1 MiB
 * allreduce at N = 2 took 0.31-0.74 ms instead of 0.24
 * (docs/PERFORMANCE.md#tcp-buffer_size). */
#define TCP_ONE_HOST_BUFFER (2u << 20)
/* send_max = auto on one host whose ranks each have a CPU: a burst of at
 * most TCP_SEND_MAX_BURST queued bytes goes out in writes of at most 256
 * KiB. The socket stays locked while the kernel copies a write in, and
 * over loopback also delivers it to the peer's socket in the sender's
 * context; the peer's data arriving on the same socket meanwhile waits in
 * its backlog. Written one 512K ring chunk per call, the 2 MiB allreduce
 * at N = 2 took 1.3-1.55x longer (medians of interleaved rounds,
 * docs/PERFORMANCE.md#tcp-send_max), 1 MiB 0.9x as long. A long queue
 * (a large message's ring steps, both ways busy anyway) is written whole:
 * cut too, 64 MiB took 1.2x longer. With ranks outnumbering CPUs they take turns
 * anyway and shorter writes only add calls: 64 MiB at N = 4 on 2 cores was
 * 10% slower, so no limit there. */
#define TCP_ONE_HOST_SEND_MAX (256u << 10)
#define TCP_SEND_MAX_BURST ((size_t)4 << 20)
#define TCP_SEND_MAX_MIN 4096
#define TCP_MSG_MAGIC 0x44544d31u /* "DTM1" */
/* Read-ahead buffer per socket, used while the next expected part is at
 * most TCP_STAGE_SMALL bytes (larger ones go straight to the user). */
#define TCP_STAGE_BYTES (16 * 1024)
#define TCP_STAGE_SMALL (8 * 1024)

/* On the wire, little-endian host order (all ranks run the same build). */
typedef struct tcp_hdr {
    uint32_t magic;
    int32_t tag;
    uint64_t len; /* bytes of this part */
} tcp_hdr_t;

typedef struct tcp_req tcp_req_t;
typedef struct tcp_sock tcp_sock_t;
typedef struct tcp_peer tcp_peer_t;

/* A part of a message waiting in a socket's send queue. */
typedef struct tcp_tx {
    tcp_req_t *req;
    tcp_hdr_t hdr;
    const char *data;
    size_t len, done; /* done counts header bytes too */
    struct tcp_tx *next;
} tcp_tx_t;

/* A part that arrived before its receive was posted (copied once). */
typedef struct tcp_unexp {
    int32_t tag;
    size_t len, got;
    char *data;
    tcp_req_t *claimed; /* receive that will take it when complete */
    int claimed_part;
    struct tcp_unexp *next;
} tcp_unexp_t;

enum { RX_HDR, RX_BODY, RX_WAIT_POST };

struct tcp_sock {
    int fd, index;
    int eof;              /* the peer closed this socket at a boundary */
    tcp_peer_t *peer;
    /* receiving */
    int rx_state;
    tcp_hdr_t rx_hdr;
    size_t rx_hdr_got;
    char *rx_dst;         /* where the payload goes                    */
    size_t rx_left;
    tcp_req_t *rx_req;    /* owner of rx_dst, or NULL for rx_unexp    */
    tcp_unexp_t *rx_unexp;
    tcp_unexp_t *unexp, **unexp_tail;
    /* Read-ahead for small messages: header and payload (and the next
     * header) in one recv. Bytes [stage_off, stage_len) are unread. */
    char *stage;
    size_t stage_off, stage_len;
    /* sending */
    tcp_tx_t *tx_head, **tx_tail;
};

struct tcp_peer {
    int rank;
    char addr[160];       /* "host:port" for messages */
    tcp_sock_t socks[TCP_MAX_SOCKETS];
    tcp_req_t *posted;    /* receives from this peer, in posting order */
};

struct tcp_req {
    int is_recv, peer, tag;
    char *buf;
    size_t len;
    int nparts, parts_done;
    uint32_t matched;     /* receive: parts whose header has arrived  */
    dt_status_t st;
    int complete;
    tcp_req_t *next_posted;
    tcp_req_t *prev_all, *next_all; /* every live request (freed at fini) */
};

typedef struct tcp_ctx {
    int rank, size;
    int nsock;            /* sockets per peer */
    size_t stripe_min;
    double timeout;       /* seconds */
    dt_wait_spin_t spin;  /* [transport.tcp] spin: poll before sleeping */
    size_t bufsize;       /* SO_SNDBUF/SO_RCVBUF, 0: kernel autotuning */
    size_t send_max;      /* bytes per sendmsg(), 0: no limit */
    int listen_port;
    tcp_peer_t *peers;    /* size entries; peers[rank] unused */
    tcp_req_t *all;       /* live requests */
    dt_store_t *store;    /* the job's store (valid until fini); NULL once
                             it failed: then no failure report waits on it */
    long long epoch;      /* this init's number: the store keys' prefix   */
    dt_status_t failed;   /* sticky: after a peer failure nothing works */
    int failed_rank;
    double last_activity; /* monotonic seconds of the last byte moved */
    /* Whom this rank waits on, in the store while a wait is blocked
     * longer than wait_note_after (tcp_cause.c): a waiting rank is not
     * silent, so a timeout can follow the chain of waits to the rank
     * that went silent first. */
    double wait_note_after;
    int wait_noted;       /* a record "waiting on P" is in the store */
    int wait_notes_off;   /* a record failed: write no more (tcp_cause.c) */
    int store_answered;   /* the failure path's bounded probe of the store
                             was answered: the rest of it may use it */
    long long wait_seq;   /* refreshes so far: a live waiter's record moves */
    struct pollfd *pfds;
    tcp_sock_t **pfd_sock;
} tcp_ctx_t;

/* tcp_wireup.c */
dt_status_t tcp_wireup(tcp_ctx_t *c, const dt_transport_args_t *a);
void tcp_close_all(tcp_ctx_t *c);

/* tcp_cause.c: the root cause of a failure, agreed through the store.
 * Returns 1 with the failed rank, the rank that detected it and how
 * (TCP_HOW_MAX bytes: "exited", "hung", "error" or TCP_HOW_MISMATCH) when
 * the store holds (or this call records, for suspect >= 0: first writer
 * wins) the job's root cause; 0 when unknown (no store, or it failed).
 * Bounded: waits at most a couple of seconds, never on a store that is
 * gone; one that does not answer a first bounded write (a stopped dtctl,
 * a host cut off from dtctl's) is not used for this failure, and one
 * that stops right after it answered costs each later request at most
 * DT_STORE_FAILURE_WAIT_S (the first write or add it leaves unanswered
 * ends its use; the data path's wait records never wait on it for more
 * than TCP_WAIT_NOTE_IO_S). A mismatch (the ranks called
 * different collectives or counts: suspect is the peer whose message
 * showed it) names no failed rank to dtctl: the job's failure record
 * (dt/store.h) is left to others. */
#define TCP_HOW_MAX 16
#define TCP_HOW_MISMATCH "mismatch"
int tcp_cause_resolve(tcp_ctx_t *c, int suspect, const char *how,
                      int *failed, int *detector, char *found_how);
/* A blocked wait says whom it waits on (and refreshes it); a wait that
 * ends without a failure clears it. Each write waits at most
 * TCP_WAIT_NOTE_IO_S on the store; after a failure (logged once) no more
 * are written. */
void tcp_wait_note(tcp_ctx_t *c, int peer);
void tcp_wait_clear(tcp_ctx_t *c);
/* The rank that went silent first, from `peer` (the rank this one timed
 * out on): follow the recorded waits (peer waits on q, q on r, ...) to the
 * rank that waits on nobody; a cycle (a stale record of a rank stopped
 * while it waited) ends at the member whose record stopped moving. The
 * chain as text ("2 -> 1 -> 0") goes into chain. Bounded: a few store
 * calls and at most about 2 * wait_note_after of waiting. */
int tcp_silent_root(tcp_ctx_t *c, int peer, char *chain, size_t len);

/* tcp_io.c: milliseconds left until a deadline (0: past it). */
int tcp_ms_until(double deadline);

/* tcp_progress.c: the ops. */
dt_status_t tcp_isend(void *ctx, int peer, const void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req);
dt_status_t tcp_irecv(void *ctx, int peer, void *buf, size_t len,
                      dt_mem_t mem, int tag, dt_request_t **req);
dt_status_t tcp_test(void *ctx, dt_request_t *req, int *done);
dt_status_t tcp_wait(void *ctx, dt_request_t **reqs, size_t n,
                     int timeout_ms);
void tcp_free_requests(tcp_ctx_t *c);

#endif /* DT_TCP_H */
