/* stdin_relay.c — see stdin_relay.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "stdin_relay.h"

void stdin_relay_init(stdin_relay_t *r, int src)
{
    r->src = src;
    r->tty = src >= 0 && isatty(src);
    r->off = r->len = 0;
}

int stdin_relay_wants_input(const stdin_relay_t *r)
{
    if (r->src < 0 || r->off < r->len)
        return 0;
    if (!r->tty)
        return 1;
    /* Not our controlling terminal (-1): reading it stops no one. */
    pid_t fg = tcgetpgrp(r->src);
    return fg < 0 || fg == getpgrp();
}

void stdin_relay_read(stdin_relay_t *r)
{
    if (r->src < 0 || r->off < r->len)
        return;
    ssize_t n = read(r->src, r->buf, sizeof r->buf);
    if (n > 0) {
        r->off = 0;
        r->len = (size_t)n;
        return;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n < 0)
        dt_debug("standard input for rank 0: read failed (%s); ending it",
                 strerror(errno));
    r->src = -1; /* only ours is dropped: dtctl's fd 0 stays open */
}

size_t stdin_relay_pending(const stdin_relay_t *r, const char **data)
{
    *data = r->buf + r->off;
    return r->len - r->off;
}

void stdin_relay_consumed(stdin_relay_t *r, size_t n)
{
    r->off += n < r->len - r->off ? n : r->len - r->off;
    if (r->off == r->len)
        r->off = r->len = 0;
}

int stdin_relay_done(const stdin_relay_t *r)
{
    return r->src < 0 && r->off == r->len;
}

void stdin_relay_stop(stdin_relay_t *r)
{
    r->src = -1;
    r->off = r->len = 0;
}
