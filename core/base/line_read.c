/* line_read.c — getline within a bound (line_read.h). */
#define _GNU_SOURCE /* getc_unlocked */
#include <stdlib.h>

#include "line_read.h"

ssize_t dt_line_read(FILE *f, char **buf, size_t *cap, int *nul)
{
    size_t n = 0;
    int c;
    *nul = 0;
    while ((c = getc_unlocked(f)) != EOF) {
        if (n == DT_LINE_MAX) { /* DT_LINE_MAX bytes and more to come */
            ungetc(c, f);
            return DT_LINE_TOO_LONG;
        }
        if (n + 2 > *cap) { /* c and the NUL after it */
            /* Up to DT_LINE_MAX + 1: a line of exactly DT_LINE_MAX bytes,
             * its '\n' counted, fits with its NUL. */
            size_t want = *cap < 128 ? 256 : *cap * 2;
            if (want > DT_LINE_MAX + 1)
                want = DT_LINE_MAX + 1;
            char *b = realloc(*buf, want);
            if (!b)
                return DT_LINE_NOMEM;
            *buf = b;
            *cap = want;
        }
        *nul |= c == '\0';
        (*buf)[n++] = (char)c;
        if (c == '\n')
            break;
    }
    if (n == 0)
        return DT_LINE_END;
    (*buf)[n] = '\0';
    return (ssize_t)n;
}
