/* output_lines.c — per-(rank, stream) line assembly with one write() per
 * line. Buffers are made on first use: a job of many ranks that print
 * little costs little. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_lines_priv.h"

void output_lines_set_stop_check(output_lines_t *o, int (*stopping)(void))
{
    o->stopping = stopping;
}

void output_lines_set_watch(output_lines_t *o, output_watch_fn watch,
                            void *arg)
{
    o->watch = watch;
    o->watch_arg = arg;
}

dt_status_t output_lines_new(int np, int out_fd, int err_fd, size_t max_line,
                             output_lines_t **out)
{
    output_lines_t *o = calloc(1, sizeof *o);
    if (!o)
        return DT_ERR_NOMEM;
    o->streams = calloc(((size_t)np + 1) * 2, sizeof *o->streams);
    if (!o->streams) {
        free(o);
        return DT_ERR_NOMEM;
    }
    o->np = np;
    o->fds[0] = out_fd;
    o->fds[1] = err_fd;
    o->max_line = max_line ? max_line : OUTPUT_MAX_LINE;
    o->draw = malloc(o->max_line + BAR_DRAW_ROOM);
    if (!o->draw) {
        free(o->streams);
        free(o);
        return DT_ERR_NOMEM;
    }
    *out = o;
    return DT_OK;
}

static stream_t *stream_of(output_lines_t *o, int rank, int fd, int *which)
{
    *which = fd == 2 ? 1 : 0;
    size_t slot = rank >= 0 && rank < o->np ? (size_t)rank : (size_t)o->np;
    stream_t *s = &o->streams[slot * 2 + (size_t)*which];
    if (!s->buf) {
        char prefix[32];
        int n = slot < (size_t)o->np ? snprintf(prefix, sizeof prefix,
                                                "[%d] ", rank)
                                     : snprintf(prefix, sizeof prefix,
                                                "[job] ");
        s->buf = malloc(1 + (size_t)n + o->max_line + 1);
        if (!s->buf)
            return NULL;
        memcpy(s->buf + 1, prefix, (size_t)n);
        s->prefix = (size_t)n;
        s->which = *which;
    }
    return s;
}

/* A prompt shown on the terminal (show_prompt) left a line open: the
 * same stream goes on after it; any other line first ends it. 1: s's
 * text continues the open line (no prefix). (A bar's open line is
 * output_bars.c's.) */
static int settle_open_line(output_lines_t *o, stream_t *s)
{
    if (!o->open)
        return 0;
    if (o->open == s) {
        o->open = NULL;
        return 1;
    }
    output_write(o, o->open_which, "\n", 1);
    o->open = NULL;
    return 0;
}

/* The buffered line from its prefix, *prefix bytes of it: "[rank] ", or
 * for the rest of a split line "[rank]+ " (so that a reader tells it
 * from a line of its own). */
static char *line_of(stream_t *s, size_t *prefix)
{
    *prefix = s->prefix;
    if (!s->continued)
        return s->buf + 1;
    /* "[rank] " one byte to the left, '+' before its space */
    memmove(s->buf, s->buf + 1, s->prefix - 1);
    s->buf[s->prefix - 1] = '+';
    ++*prefix;
    return s->buf;
}

/* Back to "[rank] " after line_of. */
static void restore_prefix(stream_t *s)
{
    if (s->continued)
        memmove(s->buf + 1, s->buf, s->prefix - 1);
}

/* Emit the buffered line with its newline; split: the line goes on in
 * the next one. */
static void emit(output_lines_t *o, stream_t *s, int which, int split)
{
    if (o->watch && !s->continued && !split) {
        size_t slot = (size_t)(s - o->streams) / 2;
        o->watch(o->watch_arg, slot < (size_t)o->np ? (int)slot : -1,
                 s->buf + 1 + s->prefix, s->len);
    }
    size_t prefix;
    char *line = line_of(s, &prefix);
    size_t total = prefix + s->len;
    line[total++] = '\n';
    s->len = s->seen = s->bar_len = 0;
    s->in_bar = 0;
    size_t skip = 0;
    if (o->open_bar && o->open == s)
        bars_close(o); /* the bar's last state comes as its line */
    else if (o->open_bar)
        bars_hide(o, which);
    else if (settle_open_line(o, s))
        skip = prefix;
    output_write(o, which, line + skip, total - skip);
    restore_prefix(s);
    s->continued = split;
}

