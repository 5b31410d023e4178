/* dt/store.h — the job's rendezvous key-value store and the job token.
 *
 * dtctl runs the server (a thread) for the job; workers reach it through
 * DT_RENDEZVOUS=host:port. Every connection proves it belongs to the job by
 * a challenge-response over the 32-byte job token (HMAC-SHA256); the token
 * reaches workers only through the environment (DT_JOB_TOKEN, hex), never
 * argv, never a log line. Like the store behind torch's env:// init. */
#ifndef DT_STORE_H
#define DT_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_TOKEN_BYTES 32

/* dt's wire protocol: what dtctl and every worker of a job must agree on
 * (the store's requests and keys, the transports' frames and handshakes,
 * the collectives' tags, and which collectives dt-train runs in a step or
 * at an epoch's end). Bump it with any change to them. A worker's
 * first contact with the store says its protocol; the store refuses one
 * of another (or of a dt from before this number, which says none), and
 * dtctl stops the job: hosts with different dt installs never start to
 * train together (docs/RENDEZVOUS.md). */
#define DT_PROTOCOL_VERSION 2

/* 32 random bytes from the system CSPRNG (libcrypto). */
dt_status_t dt_token_generate(uint8_t token[DT_TOKEN_BYTES]);
/* Hex text (2*DT_TOKEN_BYTES chars + NUL) for the environment. */
void dt_token_to_hex(const uint8_t token[DT_TOKEN_BYTES],
                     char hex[2 * DT_TOKEN_BYTES + 1]);
/* Parse DT_JOB_TOKEN-style hex; DT_ERR_INVALID if malformed. */
dt_status_t dt_token_from_hex(const char *hex, uint8_t token[DT_TOKEN_BYTES]);

/* ---- client (workers, transports) ------------------------------------ */
typedef struct dt_store dt_store_t;

/* Connect to "host:port" and authenticate; retries until timeout seconds
 * (the server may still be starting). */
dt_status_t dt_store_connect(const char *host_port,
                             const uint8_t token[DT_TOKEN_BYTES],
                             double timeout, dt_store_t **out);
dt_status_t dt_store_set(dt_store_t *s, const char *key, const void *value,
                         size_t len);
/* As dt_store_set, but waits at most timeout seconds for the store's
 * answer (a data path that must not stall on a stopped store): then
 * DT_ERR_TIMEOUT, logged at debug level only. The handle stays usable:
 * the late answer is skipped by the next request. */
dt_status_t dt_store_set_bounded(dt_store_t *s, const char *key,
                                 const void *value, size_t len,
                                 double timeout);
/* Wait up to timeout seconds for key to be set; *value is malloc'd. A
 * timeout of 0 or less (a deadline passed) looks once: DT_ERR_TIMEOUT if
 * unset. */
dt_status_t dt_store_get(dt_store_t *s, const char *key, double timeout,
                         void **value, size_t *len);
/* As dt_store_get, for a failure path: waits at most io seconds beyond
 * the wait (and, for a wait, the server's 5 s of slack to answer it) for
 * the store's answer, not the client's 60 s (io above 60 counts as 60;
 * io 0 or less: DT_ERR_INVALID). A look (timeout 0 or less) is answered
 * at once by a live store: it waits io seconds at most. DT_ERR_TIMEOUT
 * also when the store did not answer: the handle stays usable, as for
 * dt_store_set_bounded. */
dt_status_t dt_store_get_bounded(dt_store_t *s, const char *key,
                                 double timeout, double io, void **value,
                                 size_t *len);
/* Look n keys up without waiting for any, in about one round trip per 64
 * keys (the requests are pipelined): values[i] is malloc'd (NUL-terminated
 * for text; free it) with lens[i] its length, or NULL where the key is
 * unset. DT_OK unless the store could not answer (then every values[i] is
 * NULL). For many keys that are mostly set already, e.g. the addresses of
 * ranks that started earlier; wait for the rest with dt_store_get. */
dt_status_t dt_store_lookup(dt_store_t *s, const char *const *keys, size_t n,
                            void **values, size_t *lens);
/* Atomically add delta to the integer at key (0 if unset). */
dt_status_t dt_store_add(dt_store_t *s, const char *key, int64_t delta,
                         int64_t *result);
