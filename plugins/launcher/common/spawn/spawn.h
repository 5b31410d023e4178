/* spawn.h — start one process in its own process group with fork/exec,
 * learning through a close-on-exec status pipe whether exec worked. */
#ifndef DT_LAUNCHER_LOCAL_SPAWN_H
#define DT_LAUNCHER_LOCAL_SPAWN_H

#include <stddef.h>
#include <sys/types.h>
#include <dt/status.h>

typedef struct spawn_req {
    const char *const *argv;  /* argv[0] is looked up on PATH           */
    char *const *envp;        /* the complete environment               */
    const char *workdir;      /* NULL: dtctl's working directory        */
    int capture;              /* 1: stdout/stderr into pipes            */
    int merge_stderr;         /* with capture: stderr joins stdout      */
    int death_signal;         /* sent to it once when dtctl dies, even
                                 by SIGKILL (a guard: guard.c); 0: none */
    int die_with_parent;      /* the same without a guard: the kernel's
                                 parent-death signal on the child itself,
                                 which may come more than once (child.h);
                                 for many children, each its own guard
                                 would double the processes; 0: none    */
    int stdin_from;           /* SPAWN_STDIN_*: what its stdin is       */
    int ignore_sigpipe;       /* 1: SIGPIPE ignored, so that a front-end
                                 outlives the reader of its output (a
                                 killed dtctl) to stop its job cleanly:
                                 mpirun died of it at its first line and
                                 left its session directory; mpirun and
                                 slurmstepd give their ranks the default */
} spawn_req_t;

/* spawn_req_t.stdin_from. */
enum {
    SPAWN_STDIN_NULL = 0,  /* /dev/null                                   */
    SPAWN_STDIN_PIPE = 1,  /* a pipe: spawn_child_t.in_fd is its write end */
    SPAWN_STDIN_OURS = 2,  /* dtctl's own stdin (a front-end that forwards
                              it itself: mpirun, srun)                    */
};

typedef struct spawn_child {
    pid_t pid;                /* also the process-group id              */
    int out_fd, err_fd;       /* non-blocking read ends, or -1          */
    int in_fd;                /* SPAWN_STDIN_PIPE: the non-blocking write
                                 end of its stdin (close it: EOF); or -1 */
    pid_t guard;              /* with death_signal: the guard, else 0;
                                 spawn_guard_stop once pid is reaped    */
} spawn_child_t;

/* Start the process, its stdin as req->stdin_from says. On failure
 * nothing is left running and `why` says what went wrong, e.g. "cannot
 * execute 'foo': No such file or directory". DT_ERR_NOT_FOUND when the
 * program or directory does not exist, DT_ERR_IO otherwise. */
dt_status_t spawn_start(const spawn_req_t *req, spawn_child_t *child,
                        char *why, size_t why_len);

/* guard.c: a process (forked, no exec, named dt-guard) that sends child
 * signo once when dtctl dies; 0 when it cannot start. */
pid_t spawn_guard_start(pid_t child, int signo);
/* guard.c: a guard that joins process group pgid (whose leader the
 * caller has not reaped yet) and, when dtctl dies, sends the group
 * SIGTERM, then SIGKILL after grace seconds; 0 when it cannot start. It
 * ends only by a signal: the caller's SIGKILL to the group ends it with
 * the rest, and reaping the group's members reaps it too. */
pid_t spawn_group_guard_start(pid_t pgid, double grace);
/* SIGKILL and reap the guard *guard (if any); sets it to 0. */
void spawn_guard_stop(pid_t *guard);

/* "KEY=VALUE" lists merged: base, then each addition replacing earlier
 * entries with the same KEY. *out is a malloc'd NULL-terminated array of
 * pointers into the inputs (free only the array). */
dt_status_t env_merge(char *const *base, const char *const *add1,
                      const char *const *add2, char ***out);

#endif /* DT_LAUNCHER_LOCAL_SPAWN_H */
