/* output_lines.h — turn the raw bytes workers write into whole lines
 * "[rank] text" on dtctl's stdout or stderr (the stream the worker used).
 * Each line leaves in one write(), so lines of different ranks never mix.
 * A line longer than max_line is split, each piece after the first
 * marked "[rank]+ " (a line's start is always "[rank] "); memory stays
 * bounded.
 * A '\r' ends a progress segment (tqdm's bars): the next segment
 * overwrites it. A line with such segments is written as its last one
 * when its '\n' comes ("\r\n" is one line end), so a file or a pipe gets
 * one line per bar, not its hundreds of states; on a terminal the latest
 * state is also drawn in place meanwhile (output_lines_tick). */
#ifndef DT_CLI_OUTPUT_LINES_H
#define DT_CLI_OUTPUT_LINES_H

#include <stddef.h>
#include <dt/status.h>

#define OUTPUT_MAX_LINE 16384

typedef struct output_lines output_lines_t;

/* Lines from worker stdout go to out_fd, from stderr to err_fd. */
dt_status_t output_lines_new(int np, int out_fd, int err_fd, size_t max_line,
                             output_lines_t **out);
/* Bytes from rank's fd (1 or 2). A rank outside 0..np-1 (a launcher that
 * only knows the job) is shown as "[job]". */
void output_lines_feed(output_lines_t *o, int rank, int fd, const char *data,
                       size_t len);
/* An interactive rank (stdin and stdout on a terminal): rank's
 * unfinished stdout line, when it did not grow since the last call (a
 * prompt: input("name? "), pdb's "(Pdb) "), is written out without its
 * newline; the rest of that line follows without a prefix, and any other
 * line first ends it. Called once per supervisor tick. */
void output_lines_show_prompt(output_lines_t *o, int rank);
/* dtctl's stdout (out_tty) or stderr (err_tty) is a terminal that
 * understands "\033[K" (erase to the line's end): progress bars are drawn
 * there in place, "[rank] " before them. Off by default. */
void output_lines_set_terminal(output_lines_t *o, int out_tty, int err_tty);
/* Called once per supervisor tick: draws the latest state of the lowest
 * rank's progress bar on the terminal, when it changed (at most one
 * redraw a tick, however many ranks draw bars how fast); no-op for
 * output that is not a terminal. */
void output_lines_tick(output_lines_t *o);
/* A write found that nobody reads dtctl's stdout (1) or stderr (2) any
 * more (EPIPE: `dtctl run ... | head` after head ended); 0: not so far.
 * That stream's output is dropped; the supervisor stops the job. */
int output_lines_reader_gone(const output_lines_t *o);
/* The same, shaped as the launcher's dt_output_fn. */
void output_lines_callback(void *arg, int rank, int fd, const char *data,
                           size_t len);
/* A write blocked on a reader that does not read (a paused pager or
 * terminal) and interrupted by a signal: when stopping() says the job is
 * being stopped, that stream's output is dropped from then on, so the
 * stop goes ahead in bounded time. NULL: keep waiting for the reader. */
void output_lines_set_stop_check(output_lines_t *o, int (*stopping)(void));
/* watch(arg, rank, text, len) sees each whole line a rank writes, on
 * either stream, without its prefix and newline (not the pieces of one
 * split at max_line), before it is passed on: dtctl reads a crash report
 * there (crash_site.h). NULL: none. */
typedef void (*output_watch_fn)(void *arg, int rank, const char *line,
                                size_t len);
void output_lines_set_watch(output_lines_t *o, output_watch_fn watch,
                            void *arg);
/* Write out a rank's unfinished lines (it ended without a newline). */
void output_lines_flush_rank(output_lines_t *o, int rank);
void output_lines_flush_all(output_lines_t *o);
void output_lines_free(output_lines_t *o);

#endif /* DT_CLI_OUTPUT_LINES_H */