/* The first '\n' or '\r' in data, or NULL (memchr: fast on the long
 * output of a chatty worker). */
static const char *line_break(const char *data, size_t len)
{
    const char *nl = memchr(data, '\n', len);
    const char *cr = memchr(data, '\r', nl ? (size_t)(nl - data) : len);
    return cr ? cr : nl;
}

void output_lines_feed(output_lines_t *o, int rank, int fd, const char *data,
                       size_t len)
{
    int which;
    stream_t *s = stream_of(o, rank, fd, &which);
    if (!s)
        return; /* out of memory: losing output beats crashing the job */
    s->dirty = 1;
    while (len > 0) {
        const char *end = line_break(data, len);
        size_t take = end ? (size_t)(end - data) : len;
        size_t room = o->max_line - s->len;
        int split = take > room; /* too long: split here */
        if (split)
            take = room;
        memcpy(s->buf + 1 + s->prefix + s->len, data, take);
        s->len += take;
        data += take;
        len -= take;
        if (split) {
            emit(o, s, which, 1);
            continue;
        }
        if (!end)
            break;
        data++; /* consume the '\n' or '\r' itself */
        len--;
        if (*end == '\r') {
            bars_prompt_became_bar(o, s);
            bars_segment_end(o, s);
        } else {
            bars_line_end(s);
            emit(o, s, which, 0);
        }
    }
}

void output_lines_show_prompt(output_lines_t *o, int rank)
{
    if (rank < 0 || rank >= o->np)
        return;
    stream_t *s = &o->streams[(size_t)rank * 2];
    if (!s->buf || s->in_bar || s->len == 0 || s->len != s->seen) {
        s->seen = s->len; /* new, or still growing: look again later */
        return;
    }
    if (o->open_bar)
        bars_leave(o); /* the prompt needs the terminal's line */
    size_t prefix;
    char *line = line_of(s, &prefix);
    size_t skip = settle_open_line(o, s) ? prefix : 0;
    output_write(o, 0, line + skip, prefix + s->len - skip);
    restore_prefix(s);
    s->continued = 0; /* the rest follows on the terminal's line */
    s->len = s->seen = 0;
    o->open = s;
    o->open_which = 0;
}

int output_lines_reader_gone(const output_lines_t *o)
{
    return o->reader_gone;
}

void output_lines_callback(void *arg, int rank, int fd, const char *data,
                           size_t len)
{
    output_lines_feed(arg, rank, fd, data, len);
}

static void flush_slot(output_lines_t *o, size_t slot)
{
    for (int which = 0; which < 2; which++) {
        stream_t *s = &o->streams[slot * 2 + (size_t)which];
        if (s->buf && bars_cleared(s)) {
            s->len = s->bar_len = 0; /* its writer wiped it: so do we */
            s->in_bar = 0;
        }
        if (s->buf && (s->len > 0 || s->bar_len > 0)) {
            bars_line_end(s);
            emit(o, s, which, 0);
        } else if (o->open == s && o->open_bar) {
            bars_close(o);
        } else if (o->open == s) { /* a prompt nobody answered */
            settle_open_line(o, NULL);
        }
    }
}

void output_lines_flush_rank(output_lines_t *o, int rank)
{
    flush_slot(o, rank >= 0 && rank < o->np ? (size_t)rank : (size_t)o->np);
}

void output_lines_flush_all(output_lines_t *o)
{
    for (size_t slot = 0; slot <= (size_t)o->np; slot++)
        flush_slot(o, slot);
}

void output_lines_free(output_lines_t *o)
{
    if (!o)
        return;
    bars_forget_terminal();
    for (size_t i = 0; i < ((size_t)o->np + 1) * 2; i++) {
        free(o->streams[i].buf);
        free(o->streams[i].bar);
    }
    free(o->draw);
    free(o->streams);
    free(o);
}
