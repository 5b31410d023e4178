/* stdin.c — dtctl's standard input to rank 0 through a pipe
 * (dt_launch_spec_t.forward_stdin), inside the launcher's poll(). The
 * pipe's write end is non-blocking: a rank that does not read fills it,
 * and dtctl then only stops reading its own stdin. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "local.h"

static local_worker_t *rank0(local_launcher_t *L)
{
    return L->relay && L->n > 0 && L->workers[0].in_fd >= 0 ? &L->workers[0]
                                                            : NULL;
}

void local_stdin_end(local_launcher_t *L)
{
    if (L->n > 0 && L->workers[0].in_fd >= 0) {
        close(L->workers[0].in_fd);
        L->workers[0].in_fd = -1;
    }
    if (L->relay)
        stdin_relay_stop(L->relay);
}

/* Write what is waiting; close the pipe once the input ended. */
static void pass_on(local_launcher_t *L, local_worker_t *w)
{
    const char *data;
    size_t n;
    while ((n = stdin_relay_pending(L->relay, &data)) > 0) {
        ssize_t k = write(w->in_fd, data, n);
        if (k > 0) {
            stdin_relay_consumed(L->relay, (size_t)k);
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            return; /* full: POLLOUT says when it has room again */
        /* EPIPE: rank 0 closed its stdin (or ended); the rest is its to
         * refuse, as under mpirun. */
        dt_debug("rank 0 takes no more standard input (%s)",
                 k < 0 ? strerror(errno) : "short write");
        local_stdin_end(L);
        return;
    }
    if (stdin_relay_done(L->relay))
        local_stdin_end(L); /* dtctl's stdin ended: rank 0's ends too */
}

size_t local_stdin_pollfds(local_launcher_t *L, struct pollfd *pfd)
{
    local_worker_t *w = rank0(L);
    const char *data;
    if (!w)
        return 0;
    pass_on(L, w); /* also closes the pipe of an input that ended */
    if (!(w = rank0(L)))
        return 0;
    if (stdin_relay_pending(L->relay, &data) > 0) {
        pfd[0] = (struct pollfd){w->in_fd, POLLOUT, 0};
        return 1;
    }
    if (stdin_relay_wants_input(L->relay)) {
        pfd[0] = (struct pollfd){L->relay->src, POLLIN, 0};
        return 1;
    }
    return 0;
}

void local_stdin_events(local_launcher_t *L, const struct pollfd *pfd,
                        size_t n)
{
    local_worker_t *w = rank0(L);
    if (!w || n == 0 || !pfd[0].revents)
        return;
    if (pfd[0].fd == L->relay->src)
        stdin_relay_read(L->relay); /* POLLHUP too: read() says EOF */
    pass_on(L, w);
}
