/* script.h — the remote shell's scripts (script.c). A leaf. */
#ifndef DT_LAUNCHER_SSH_SCRIPT_H
#define DT_LAUNCHER_SSH_SCRIPT_H

#include <stddef.h>
#include <dt/status.h>

/* The line a rank's remote shell writes to stderr before it execs:
 * "DT-PGID <pgid> <watchdog pid>", and for rank 0 reading dtctl's stdin
 * " <fifo directory>" after (empty: no fifo). */
#define SSH_PGID_MARK "DT-PGID "

/* The fixed bootstrap command and a rank's script (one line). */
extern const char ssh_bootstrap_cmd[];
/* '...' quoting for sh; newlines survive as "$dt_nl". malloc'd. */
char *ssh_sh_quote(const char *s);
typedef struct ssh_script_req {
    const char *const *env;       /* KEY=VALUE, NULL-terminated, or NULL */
    const char *const *rank_env;  /* later entries win                  */
    const char *const *argv;
    const char *workdir;          /* cd there or fail                   */
    const char *try_dir;          /* cd there if it exists (else home)  */
    int stdin_fifo;               /* 1 (rank 0 reading dtctl's stdin):
                                     the worker's stdin is a fifo that
                                     ssh_stdin_cmd fills; the marker line
                                     then names its directory          */
} ssh_script_req_t;
dt_status_t ssh_build_script(const ssh_script_req_t *req, char **script);
/* The longest fifo directory a marker line may name. */
#define SSH_STDIN_DIR_MAX 256
/* 1: dir is absolute, shorter than SSH_STDIN_DIR_MAX and of
 * [A-Za-z0-9_./+-] only (what rank 0's script makes). */
int ssh_stdin_dir_ok(const char *dir);
/* The exec command of the channel that writes rank 0's stdin: `cat` into
 * the fifo in dir (from its marker line). malloc'd. */
dt_status_t ssh_stdin_cmd(const char *dir, char **cmd);
/* argv as one quoted command line (run_on_host). */
dt_status_t ssh_join_argv(const char *const *argv, char **cmd);
/* The exec command that sends SIG (a name: "TERM") to the process groups
 * pgids[0..n): `exec /bin/sh -c 'kill -s SIG -- -PGID ... 2>/dev/null;
 * exit 0'`, one line that every login shell (sh, bash, zsh, csh, tcsh,
 * fish) hands to /bin/sh unchanged. rm_dir: NULL, or rank 0's fifo
 * directory (ssh_stdin_dir_ok), removed after the signal: its watchdog,
 * which would remove it, dies in the group's SIGKILL. malloc'd. */
dt_status_t ssh_kill_cmd(const char *sig, const long *pgids, size_t n,
                         const char *rm_dir, char **cmd);
/* Ctrl-Z's stop of the groups pgids[0..n) (`kill -s STOP -- -PGID ...`)
 * that continues their watchdogs (the pids of their marker lines) right
 * after: stopped, a watchdog would not end its group when the channel
 * closes. One line for any login shell, as ssh_kill_cmd's. malloc'd. */
dt_status_t ssh_stop_cmd(const long *pgids, const long *watchdogs, size_t n,
                         char **cmd);

#endif /* DT_LAUNCHER_SSH_SCRIPT_H */
