/* env_list.c — "KEY=VALUE" lists that are wiped when freed. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_list.h"

dt_status_t env_list_addf(env_list_t *l, const char *key, const char *fmt, ...)
{
    if (l->n + 2 > l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return DT_ERR_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    char *value = NULL, *entry = NULL;
    va_list ap;
    va_start(ap, fmt);
    int ok = vasprintf(&value, fmt, ap) >= 0;
    va_end(ap);
    if (!ok)
        return DT_ERR_NOMEM;
    ok = asprintf(&entry, "%s=%s", key, value) >= 0;
    explicit_bzero(value, strlen(value));
    free(value);
    if (!ok)
        return DT_ERR_NOMEM;
    /* One value per name: a later setting (the staged data path over the
     * configured one, say) replaces the earlier, whatever the launcher or
     * the worker's getenv() would make of duplicates. */
    size_t klen = strlen(key);
    for (size_t i = 0; i < l->n; i++)
        if (strncmp(l->v[i], key, klen) == 0 && l->v[i][klen] == '=') {
            explicit_bzero(l->v[i], strlen(l->v[i]));
            free(l->v[i]);
            l->v[i] = entry;
            return DT_OK;
        }
    l->v[l->n++] = entry;
    l->v[l->n] = NULL;
    return DT_OK;
}

const char *env_list_get(const env_list_t *l, const char *key)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i < l->n; i++)
        if (strncmp(l->v[i], key, klen) == 0 && l->v[i][klen] == '=')
            return l->v[i] + klen + 1;
    return NULL;
}

const char *const *env_list_strv(const env_list_t *l)
{
    static const char *const empty[] = {NULL};
    return l->n ? (const char *const *)l->v : empty;
}

void env_list_free(env_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        explicit_bzero(l->v[i], strlen(l->v[i]));
        free(l->v[i]);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}
