/* ssh_launcher.h — state shared by the ssh launcher's files.
 *
 * One libssh session per host (opened in parallel), one channel per rank.
 * A rank's channel runs a fixed bootstrap command with no data in it; the
 * rank's environment (the job token among it), directory and program go
 * over the channel's stdin, so they appear in no argv on any host. The
 * remote shell then execs the worker as the leader of its own process
 * group and reports that group's id on stderr before anything else. A
 * watchdog left in the group kills it when the channel closes (dtctl
 * ended, the connection broke), so nothing outlives dtctl on any host. */
#ifndef DT_LAUNCHER_SSH_H
#define DT_LAUNCHER_SSH_H

#include <stdbool.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <dt/plugin.h>
#include <dt/clock.h>

#define SSH_ERR_LEN 1024
/* The line a rank's remote shell writes to stderr before it execs. */
#define SSH_PGID_MARK "DT-PGID "

/* [launcher.ssh], resolved. */
typedef struct ssh_opts {
    char *user;          /* NULL: libssh's default (the local user)     */
    int port;
    char **identity;     /* private key files to try, in order          */
    bool use_agent;
    char *known_hosts;   /* file checked (and extended on accept_new)   */
    bool accept_new;     /* accept_new_host_keys: trust unknown keys    */
    long timeout_s;      /* connect_timeout                             */
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
    char head[1024];     /* stderr before the marker (start errors)      */
    size_t head_len;
    int head_done;       /* marker seen (or given up on): stderr flows   */
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
} ssh_launcher_t;

/* ssh.c */

/* connect.c: open, verify the host key, authenticate. On failure c->err
 * says what and how to fix it. */
dt_status_t ssh_conn_open(const ssh_opts_t *o, ssh_conn_t *c);
void ssh_conn_close(ssh_conn_t *c);
/* Open every connection at once, at most o->max_parallel at a time.
 * fail_fast: the first failure stops new attempts, every failure is
 * logged by host and all connections are closed again on failure.
 * Otherwise every host is tried and each c->err tells (DT_OK returned). */
dt_status_t ssh_conn_open_all(const ssh_opts_t *o, ssh_conn_t *conns,
                              size_t n, int fail_fast);

/* hostkey.c: check the server's key against known_hosts. */
dt_status_t ssh_verify_host_key(const ssh_opts_t *o, ssh_conn_t *c);

/* script.c: the fixed bootstrap command and a rank's script (one line). */
extern const char ssh_bootstrap_cmd[];
/* '...' quoting for sh; newlines survive as "$dt_nl". malloc'd. */
char *ssh_sh_quote(const char *s);
typedef struct ssh_script_req {
    const char *const *env;       /* KEY=VALUE, NULL-terminated, or NULL */
    const char *const *rank_env;  /* later entries win                  */
    const char *const *argv;
    const char *workdir;          /* cd there or fail                   */
    const char *try_dir;          /* cd there if it exists (else home)  */
} ssh_script_req_t;
dt_status_t ssh_build_script(const ssh_script_req_t *req, char **script);
/* argv as one quoted command line (run_on_host, kill). */
dt_status_t ssh_join_argv(const char *const *argv, char **cmd);

/* launch.c */
dt_status_t ssh_launch(void *ctx, const dt_launch_spec_t *spec);
/* pump.c */
dt_status_t ssh_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev);
/* One round of I/O on every session (callbacks forward output). */
void ssh_pump_once(ssh_launcher_t *L, int wait_ms);
void ssh_rank_callbacks(ssh_rank_t *r);
/* Put sessions into / take them out of the event (blocking libssh calls
 * must run outside it). */
void ssh_event_attach(ssh_launcher_t *L);
void ssh_event_detach(ssh_launcher_t *L);
/* signal.c */
dt_status_t ssh_signal(void *ctx, int signo);
/* SIGKILL every group, wait (bounded) for the channels, close them. */
void ssh_kill_all(ssh_launcher_t *L);
/* run_on_host.c */
dt_status_t ssh_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code);
/* cmd: one line for the bootstrap shell (ending in a newline). */
dt_status_t ssh_run_on_conn(ssh_conn_t *c, const char *cmd, char **output,
                            int *exit_code);
/* check.c */
dt_status_t ssh_check(void *ctx, const dt_hostlist_t *hosts,
                      void (*report)(void *arg, const char *host,
                                     const char *problem),
                      void *arg);

#endif /* DT_LAUNCHER_SSH_H */