/* As dt_store_add, waiting at most timeout seconds for the store's
 * answer (above 60 counts as 60; 0 or less: DT_ERR_INVALID): then
 * DT_ERR_TIMEOUT, logged at debug level only below 60 s, and the handle
 * stays usable (as dt_store_set_bounded). For failure paths and
 * heartbeats. */
dt_status_t dt_store_add_bounded(dt_store_t *s, const char *key,
                                 int64_t delta, int64_t *result,
                                 double timeout);
/* Wait up to timeout seconds (0 or less: no wait) until n clients have
 * entered the barrier called name. */
dt_status_t dt_store_barrier(dt_store_t *s, const char *name, int n,
                             double timeout);
void dt_store_close(dt_store_t *s);

/* ---- the job's failure record ------------------------------------------
 * Which rank failed first, as the workers found it, so that every rank
 * and dtctl (its final line and exit status) name the same root cause.
 * A transport (or the core's shared-memory collectives) that finds a peer
 * dead or hung records it before it fails; the first record wins (an
 * atomic add elects its writer), later ones are ignored. Keys: "dt/culprit"
 * = "RANK DETECTOR HOW", "dt/culprit/votes". HOW: "exited" (the peer
 * closed its connections or its process is gone), "hung" (alive but
 * silent for the timeout: stopped, hung, unreachable), "error" (it sent
 * something wrong). Calls that do not match across ranks are no one
 * rank's failure: nothing is recorded for them. */
#define DT_CULPRIT_HOW_MAX 16
/* Record rank as the root cause, found by detector (first record wins);
 * DT_OK also when another record was there first. */
dt_status_t dt_store_culprit_record(dt_store_t *s, int rank, int detector,
                                    const char *how);
/* How long a failing rank waits for the store's answer (its failure
 * record, the questions it asks the other ranks) before it reports its
 * own view of the failure instead: a stopped dtctl, or a host cut off from
 * dtctl's, must not hold a failing rank (its GPU, a checkpoint lock) for
 * the client's 60 s I/O limit per request. Well above what a loaded store
 * takes to answer. */
#define DT_STORE_FAILURE_WAIT_S 5.0
/* As dt_store_culprit_record, for a failure path: each request waits at
 * most timeout seconds (DT_STORE_FAILURE_WAIT_S) for the store's answer.
 * DT_ERR_TIMEOUT when the store did not answer: then a warning says that
 * the failure is not recorded and this rank reports its own view. The
 * handle stays usable, as for dt_store_set_bounded, but a request without
 * such a bound would first wait for the late answer: a failure path that
 * got DT_ERR_TIMEOUT asks the store nothing more. */
dt_status_t dt_store_culprit_record_bounded(dt_store_t *s, int rank,
                                            int detector, const char *how,
                                            double timeout);
/* The record, waiting up to timeout seconds for one whose writer was
 * elected but has not written yet; DT_ERR_NOT_FOUND when nobody recorded
 * one. how: DT_CULPRIT_HOW_MAX bytes. Read in failure paths: a store that
 * does not answer costs at most 2 x DT_STORE_FAILURE_WAIT_S per request
 * beyond that timeout (slack for the answer, then its I/O), and no record
 * is found then (DT_ERR_TIMEOUT or DT_ERR_NOT_FOUND). */
dt_status_t dt_store_culprit_get(dt_store_t *s, double timeout, int *rank,
                                 int *detector, char *how);

/* ---- server (dtctl) --------------------------------------------------- */
typedef struct dt_store_server dt_store_server_t;

/* Listen on bind_addr:port (port 0: any free port) in a background thread. */
dt_status_t dt_store_server_start(const char *bind_addr, int port,
                                  const uint8_t token[DT_TOKEN_BYTES],
                                  dt_store_server_t **out);
/* The port it listens on. */
int dt_store_server_port(const dt_store_server_t *srv);
/* How many clients it refused for speaking another DT_PROTOCOL_VERSION
 * (each said in an error line): dtctl stops the job on the first. Safe
 * to call from any thread. */
int dt_store_server_refused(dt_store_server_t *srv);
void dt_store_server_stop(dt_store_server_t *srv);

#ifdef __cplusplus
}
#endif
#endif /* DT_STORE_H */
