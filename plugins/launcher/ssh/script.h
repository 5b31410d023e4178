/* script.h — the remote shell's scripts (script.c). A leaf. */
#ifndef DT_LAUNCHER_SSH_SCRIPT_H
#define DT_LAUNCHER_SSH_SCRIPT_H

#include <stddef.h>
#include <dt/status.h>

/* The line a rank's remote shell writes to stderr before it execs. */
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
} ssh_script_req_t;
dt_status_t ssh_build_script(const ssh_script_req_t *req, char **script);
/* argv as one quoted command line (run_on_host). */
dt_status_t ssh_join_argv(const char *const *argv, char **cmd);
/* The exec command that sends SIG (a name: "TERM") to the process groups
 * pgids[0..n): `exec /bin/sh -c 'kill -s SIG -- -PGID ... 2>/dev/null;
 * exit 0'`, one line that every login shell (sh, bash, zsh, csh, tcsh,
 * fish) hands to /bin/sh unchanged. malloc'd. */
dt_status_t ssh_kill_cmd(const char *sig, const long *pgids, size_t n,
                         char **cmd);

#endif /* DT_LAUNCHER_SSH_SCRIPT_H */
