/* store_table.c — chained hash table (FNV-1a) for the store server. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_table.h"

static uint64_t hash_key(const char *key)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

dt_status_t store_table_init(store_table_t *t)
{
    t->nbuckets = 64;
    t->count = 0;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    return t->buckets ? DT_OK : DT_ERR_NOMEM;
}

void store_table_free(store_table_t *t)
{
    for (size_t i = 0; t->buckets && i < t->nbuckets; i++)
        for (store_entry_t *e = t->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e->value);
            free(e);
        }
    free(t->buckets);
    t->buckets = NULL;
    t->nbuckets = t->count = 0;
}

const store_entry_t *store_table_find(const store_table_t *t, const char *key)
{
    for (store_entry_t *e = t->buckets[hash_key(key) & (t->nbuckets - 1)]; e;
         e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

/* Double the buckets when the load passes 1; a failed grow is harmless. */
static void maybe_grow(store_table_t *t)
{
    if (t->count < t->nbuckets)
        return;
    size_t n = t->nbuckets * 2;
    store_entry_t **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (store_entry_t *e = t->buckets[i], *next; e; e = next) {
            next = e->next;
            size_t h = hash_key(e->key) & (n - 1);
            e->next = b[h];
            b[h] = e;
        }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

dt_status_t store_table_set(store_table_t *t, const char *key,
                            const void *value, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return DT_ERR_NOMEM;
    if (len)
        memcpy(copy, value, len);
    store_entry_t *e = (store_entry_t *)store_table_find(t, key);
    if (e) {
        free(e->value);
        e->value = copy;
        e->len = len;
        return DT_OK;
    }
    e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key))) {
        free(e);
        free(copy);
        return DT_ERR_NOMEM;
    }
    e->value = copy;
    e->len = len;
    size_t h = hash_key(key) & (t->nbuckets - 1);
    e->next = t->buckets[h];
    t->buckets[h] = e;
    t->count++;
    maybe_grow(t);
    return DT_OK;
}

dt_status_t store_table_add(store_table_t *t, const char *key, int64_t delta,
                            int64_t *result)
{
    int64_t old = 0;
    const store_entry_t *e = store_table_find(t, key);
    if (e) {
        char text[32];
        if (e->len == 0 || e->len >= sizeof text)
            return DT_ERR_INVALID;
        memcpy(text, e->value, e->len);
        text[e->len] = '\0';
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (errno || *end)
            return DT_ERR_INVALID;
        old = v;
    }
    int64_t sum;
    if (__builtin_add_overflow(old, delta, &sum))
        return DT_ERR_INVALID;
    char text[32];
    int n = snprintf(text, sizeof text, "%" PRId64, sum);
    dt_status_t st = store_table_set(t, key, text, (size_t)n);
    if (st == DT_OK)
        *result = sum;
    return st;
}
