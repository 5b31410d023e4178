/* env_merge.c — the worker environment: dtctl's own, then the job's
 * variables, then the rank's; a later KEY replaces an earlier one. */
#include <stdlib.h>
#include <string.h>

#include "spawn.h"

static size_t count(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static size_t key_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

/* Put entry into env[0..*n), replacing one with the same key. */
static void put(const char **env, size_t *n, const char *entry)
{
    size_t k = key_len(entry);
    for (size_t i = 0; i < *n; i++)
        if (key_len(env[i]) == k && strncmp(env[i], entry, k) == 0) {
            env[i] = entry;
            return;
        }
    env[(*n)++] = entry;
}

dt_status_t env_merge(char *const *base, const char *const *add1,
                      const char *const *add2, char ***out)
{
    const char *const *b = (const char *const *)base;
    size_t cap = count(b) + count(add1) + count(add2) + 1;
    const char **env = calloc(cap, sizeof *env);
    if (!env)
        return DT_ERR_NOMEM;
    size_t n = 0;
    const char *const *lists[3] = {b, add1, add2};
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; lists[l] && lists[l][i]; i++)
            if (strchr(lists[l][i], '='))
                put(env, &n, lists[l][i]);
    env[n] = NULL;
    *out = (char **)env;
    return DT_OK;
}
