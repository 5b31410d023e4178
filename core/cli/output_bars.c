/* output_bars.c — progress bars (text a '\r' ends: tqdm's) drawn in place
 * on a terminal. One line of the terminal is the bar line: the lowest
 * rank with a bar owns it until its line ends; it is redrawn at most
 * once per supervisor tick (output_lines_tick), so many ranks' fast bars
 * cost at most 10 writes a second. Another line first erases it, then
 * the bar is drawn again below that line. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <dt/log.h>
#include "output_lines_priv.h"

#define ERASE_TO_END "\033[K"

/* dtctl's own messages (dt_log, any thread) go to its stderr: while a
 * bar is drawn on that terminal, each erases the bar in its own write
 * (else "dt: warning: ..." ended up after the bar's text), and the next
 * tick draws the bar again under it. */
static atomic_int bar_on_stderr_tty; /* a bar is drawn; stderr: a tty */
static atomic_int log_took_line;     /* a message erased it since     */

static const char *erase_bar_for_log(void)
{
    if (!atomic_load(&bar_on_stderr_tty))
        return NULL;
    atomic_store(&log_took_line, 1);
    return "\r" ERASE_TO_END;
}

static void set_drawn(const output_lines_t *o, int drawn)
{
    atomic_store(&bar_on_stderr_tty, drawn && o->live[1]);
}

void output_lines_set_terminal(output_lines_t *o, int out_tty, int err_tty)
{
    o->live[0] = out_tty;
    o->live[1] = err_tty;
    dt_log_set_prefix_hook(out_tty || err_tty ? erase_bar_for_log : NULL);
}

void bars_forget_terminal(void)
{
    dt_log_set_prefix_hook(NULL);
    atomic_store(&bar_on_stderr_tty, 0);
}

const char *bars_text(const stream_t *s, size_t *len)
{
    if (s->len > 0) {
        *len = s->len;
        return s->buf + 1 + s->prefix;
    }
    *len = s->bar_len;
    return s->bar ? s->bar + 1 + s->prefix : "";
}

void bars_segment_end(output_lines_t *o, stream_t *s)
{
    s->in_bar = 1;
    if (s->len == 0)
        return; /* "\r\r", or tqdm's '\r' before each state: keep the last */
    if (!s->bar) {
        s->bar = malloc(1 + s->prefix + o->max_line + 1); /* as buf */
        if (!s->bar) {
            s->len = 0; /* out of memory: the segment is lost, not dtctl */
            return;
        }
        memcpy(s->bar + 1, s->buf + 1, s->prefix);
    }
    char *last = s->bar;
    s->bar = s->buf;
    s->buf = last;
    s->bar_len = s->len;
    s->len = 0;
}

void bars_line_end(stream_t *s)
{
    if (s->len > 0 || s->bar_len == 0)
        return;
    char *last = s->bar;
    s->bar = s->buf;
    s->buf = last;
    s->len = s->bar_len;
    s->bar_len = 0;
}

int bars_cleared(const stream_t *s)
{
    size_t len;
    const char *text = bars_text(s, &len);
    if (!s->in_bar || len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] != ' ')
            return 0;
    return 1;
}

/* Bytes of text that fill at most cols columns (UTF-8: a character is
 * one column; its continuation bytes take none). A bar wider than the
 * terminal would wrap, and '\r' would then redraw only its last row. */
static size_t fit_columns(const char *text, size_t len, size_t cols)
{
    size_t used = 0;
    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)text[i] & 0xC0) == 0x80)
            continue;
        if (used++ == cols)
            return i;
    }
    return len;
}

void bars_draw(output_lines_t *o, stream_t *s)
{
    size_t len;
    const char *text = bars_text(s, &len);
    struct winsize ws;
    /* the last column stays free: some terminals wrap on reaching it */
    if (ioctl(o->fds[s->which], TIOCGWINSZ, &ws) == 0 &&
        ws.ws_col > s->prefix + 1)
        len = fit_columns(text, len, ws.ws_col - 1 - s->prefix);
    char *p = o->draw;
    *p++ = '\r';
    memcpy(p, s->buf + 1, s->prefix);
    p += s->prefix;
    memcpy(p, text, len);
    p += len;
    memcpy(p, ERASE_TO_END, strlen(ERASE_TO_END));
    p += strlen(ERASE_TO_END);
    /* said drawn first: a message logged meanwhile (another thread)
     * erases the line, bar or not, rather than follow the bar's text */
    set_drawn(o, 1);
    output_write(o, s->which, o->draw, (size_t)(p - o->draw));
    s->dirty = 0;
    o->bar_hidden = 0;
}

void bars_hide(output_lines_t *o, int which)
{
    if (!o->open_bar || o->bar_hidden || !o->live[which])
        return; /* a line to a file leaves the terminal's bar alone */
    output_write(o, o->open_which, "\r" ERASE_TO_END,
                 1 + strlen(ERASE_TO_END));
    o->bar_hidden = 1;
    set_drawn(o, 0);
}


void bars_close(output_lines_t *o)
{
    if (!o->bar_hidden)
        output_write(o, o->open_which, "\r" ERASE_TO_END,
                     1 + strlen(ERASE_TO_END));
    o->open = NULL;
    o->open_bar = o->bar_hidden = 0;
    set_drawn(o, 0);
}

void bars_leave(output_lines_t *o)
{
    if (!o->bar_hidden)
        output_write(o, o->open_which, "\n", 1);
    o->open = NULL;
    o->open_bar = o->bar_hidden = 0;
    set_drawn(o, 0);
}

/* The stream whose bar takes the bar line: the lowest rank's. */
static stream_t *first_bar(output_lines_t *o)
{
    for (size_t i = 0; i < ((size_t)o->np + 1) * 2; i++) {
        stream_t *s = &o->streams[i];
        size_t len;
        if (s->buf && s->in_bar && o->live[s->which] &&
            (bars_text(s, &len), len > 0) && !bars_cleared(s))
            return s;
    }
    return NULL;
}

void bars_prompt_became_bar(output_lines_t *o, stream_t *s)
{
    if (o->open != s || o->open_bar)
        return;
    /* its text is on the terminal's line, prefixed: the bar's redraw
     * ("\r[rank] ...") overwrites it, as the terminal would have */
    o->open_bar = 1;
    o->open_which = s->which;
    o->bar_hidden = 0;
    s->dirty = 1;
    set_drawn(o, 1);
}

void output_lines_tick(output_lines_t *o)
{
    if (o->open && !o->open_bar)
        return; /* a prompt waits for its answer on that line */
    /* A message erases the bar in its write; should that write come
     * after this tick's redraw (another thread), the next tick's redraw
     * puts the bar back: a redraw on the tick after an erase too. */
    int erased = atomic_exchange(&log_took_line, 0), again = o->log_erased;
    o->log_erased = erased;
    if (o->open) {
        if (bars_cleared(o->open)) { /* wiped by its writer (leave=False) */
            bars_close(o);
            return;
        }
        /* Lines of other ranks erased it (bars_hide): at most one redraw
         * a tick, however many lines came. */
        if (o->open->dirty || o->bar_hidden || erased || again)
            bars_draw(o, o->open);
        return;
    }
    stream_t *s = first_bar(o);
    if (!s)
        return;
    o->open = s;
    o->open_which = s->which;
    o->open_bar = 1;
    bars_draw(o, s);
}
