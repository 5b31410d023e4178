/* gnuplot.h — how dtctl draws: it writes numbers and a script, and runs
 * gnuplot (Debian's gnuplot-nox; $GNUPLOT names another program). Shared
 * by `dtctl plot` (training curves) and `dtctl plan --plot` (scaling). */
#ifndef DT_CLI_GNUPLOT_H
#define DT_CLI_GNUPLOT_H

#include <stddef.h>
#include <stdio.h>

/* gnuplot on PATH (or $GNUPLOT): its path in buf, 0 when absent (and an
 * error saying what to install, naming who asked). */
int dt_gnuplot_find(const char *who, char *buf, size_t len);

/* The terminal for a picture file by its extension (.png, .svg), sized
 * w x h; NULL (and an error naming who and the file) for another. */
const char *dt_gnuplot_terminal(const char *who, const char *out, int w,
                                int h, char *buf, size_t len);

/* 1 when this user may create or overwrite the picture file out, before
 * any work; 0 (and an error naming who, the file and why) otherwise. */
int dt_gnuplot_output_writable(const char *who, const char *out);

/* A gnuplot single-quoted string: ' doubled. */
void dt_gnuplot_quote(FILE *f, const char *s);

/* Run gnuplot on script; 0 when it exited 0 and out is a non-empty file,
 * else an error naming who. */
int dt_gnuplot_run(const char *who, const char *gnuplot, const char *script,
                   const char *out);

#endif /* DT_CLI_GNUPLOT_H */
