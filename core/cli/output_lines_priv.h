/* output_lines_priv.h — the state shared by the line assembler
 * (output_lines.c), its writer (output_write.c) and the progress bars it
 * draws on a terminal (output_bars.c). Not for other callers. */
#ifndef DT_CLI_OUTPUT_LINES_PRIV_H
#define DT_CLI_OUTPUT_LINES_PRIV_H

#include <stddef.h>
#include "output_lines.h"

typedef struct stream {
    char *buf;      /* one spare byte, "[rank] ", up to max_line bytes,
                       '\n': the spare byte makes room for the mark of a
                       continued line, "[rank]+ " */
    size_t prefix;  /* length of "[rank] "                     */
    size_t len;     /* bytes of text after the prefix          */
    size_t seen;    /* len at the last output_lines_show_prompt */
    int continued;  /* the text continues a line split at max_line */
    /* Progress bars: a '\r' ends a segment that the next one overwrites.
     * bar holds the last segment a '\r' ended (laid out as buf: the two
     * swap), while buf gathers the next one. */
    char *bar;
    size_t bar_len;
    int in_bar;     /* this line had a '\r': it is a progress bar */
    int dirty;      /* the bar changed since it was last drawn    */
    int which;      /* 0: the worker's stdout, 1: its stderr      */
} stream_t;

struct output_lines {
    int np;
    int fds[2];     /* dtctl's stdout and stderr                */
    int broken[2];  /* a write failed (reader gone): drop output */
    int reader_gone; /* the first stream a write found closed (EPIPE): 1
                        stdout, 2 stderr; 0: none */
    int live[2];    /* that fd is a terminal: bars are drawn in place */
    size_t max_line;
    stream_t *streams; /* (np + 1) * 2; the last pair is "[job]" */
    int (*stopping)(void); /* a stop was asked for (may be NULL) */
    output_watch_fn watch; /* sees each whole line (may be NULL) */
    void *watch_arg;
    /* The stream whose unfinished line is on the terminal (a prompt
     * shown, or a bar drawn, no newline yet), and its fd index; NULL:
     * none. */
    stream_t *open;
    int open_which;
    int open_bar;    /* open is a bar (redrawn in place), not a prompt */
    int bar_hidden;  /* the open bar was erased for another line     */
    int log_erased;  /* a dtctl message erased it during the last tick */
    char *draw;      /* room for one bar's redraw                    */
};

/* Write data to dtctl's stdout (which 0) or stderr (1), all of it; a
 * reader gone or stuck while the job stops drops it (output_write.c). */
void output_write(output_lines_t *o, int which, const char *data,
                  size_t total);

/* output_bars.c: */
#define BAR_DRAW_ROOM 40 /* a redraw's bytes beside the text: "\r",
                            "[rank] ", the erase to the line's end */
/* A '\r' ended s's segment: it is the bar's latest state. */
void bars_segment_end(output_lines_t *o, stream_t *s);
/* s's line ends: its text is the segment being written, else the last
 * one a '\r' ended ("...\r\n" is one line end). */
void bars_line_end(stream_t *s);
/* s is a bar its writer wiped (spaces over it: tqdm's leave=False). */
int bars_cleared(const stream_t *s);
/* The bar on the terminal is s's: draw its latest segment over it. */
void bars_draw(output_lines_t *o, stream_t *s);
/* A line goes to fd `which`: erase the open bar first when that is the
 * terminal too; the next tick draws it again (once, whatever the number
 * of lines meanwhile). */
void bars_hide(output_lines_t *o, int which);
/* s's unfinished line was shown as a prompt and now has a '\r': it is a
 * bar, and takes the prompt's line. */
void bars_prompt_became_bar(output_lines_t *o, stream_t *s);
/* The open bar's line is over: erase it (its line follows). */
void bars_close(output_lines_t *o);
/* A prompt takes the terminal's line: the bar stays there as it is. */
void bars_leave(output_lines_t *o);
/* output_lines_free: dt_log's hook off (output_lines_set_terminal). */
void bars_forget_terminal(void);
/* The text a bar shows: the segment being written, else the last one a
 * '\r' ended; its length in *len (0: nothing to show). */
const char *bars_text(const stream_t *s, size_t *len);

#endif /* DT_CLI_OUTPUT_LINES_PRIV_H */
