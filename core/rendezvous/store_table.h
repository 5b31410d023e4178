/* store_table.h — the key-value table behind the rendezvous store server
 * (a chained hash table; keys are NUL-free strings, values raw bytes).
 * Internal to store_server.c; used by one thread. */
#ifndef DT_STORE_TABLE_H
#define DT_STORE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

typedef struct store_entry {
    char *key;
    uint8_t *value;
    size_t len;
    struct store_entry *next;
} store_entry_t;

typedef struct store_table {
    store_entry_t **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
} store_table_t;

dt_status_t store_table_init(store_table_t *t);
void store_table_free(store_table_t *t);
/* NULL when the key is not set. */
const store_entry_t *store_table_find(const store_table_t *t, const char *key);
/* Copy value into the table, replacing any older value. */
dt_status_t store_table_set(store_table_t *t, const char *key,
                            const void *value, size_t len);
/* Integer add on a decimal value (0 when unset); DT_ERR_INVALID when the
 * stored value is not an integer or the sum overflows. */
dt_status_t store_table_add(store_table_t *t, const char *key, int64_t delta,
                            int64_t *result);

#endif /* DT_STORE_TABLE_H */
