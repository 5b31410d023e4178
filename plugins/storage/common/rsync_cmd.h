/* rsync_cmd.h — the rsync plugin's command line and the reading of its
 * --stats report: pure text, unit-tested. */
#ifndef DT_STG_RSYNC_CMD_H
#define DT_STG_RSYNC_CMD_H

#include <stdbool.h>
#include <dt/status.h>

/* The ssh launcher's settings ([launcher.ssh]) as OpenSSH options. */
typedef struct rs_ssh {
    const char *user;          /* NULL: the local user                    */
    int port;                  /* 0: 22                                    */
    char **identity;           /* key files (NULL: ssh's defaults)         */
    const char *known_hosts;   /* NULL: ~/.ssh/known_hosts                 */
    bool accept_new;           /* accept_new_host_keys                     */
    bool use_agent;
    long connect_timeout;      /* seconds, 0: ssh's default                */
} rs_ssh_t;

/* w as one word of rsync's -e command (rsync splits it at spaces and
 * honours '...' and "..." but not backslashes). DT_ERR_INVALID when w has
 * both kinds of quote. malloc'd. */
dt_status_t rs_e_word(const char *w, char **out);

/* "ssh -p PORT -l USER -i KEY -o IdentitiesOnly=yes
 *  -o UserKnownHostsFile=F -o StrictHostKeyChecking=yes -o BatchMode=yes
 *  -o ConnectTimeout=N": host keys are always checked (accept-new with
 * accept_new_host_keys, never "no"). malloc'd. */
dt_status_t rs_ssh_command(const rs_ssh_t *o, int port, char **cmd);

typedef struct rs_args {
    const char *rsync;       /* local binary ("rsync")                     */
    const char *ssh_cmd;     /* -e value; NULL: a copy on this machine     */
    const char *rsync_path;  /* remote binary, NULL: rsync's default       */
    const char *src;         /* directory on this machine                  */
    const char *host;        /* destination host (ignored when local)      */
    const char *dst;         /* directory there                            */
    const char *bwlimit;     /* --bwlimit value, NULL: none                */
    long timeout_s;          /* --timeout (I/O stall), 0: none             */
    bool progress;           /* --info=progress2                           */
    bool delete_extra;       /* --delete-delay: files gone from src go     */
} rs_args_t;

/* The rsync argv (NULL-terminated, free with dt_strv_free). Always -a,
 * --delay-updates (updated files appear together at the end), -s (the
 * paths reach the remote rsync unsplit by its shell), --chmod=Dgo-w (no
 * directory of the copy writable by others), --stats,
 * the markers and the lock excluded (never copied, never deleted), and "--"
 * before src and dst; a relative path gets "./" (never an option or a
 * host:path). */
dt_status_t rs_argv(const rs_args_t *a, char ***argv);

typedef struct rs_stats {
    int have;                        /* a --stats report was found         */
    unsigned long long bytes_sent;   /* "Total bytes sent"                 */
    unsigned long long bytes_received;
    unsigned long long files;        /* "Number of regular files transferred" */
    unsigned long long data;         /* "Total transferred file size"      */
} rs_stats_t;

/* NULL when v is a --bwlimit rate rsync accepts (its --max-size syntax):
 * digits with an optional fraction ("1.5"), then optionally a suffix K,
 * M, G, T or P (any case; "KiB" also 1024s, "KB" 1000s, "B" bytes; none:
 * KiB) and "+1" or "-1"; 0 (no limit) or at least 512 bytes/s. Else why
 * not, as words for a message. */
const char *rs_bwlimit_problem(const char *v);

/* Read the --stats lines of rsync's output (numbers may carry commas). */
void rs_parse_stats(const char *text, rs_stats_t *s);

#endif /* DT_STG_RSYNC_CMD_H */
