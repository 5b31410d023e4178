/* prologue.h — the sh script each rank runs before the worker command:
 *   sh -c SCRIPT dt-worker PROGRAM ARGS...
 * It starts with the launcher's identity part, which sets dt's and
 * torchrun's per-rank variables (DT_RANK, DT_LOCAL_RANK, DT_LOCAL_SIZE,
 * DT_NODE_RANK, DT_HOST, RANK, ...) from the scheduler's own: the launcher
 * makes it with schedenv_prologue (../schedenv/schedenv.h) from the same
 * description of its variables as its `identify` op, so this library names
 * no scheduler variable. Then it runs the command, and prints
 * "dt-exit:<nonce>:<status>:<host>" on stderr when it ends, so the
 * launcher learns each rank's exit status.
 *
 * For Open MPI the node of a rank comes from the placement dtctl computed,
 * passed in the front-end's environment (prologue_placement_env) and read
 * by prologue_placement_sh. */
#ifndef DT_LAUNCHER_PROLOGUE_H
#define DT_LAUNCHER_PROLOGUE_H

#include <dt/plugin.h>

#define PROLOGUE_NONCE_LEN 16
#define PROLOGUE_MARKER "dt-exit:"
/* "dt-ctl:<nonce>:STOP" (or CONT): a relayed stop reached the worker */
#define PROLOGUE_CTL_MARKER "dt-ctl:"

/* A random word (hex) that worker output cannot guess. */
dt_status_t prologue_nonce(char out[PROLOGUE_NONCE_LEN + 1]);

/* The script: identity (the launcher's sh that sets and exports DT_RANK
 * & co., DT_HOST among them), then the worker with the exit marker.
 * relay_stops: SIGUSR2 to the shell stops the worker's group, SIGCONT
 * continues it, each said with a PROLOGUE_CTL_MARKER line on stderr (for
 * a front-end that cannot signal the worker itself: mpirun); SIGUSR1 ends
 * it (SIGTERM) and the shell then exits 0, its marker keeping the
 * worker's status. Signals that come before the worker runs, also during
 * the identity part, are kept and passed on once it runs. *out is
 * malloc'd. */
dt_status_t prologue_script(const char *identity, const char *nonce,
                            int relay_stops, char **out);

/* sh that sets DT_NODE_RANK and DT_HOST of rank $DT_RANK from the
 * variables of prologue_placement_env (an `extra` for schedenv_prologue). */
extern const char prologue_placement_sh[];

/* "DT_PLACEMENT_FIRST_RANKS=0 2 4" and "DT_PLACEMENT_HOSTS=h1 h2 h3" from
 * the placement (ranks fill hosts in order): malloc'd entries. */
dt_status_t prologue_placement_env(const dt_launch_spec_t *spec,
                                   char **first_ranks, char **hosts);

/* Parse a marker line "dt-exit:<nonce>:<status>:<host>". 1: it is one
 * (*status set, *host points into line, host_len bytes). */
int prologue_parse_marker(const char *line, size_t len, const char *nonce,
                          int *status, const char **host, size_t *host_len);

/* Parse "dt-ctl:<nonce>:STOP" or ":CONT". 1: it is one (*signo SIGSTOP
 * or SIGCONT). */
int prologue_parse_ctl(const char *line, size_t len, const char *nonce,
                       int *signo);

/* Where the exit or ctl marker that ends line starts (len: none). The
 * prologue prints its markers on the worker's stderr, so one follows a
 * worker's unfinished line (a progress bar's "\r 40%") on the same line. */
size_t prologue_marker_at(const char *line, size_t len, const char *nonce);

#endif /* DT_LAUNCHER_PROLOGUE_H */
