/* env_list.h — a growable list of "KEY=VALUE" strings for workers. The
 * list may hold the job token: env_list_free() wipes every entry. */
#ifndef DT_CLI_ENV_LIST_H
#define DT_CLI_ENV_LIST_H

#include <stddef.h>
#include <dt/status.h>

typedef struct env_list {
    char **v;   /* NULL-terminated once anything was added */
    size_t n, cap;
} env_list_t;

/* Set KEY=<printf of fmt>: appended, or replacing an earlier KEY. */
dt_status_t env_list_addf(env_list_t *l, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* KEY's value in the list, or NULL. */
const char *env_list_get(const env_list_t *l, const char *key);
/* The entries as a NULL-terminated array (never NULL itself). */
const char *const *env_list_strv(const env_list_t *l);
/* Zero and free every entry. */
void env_list_free(env_list_t *l);

#endif /* DT_CLI_ENV_LIST_H */
