/* tcp_io.c — milliseconds until a deadline, for the poll()s of the
 * wire-up and of wait (the handshake itself is dt/auth.h's). */
#include "tcp.h"
#include <dt/clock.h>

int tcp_ms_until(double deadline)
{
    double left = deadline - dt_clock_now();
    if (left <= 0)
        return 0;
    return left > 2e6 ? 2000000000 : (int)(left * 1000.0) + 1;
}
