/* proc_tree.h — the processes a front-end started on this machine.
 * mpirun puts each local rank in a process group of its own, so killing
 * mpirun's group alone would leave them running: signal every
 * descendant's group too. */
#ifndef DT_LAUNCHER_PROC_TREE_H
#define DT_LAUNCHER_PROC_TREE_H

#include <sys/types.h>

/* Send signo to every descendant of root (found in /proc) and to its
 * process group (never dtctl's own), then, when root_group, to root's
 * group. Returns how many processes were found below root. */
int proc_tree_signal(pid_t root, int signo, int root_group);

#endif /* DT_LAUNCHER_PROC_TREE_H */
