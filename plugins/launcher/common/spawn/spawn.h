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
} spawn_req_t;

typedef struct spawn_child {
    pid_t pid;                /* also the process-group id              */
    int out_fd, err_fd;       /* non-blocking read ends, or -1          */
} spawn_child_t;

/* Start the process; stdin is /dev/null. On failure nothing is left
 * running and `why` says what went wrong, e.g. "cannot execute 'foo': No
 * such file or directory". DT_ERR_NOT_FOUND when the program or directory
 * does not exist, DT_ERR_IO otherwise. */
dt_status_t spawn_start(const spawn_req_t *req, spawn_child_t *child,
                        char *why, size_t why_len);

/* "KEY=VALUE" lists merged: base, then each addition replacing earlier
 * entries with the same KEY. *out is a malloc'd NULL-terminated array of
 * pointers into the inputs (free only the array). */
dt_status_t env_merge(char *const *base, const char *const *add1,
                      const char *const *add2, char ***out);

#endif /* DT_LAUNCHER_LOCAL_SPAWN_H */
