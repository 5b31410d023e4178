/* strv.c — see strv.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

static void push(strv_t *s, char *str)
{
    if (!str) {
        s->failed = 1;
        return;
    }
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            free(str);
            s->failed = 1;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
}

void strv_add(strv_t *s, const char *str)
{
    push(s, strdup(str));
}

void strv_addf(strv_t *s, const char *fmt, ...)
{
    char *str = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&str, fmt, ap);
    va_end(ap);
    push(s, r < 0 ? NULL : str);
}

void strv_add_all(strv_t *s, const char *const *list)
{
    for (size_t i = 0; list && list[i]; i++)
        strv_add(s, list[i]);
}

int strv_ok(const strv_t *s)
{
    return !s->failed && s->v;
}

void strv_free(strv_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        explicit_bzero(s->v[i], strlen(s->v[i]));
        free(s->v[i]);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}
