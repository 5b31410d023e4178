/* program.h — is a program runnable here (program.c). A leaf. */
#ifndef DT_LAUNCHER_MPI_PROGRAM_H
#define DT_LAUNCHER_MPI_PROGRAM_H


/* Is prog runnable: a path, or a name found on PATH? */
int mpi_program_found(const char *prog);

#endif /* DT_LAUNCHER_MPI_PROGRAM_H */
