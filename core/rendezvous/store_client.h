/* store_client.h — the store client's requests with a bound of the
 * caller's on the store's answer, which libdt uses itself (the failure
 * record, store_culprit.c) but does not publish (dt/store.h is the public
 * client). */
#ifndef DT_STORE_CLIENT_H
#define DT_STORE_CLIENT_H

#include <stdint.h>
#include <dt/store.h>

/* Replies to SET and ADD come at once; allow this long for a busy server. */
#define STORE_IO_SECONDS 60.0

/* dt_store_add, waiting at most timeout seconds for the store's answer:
 * then DT_ERR_TIMEOUT, logged at debug level only, and the handle stays
 * usable (as dt_store_set_bounded). For the failure record. */
dt_status_t store_add_bounded(dt_store_t *s, const char *key, int64_t delta,
                              int64_t *result, double timeout);
/* dt_store_get, waiting at most io seconds beyond the wait (and the
 * server's slack) for the store's answer, with the same outcomes. */
dt_status_t store_get_bounded(dt_store_t *s, const char *key, double timeout,
                              double io, void **value, size_t *len);

#endif
