/* output_lines.c — per-(rank, stream) line assembly with one write() per
 * line. Buffers are made on first use: a job of many ranks that print
 * little costs little. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "output_lines.h"

typedef struct stream {
    char *buf;      /* one spare byte, "[rank] ", up to max_line bytes,
                       '\n': the spare byte makes room for the mark of a
                       continued line, "[rank]+ " */
    size_t prefix;  /* length of "[rank] "                     */
    size_t len;     /* bytes of text after the prefix          */
    size_t seen;    /* len at the last output_lines_show_prompt */
    int continued;  /* the text continues a line split at max_line */
} stream_t;

struct output_lines {
    int np;
    int fds[2];     /* dtctl's stdout and stderr                */
    int broken[2];  /* a write failed (reader gone): drop output */
    int reader_gone; /* the first stream a write found closed (EPIPE): 1
                        stdout, 2 stderr; 0: none */
    size_t max_line;
    stream_t *streams; /* (np + 1) * 2; the last pair is "[job]" */
    int (*stopping)(void); /* a stop was asked for (may be NULL) */
    /* The stream whose unfinished line is on the terminal (a prompt
     * shown, no newline yet), and its fd index; NULL: none. */
    stream_t *open;
    int open_which;
};

void output_lines_set_stop_check(output_lines_t *o, int (*stopping)(void))
{
    o->stopping = stopping;
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
    }
    return s;
}

/* One line's bytes in one write (looping only if the kernel takes part of
 * it, e.g. a pipe reader that is slow). */
static void write_out(output_lines_t *o, int which, const char *data,
                      size_t total)
{
    if (o->broken[which])
        return;
    for (size_t off = 0; off < total;) {
        size_t want = total - off;
        if (o->stopping && o->stopping()) {
            /* stopping: write only what the reader has room for (POLLOUT
             * promises PIPE_BUF bytes), so a pipe nobody reads cannot
             * block the stop after it began */
            struct pollfd p = {o->fds[which], POLLOUT, 0};
            if (poll(&p, 1, 100) <= 0 || !(p.revents & POLLOUT)) {
                o->broken[which] = 1;
                dt_debug("worker output to fd %d dropped: nobody reads it "
                         "and the job is stopping", o->fds[which]);
                return;
            }
            if (want > PIPE_BUF)
                want = PIPE_BUF;
        }
        ssize_t w = write(o->fds[which], data + off, want);
        if (w < 0 && errno == EINTR && o->stopping && o->stopping()) {
            /* the reader does not read and the job is being stopped: a
             * blocked write must not hold the stop up */
            o->broken[which] = 1;
            dt_debug("worker output to fd %d dropped: nobody reads it and "
                     "the job is stopping", o->fds[which]);
            return;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* Nobody reads dtctl's output any more: drop it from now on.
             * A closed pipe (EPIPE) is also told to the supervisor, which
             * stops the job (output_lines_reader_gone). */
            if (w < 0 && errno == EPIPE && !o->reader_gone)
                o->reader_gone = which + 1;
            o->broken[which] = 1;
            dt_debug("cannot write worker output to fd %d: %s; dropping "
                     "further output there",
                     o->fds[which], strerror(errno));
            return;
        }
        off += (size_t)w;
    }
}

/* A prompt shown on the terminal (show_prompt) left a line open: the
 * same stream goes on after it; any other line first ends it. 1: s's
 * text continues the open line (no prefix). */
static int settle_open_line(output_lines_t *o, stream_t *s)
{
    if (!o->open)
        return 0;
    if (o->open == s) {
        o->open = NULL;
        return 1;
    }
    write_out(o, o->open_which, "\n", 1);
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
    size_t prefix;
    char *line = line_of(s, &prefix);
    size_t total = prefix + s->len;
    line[total++] = '\n';
    s->len = s->seen = 0;
    size_t skip = settle_open_line(o, s) ? prefix : 0;
    write_out(o, which, line + skip, total - skip);
    restore_prefix(s);
    s->continued = split;
}

void output_lines_feed(output_lines_t *o, int rank, int fd, const char *data,
                       size_t len)
{
    int which;
    stream_t *s = stream_of(o, rank, fd, &which);
    if (!s)
        return; /* out of memory: losing output beats crashing the job */
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        size_t room = o->max_line - s->len;
        int complete = nl != NULL, split = take > room;
        if (split) {
            take = room;
            complete = 1; /* too long: split here */
        }
        memcpy(s->buf + 1 + s->prefix + s->len, data, take);
        s->len += take;
        data += take;
        len -= take;
        if (nl && data == nl) {
            data++; /* consume the newline itself */
            len--;
        }
        if (complete)
            emit(o, s, which, split);
    }
}

void output_lines_show_prompt(output_lines_t *o, int rank)
{
    if (rank < 0 || rank >= o->np)
        return;
    stream_t *s = &o->streams[(size_t)rank * 2];
    if (!s->buf || s->len == 0 || s->len != s->seen) {
        s->seen = s->len; /* new, or still growing: look again later */
        return;
    }
    size_t prefix;
    char *line = line_of(s, &prefix);
    size_t skip = settle_open_line(o, s) ? prefix : 0;
    write_out(o, 0, line + skip, prefix + s->len - skip);
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
        if (s->buf && s->len > 0)
            emit(o, s, which, 0);
        else if (o->open == s) /* a prompt nobody answered: end its line */
            settle_open_line(o, NULL);
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
    for (size_t i = 0; i < ((size_t)o->np + 1) * 2; i++)
        free(o->streams[i].buf);
    free(o->streams);
    free(o);
}
