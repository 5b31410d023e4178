/* ps_common.h — what the parameter servers (ps_server.c) and their
 * clients, the workers (ps_client.c), share: the control blocks and tags
 * of the protocol (ps.h), the transport calls, the liveness settings and
 * the job's failure record, and the test hooks. Internal to libdt. */
#ifndef DT_TRAIN_PS_COMMON_H
#define DT_TRAIN_PS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <dt/config.h>
#include <dt/store.h>
#include "coll/coll.h"
#include "ps.h"

enum { PS_TAG_CTL = 0x50530001, PS_TAG_DATA, PS_TAG_REPLY, PS_TAG_HELD };
enum { PS_INIT = 1, PS_JOIN, PS_PUSH, PS_PULL, PS_SAVE, PS_DONE, PS_HELD };
#define PS_WORDS 8 /* u64 words of a control block */

typedef uint64_t ctl_t[PS_WORDS];

/* A double's bits in a control word, and back. */
uint64_t ps_fbits(double d);
double ps_bitsf(uint64_t u);

/* The transport's point-to-point calls on host memory. */
dt_status_t ps_isend(dt_comm_t *c, int peer, const void *buf, size_t len,
                     int tag, dt_request_t **req);
dt_status_t ps_irecv(dt_comm_t *c, int peer, void *buf, size_t len,
                     int tag, dt_request_t **req);
dt_status_t ps_wait_all(dt_comm_t *c, dt_request_t **r, size_t n);

/* ======================================================================
 * Liveness. A held answer is not silence: a server sends a worker whose
 * request it holds (max_staleness, DONE, a JOIN before INIT) a "held"
 * notice every period, and a worker waits for it as long as they come.
 * A worker working alone (rank 0 evaluating or writing a checkpoint, any
 * worker before its first request) beats a counter in the job's store
 * meanwhile. A worker or server silent for [cluster] timeout otherwise is
 * hung: the rank that finds it says so, records it in the store (dtctl
 * names it) and fails.
 * ====================================================================== */

typedef struct ps_live {
    double timeout; /* [cluster] timeout: silence this long is a hang   */
    double period;  /* notices and checks: a quarter of it, 10 ms..1 s  */
} ps_live_t;

/* From [cluster] timeout (the job's config, or the environment dtctl gave
 * every rank, as dt_init reads it). */
ps_live_t ps_live_from(const dt_config_t *cfg);
ps_live_t ps_live_from_env(void);
/* A connection of the calling thread's own to the job's store; NULL when
 * there is none to reach. */
dt_store_t *ps_store_open(double timeout);
/* The same, said at debug level only when the store cannot be reached:
 * for tries after a first failure that was said (ps_link.c). */
dt_store_t *ps_store_reopen(double timeout);
/* Record rank as hung in the job's failure record (opening *s if need). */
void ps_record_hung(dt_store_t **s, double timeout, int rank);
/* How long a failure path gives the store to connect: the timeout, at
 * most DT_STORE_FAILURE_WAIT_S (a stopped dtctl accepts and then says
 * nothing: the handshake would wait the whole timeout). */
double ps_failure_wait(double timeout);
/* A heartbeat's request (a worker's beat, a server's look at one): the
 * store gets wait seconds to answer, not the client's 60 s I/O limit.
 * DT_ERR_TIMEOUT when it did not: the beat is skipped and the next period
 * tries again. One warning per stretch of silence (*silent is set then,
 * cleared by the next answer): a stopped dtctl must not fill the log. */
dt_status_t ps_beat_add(dt_store_t *s, const char *key, int64_t delta,
                        double wait, int *silent, int64_t *result);
/* "worker 1 (rank 1)", "parameter server 0 (rank 3)" of W workers. */
const char *ps_role(int W, int rank, char *buf, size_t len);

/* Test hooks (tests/train_async.sh): DT_TEST_PS_SIGNAL_RANK=r makes rank
 * r, after its DT_TEST_PS_SIGNAL_AFTER-th push (default 20; a server: the
 * push it applied), raise DT_TEST_PS_SIGNAL: STOP (the default) or KILL,
 * or with EXIT leave with code 3: a hung, killed or failed worker or
 * server on cue. */
typedef struct ps_hook {
    long after; /* 0: off */
    int sig;    /* 0: exit */
} ps_hook_t;

ps_hook_t ps_hook_from_env(void);
void ps_hook_fire(const ps_hook_t *h, uint64_t pushes);

#endif /* DT_TRAIN_PS_COMMON_H */
