/* output_write.c — dtctl's writes of worker output: all of a line in one
 * write() where the kernel takes it; a reader that is gone (EPIPE), or
 * stuck while the job is being stopped, loses the output, never holds
 * dtctl up. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "output_lines_priv.h"

void output_write(output_lines_t *o, int which, const char *data,
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
