/* ssh_types.h — the ssh launcher's state: types only, no functions, so
 * every file may include it without depending on another file's code.
 *
 * One libssh session per host (opened in parallel), one channel per rank.
 * A rank's channel runs a fixed bootstrap command with no data in it; the
 * rank's environment (the job token among it), directory and program go
 * over the channel's stdin, so they appear in no argv on any host. The
 * remote shell then execs the worker as the leader of its own process
 * group and reports that group's id on stderr before anything else. A
 * watchdog left in the group kills it when the channel closes (dtctl
 * ended, the connection broke), so nothing outlives dtctl on any host.
 *
 * Files depend one way (each .c includes only the headers of the files
 * below it; each header declares only what its own .c defines):
 *
 *   ssh.c            the ops table, init and fini
 *     check          dtctl check          -> run_on_host, connect, script
 *     launch         start the ranks      -> signal, pump, connect, script
 *     signal         stop them (ssh_signal.h) -> pump
 *     pump           I/O and exits of the ranks' channels -> stdin, script
 *     stdin          dtctl's stdin to rank 0 over a channel of its own
 *                    -> script
 *     run_on_host    one command on a host -> connect, script
 *     connect        sessions: open, authenticate -> hostkey
 *     hostkey        known_hosts
 *     script         the remote shell's scripts (a leaf)
 */
#ifndef DT_LAUNCHER_SSH_TYPES_H
#define DT_LAUNCHER_SSH_TYPES_H

#include <stdbool.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <dt/plugin.h>
#include <dt/clock.h>
#include "../common/stdin_relay/stdin_relay.h"

#define SSH_ERR_LEN 1024

/* [launcher.ssh], resolved. */
typedef struct ssh_opts {
    char *user;          /* NULL: libssh's default (the local user)     */
    int port;
    char **identity;     /* private key files to try, in order          */
    bool use_agent;
    char *known_hosts;   /* file checked (and extended on accept_new)   */
    bool accept_new;     /* accept_new_host_keys: trust unknown keys    */
    long timeout_s;      /* connect_timeout                             */
    double alive_s;      /* [cluster] timeout: a host silent this long
                            (TCP keepalive, unacked data) is lost       */
    int max_parallel;
    char *workdir;       /* NULL: dtctl's directory when it exists there */
    char *cwd;           /* dtctl's working directory                    */
} ssh_opts_t;

/* One host's connection. */
typedef struct ssh_conn {
    char *name;
    int port;
    ssh_session s;
    int in_event;        /* added to the launcher's ssh_event            */
    int lost;            /* the connection broke: ranks on it are failed */
    char err[SSH_ERR_LEN]; /* why connecting failed                      */
} ssh_conn_t;

struct ssh_launcher;

/* One rank's channel. */
typedef struct ssh_rank {
    int rank;
    struct ssh_launcher *L;
    ssh_conn_t *conn;
    ssh_channel ch;
    struct ssh_channel_callbacks_struct cb;
    long pgid;           /* 0 until the marker line arrived              */
    long watchdog;       /* its watchdog's pid, from the marker (0: none) */
    char head[1024];     /* stderr before the marker (start errors)      */
    size_t head_len;
    int head_done;       /* marker seen (or given up on): stderr flows   */
    char stdin_dir[256]; /* rank 0 reading dtctl's stdin: its fifo's
                            directory, from the marker line; else ""    */
    int have_status, signaled, signo, code;
    long long status_at; /* when exit-status arrived (ms, monotonic)     */
    int eof, closed, reported;
} ssh_rank_t;

/* A channel that runs a `kill` and is freed once it finished. */
typedef struct ssh_ctl {
    ssh_channel ch;
    struct ssh_ctl *next;
} ssh_ctl_t;

typedef struct ssh_launcher {
    ssh_opts_t o;
    ssh_conn_t *conns;
    size_t nconns;
    ssh_rank_t *ranks;
    int n;
    int launched;
    ssh_event event;
    ssh_ctl_t *ctl;
    dt_output_fn output;
    void *output_arg;
    /* dt_launch_spec_t.forward_stdin: dtctl's stdin goes to rank 0 over
     * in_ch (stdin.c); NULL / 0 otherwise. */
    stdin_relay_t *relay;
    ssh_channel in_ch;
    struct ssh_channel_callbacks_struct in_cb;
    int in_polled;       /* dtctl's stdin is in the event, as fd:       */
    int in_polled_fd;
    int in_eof_sent;     /* dtctl's stdin ended: in_ch's end of file sent */
} ssh_launcher_t;

#endif /* DT_LAUNCHER_SSH_TYPES_H */
