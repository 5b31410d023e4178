/* tcp_io.c — time and whole-buffer I/O with a deadline, for the connection
 * handshake (the data path is non-blocking: tcp_progress.c). */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp.h"
#include <dt/clock.h>

int tcp_ms_until(double deadline)
{
    double left = deadline - dt_clock_now();
    if (left <= 0)
        return 0;
    return left > 2e6 ? 2000000000 : (int)(left * 1000.0) + 1;
}

/* DT_ERR_PEER on EOF or reset, DT_ERR_TIMEOUT past the deadline. */
dt_status_t tcp_io_full(int fd, void *buf, size_t len, int writing,
                        double deadline)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0 && !writing)
            return DT_ERR_PEER;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return DT_ERR_PEER;
        struct pollfd pfd = {.fd = fd, .events = writing ? POLLOUT : POLLIN};
        int ms = tcp_ms_until(deadline);
        if (ms == 0)
            return DT_ERR_TIMEOUT;
        if (poll(&pfd, 1, ms) == 0)
            return DT_ERR_TIMEOUT;
    }
    return DT_OK;
}
