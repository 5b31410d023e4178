/* mpi_lines.c — what mpirun says itself. When a rank dies before its
 * prologue can report (the prologue shell itself was killed), mpirun's
 * "mpirun noticed that process rank N with PID P on node H exited on
 * signal S" still names it. Its notes on the signals dtctl relays
 * (a stop, Ctrl-Z) are left out. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "mpi_lines.h"
#include "mpi_types.h"

int mpi_on_line(void *arg, frontend_t *fe, int fd, const char *line)
{
    (void)arg;
    (void)fd;
    int signo;
    /* dtctl's own stop, Ctrl-Z and fg (SIGUSR1, SIGUSR2 and SIGCONT,
     * relayed): mpirun announces each; dtctl says what happened instead */
    if (sscanf(line, "mpirun: Forwarding signal %d to job", &signo) == 1 &&
        (signo == SIGUSR1 || signo == SIGUSR2 || signo == SIGCONT))
        return 1;
    const char *p = strstr(line, "noticed that process rank ");
    if (!p)
        return 0;
    int rank, pid, sig;
    char host[256];
    if (sscanf(p, "noticed that process rank %d with PID %d on node %255s "
                  "exited on signal %d",
               &rank, &pid, host, &sig) == 4)
        frontend_add_exit(fe, rank, host, 128 + sig);
    return 0; /* mpirun's words reach the user as they are */
}
