/* mpi_lines.c — what mpirun says itself. When a rank dies before its
 * prologue can report (the prologue shell itself was killed), mpirun's
 * "mpirun noticed that process rank N with PID P on node H exited on
 * signal S" still names it. */
#include <stdio.h>
#include <string.h>

#include "mpi_lines.h"
#include "mpi_types.h"

int mpi_on_line(void *arg, frontend_t *fe, int fd, const char *line)
{
    (void)arg;
    (void)fd;
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
