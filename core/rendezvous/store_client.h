/* store_client.h — what libdt's own users of the store client (the
 * failure record, store_culprit.c; the parameter servers' connection,
 * ps_link.c) share beyond the public client, dt/store.h. */
#ifndef DT_STORE_CLIENT_H
#define DT_STORE_CLIENT_H

#include <stdint.h>
#include <dt/log.h>
#include <dt/store.h>

/* Replies to SET and ADD come at once; allow this long for a busy server. */
#define STORE_IO_SECONDS 60.0

/* dt_store_connect, saying why the store could not be reached (resolved,
 * connected to, or its handshake not answered) at level: a caller that
 * tries again each period says it once itself. A refused token or
 * protocol is an error whatever the level. */
dt_status_t store_connect_logged(const char *host_port,
                                 const uint8_t token[DT_TOKEN_BYTES],
                                 double timeout, dt_log_level_t level,
                                 dt_store_t **out);

/* dt_store_barrier, waiting at most io seconds beyond the barrier's
 * timeout (and the server's slack to answer it) for the store's answer,
 * not the client's 60 s: dt_finalize. DT_ERR_TIMEOUT either way. */
dt_status_t store_barrier_bounded(dt_store_t *s, const char *name, int n,
                                  double timeout, double io);

#endif
