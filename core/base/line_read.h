/* line_read.h — one line of a text file a user named, in bounded memory:
 * getline on a device or a data file named by mistake (/dev/zero is one
 * endless line) held it all in memory until the machine ran out. */
#ifndef DT_BASE_LINE_READ_H
#define DT_BASE_LINE_READ_H

#include <stdio.h>
#include <sys/types.h>

/* The longest line read, its '\n' counted: far beyond any real one (a
 * ResNet's [model] layers on one line is a few KiB, a metrics line a few
 * hundred bytes), and far short of what memory holds. */
#define DT_LINE_MAX ((size_t)16 << 20)
#define DT_LINE_MAX_TEXT "16 MiB"

#define DT_LINE_END (-1)      /* end of file, or a read error: ferror(f) */
#define DT_LINE_TOO_LONG (-2) /* longer than DT_LINE_MAX: stop reading   */
#define DT_LINE_NOMEM (-3)

/* As getline(&buf, &cap, f) — the line with its '\n' and a NUL after it
 * in *buf (grown as needed), its length returned — but never longer than
 * DT_LINE_MAX: DT_LINE_TOO_LONG then, and the rest of that line unread.
 * *nul is set when the line holds a NUL byte (not text: a program, an
 * image), which string functions would silently stop at. */
ssize_t dt_line_read(FILE *f, char **buf, size_t *cap, int *nul);

#endif /* DT_BASE_LINE_READ_H */
