/* strbuf.c — a growing string with printf and POSIX shell quoting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobdir.h"

static int reserve(strbuf_t *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->len + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void sb_addn(strbuf_t *b, const char *text, size_t n)
{
    if (reserve(b, n) != 0)
        return;
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void sb_add(strbuf_t *b, const char *text)
{
    sb_addn(b, text, strlen(text));
}

void sb_addf(strbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) != 0) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sb_quote(strbuf_t *b, const char *text)
{
    sb_addn(b, "'", 1);
    for (const char *p = text; *p; p++) {
        if (*p == '\'')
            sb_addn(b, "'\\''", 4);
        else
            sb_addn(b, p, 1);
    }
    sb_addn(b, "'", 1);
}

dt_status_t sb_status(const strbuf_t *b)
{
    return b->oom ? DT_ERR_NOMEM : DT_OK;
}

void sb_free(strbuf_t *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}
