/* local.h — state shared by the local launcher's files. */
#ifndef DT_LAUNCHER_LOCAL_H
#define DT_LAUNCHER_LOCAL_H

#include <poll.h>
#include <sys/types.h>
#include <dt/plugin.h>
#include "../common/stdin_relay/stdin_relay.h"

/* One worker process. Its pid is also its process-group id. */
typedef struct local_worker {
    int rank;
    char *host;     /* for dt_worker_exit_t.host                        */
    pid_t pid;      /* 0 before it started                              */
    int pidfd;      /* readable once the process ended; -1 if none      */
    int fds[2];     /* stdout, stderr pipe read ends; -1 when closed     */
    int in_fd;      /* rank 0 with forward_stdin: its stdin's write end;
                       -1 otherwise, or once closed (its end of file)    */
    int reaped;     /* waitpid() collected `status`                     */
    int reported;   /* wait() handed its exit to the caller              */
    int status;
} local_worker_t;

typedef struct local_launcher {
    local_worker_t *workers;
    int n;
    int launched;
    dt_output_fn output;
    void *output_arg;
    char *buf;      /* read buffer for worker output */
    double kill_grace; /* [cluster] kill_grace: the guards' SIGTERM to
                          SIGKILL when dtctl dies                      */
    size_t buf_len;
    stdin_relay_t *relay; /* dtctl's stdin to rank 0 (forward_stdin), or
                             NULL                                      */
} local_launcher_t;

/* launch.c */
dt_status_t local_launch(void *ctx, const dt_launch_spec_t *spec);
/* pump.c: forward output, reap, report exits. */
dt_status_t local_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev);
/* Read what a pipe holds now (up to a bound) and forward it. */
void local_drain_worker(local_launcher_t *L, local_worker_t *w);
/* stdin.c: pass dtctl's stdin on to rank 0 (L->relay). The descriptor
 * to poll now (at most 1: the pipe while a chunk waits, else dtctl's
 * stdin while it may be read) and what to do with its events. */
size_t local_stdin_pollfds(local_launcher_t *L, struct pollfd *pfd);
void local_stdin_events(local_launcher_t *L, const struct pollfd *pfd,
                        size_t n);
/* Rank 0 ended or the job is over: its stdin is closed, nothing more is
 * read. */
void local_stdin_end(local_launcher_t *L);
/* Reap ended children that are no unreaped worker: descendants of
 * workers (in their group or not) that came back to us as subreaper. */
void local_reap_strays(const local_launcher_t *L);
/* signal.c */
dt_status_t local_signal(void *ctx, int signo);
/* SIGKILL every worker's process group and reap all of them. */
void local_kill_and_reap(local_launcher_t *L);
/* shm_sweep.c: remove /dev/shm/dt-<pid>-* that worker pid (ended, not
 * yet reaped) created and did not unlink. */
void local_shm_sweep(pid_t pid);
/* run_on_host.c */
dt_status_t local_run_on_host(void *ctx, const dt_host_t *host,
                              const char *const *argv, char **output,
                              int *exit_code);

#endif /* DT_LAUNCHER_LOCAL_H */
