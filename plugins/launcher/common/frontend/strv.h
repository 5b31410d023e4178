/* strv.h — a growing NULL-terminated list of malloc'd strings (argv and
 * environment lists). An allocation failure is remembered and reported
 * once by strv_ok(), so building code stays linear. */
#ifndef DT_LAUNCHER_STRV_H
#define DT_LAUNCHER_STRV_H

#include <stddef.h>

typedef struct strv {
    char **v;
    size_t n, cap;
    int failed;
} strv_t;

void strv_add(strv_t *s, const char *str);
void strv_addf(strv_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Add every string of a NULL-terminated list. */
void strv_add_all(strv_t *s, const char *const *list);
int strv_ok(const strv_t *s);
/* Wipes each string before freeing it (environment lists hold secrets). */
void strv_free(strv_t *s);

#endif /* DT_LAUNCHER_STRV_H */
