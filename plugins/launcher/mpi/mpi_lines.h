/* mpi_lines.h — mpirun's own output lines (mpi_lines.c). */
#ifndef DT_LAUNCHER_MPI_LINES_H
#define DT_LAUNCHER_MPI_LINES_H

#include "../common/frontend/frontend.h"

/* mpirun's own lines: the rank it names when one was killed. */
int mpi_on_line(void *arg, frontend_t *fe, int fd, const char *line);

#endif /* DT_LAUNCHER_MPI_LINES_H */
