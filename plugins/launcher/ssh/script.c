/* script.c — what a rank's channel runs.
 *
 * The exec request carries only ssh_bootstrap_cmd: a shell that reads one
 * line from stdin and evaluates it. That line (built here) exports the
 * environment with every value single-quoted, changes directory, and
 * execs the program as the leader of its process group, first printing
 * "DT-PGID <pgid> <watchdog pid>" on stderr so dtctl can signal the group
 * later.
 * `export` and `eval` are shell builtins: the values, the job token among
 * them, appear in no process's argv.
 *
 * The group also holds a watchdog: a subshell that ignores TERM and reads
 * the channel's stdin (dtctl never writes more and never sends EOF). When
 * the channel closes — the worker ended, dtctl exited or died, the
 * connection broke — its read ends and it SIGKILLs the whole group, so no
 * process of the job is left behind on the host. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "script.h"
#include "../common/exec_check.h"

/* No newline, so any login shell (sh, bash, zsh, csh) passes it on. */
const char ssh_bootstrap_cmd[] =
    "exec /bin/sh -c 'IFS= read -r dt_s && eval \"$dt_s\"'";

/* The stop command, also read by the login shell: that shell only starts
 * /bin/sh (tcsh's own kill takes no `-s SIG --`: "Arguments should be jobs
 * or process id's", and the workers would survive). */
static const char kill_head[] = "exec /bin/sh -c 'kill -s ";
static const char kill_tail[] = " 2>/dev/null; exit 0'";

/* The watchdog waits for the channel's end of file with the shell's own
 * `read` (no `cat` child): one process, whose pid ($!) the marker line
 * names, so a STOP of the group can continue it at once (ssh_kill_cmd):
 * stopped, it would miss a connection lost meanwhile and leave the
 * workers stopped for ever. dtctl writes nothing more on the channel. */
#define WATCHDOG_WAIT "while IFS= read -r dt_x <&3; do :; done; "

/* In the leader: keep the channel's stdin as fd 3 for the watchdog,
 * start the watchdog, report the group and the watchdog, become the
 * worker. */
static const char stage_text[] =
    "exec 3<&0; "
    "(trap '' HUP INT TERM; " WATCHDOG_WAIT "kill -s KILL -- -$$) "
    ">/dev/null 2>&1 & "
    "printf 'DT-PGID %s %s\\n' $$ $! >&2; "
    DT_EXEC_CHECK_FN "; dt_cannot_exec \"$@\" || exit $?; "
    "exec \"$@\" 3<&- </dev/null";

/* The same for rank 0 reading dtctl's stdin. That cannot come over this
 * channel: its end of file is the watchdog's signal. It comes over a
 * second channel (ssh_stdin_cmd): `cat` into a fifo in a private
 * directory, which the marker line names after the group id. The two
 * opens of the fifo wait for each other (so no byte and no end of file is
 * lost before the worker has it open), then the leader removes the
 * directory and becomes the worker. That `cat` ends with the channel's
 * end of file, or dies writing once the worker's group is gone. Should
 * the leader die before its open, the watchdog opens the fifo itself
 * (read-write: it never waits), so the `cat` waiting for it ends too, and
 * removes the directory. It removes a directory still there even when the
 * fifo is gone: the group's kill can land inside the leader's `rm -rf`,
 * between the fifo's unlink and the directory's. Only [A-Za-z0-9_./+-]
 * in the directory's name, so the other channel's command needs no
 * quoting in any login shell; an
 * absolute $TMPDIR of at most 200 bytes (else /tmp), so the name fits the
 * marker's field (a relative one was refused by dtctl, a long one cut). A
 * host where no fifo can be made gives rank 0 /dev/null, says so, and
 * names no directory. */
static const char stage_stdin_text[] =
    "exec 3<&0; dt_t=${TMPDIR:-/tmp}; "
    "case $dt_t in *[!A-Za-z0-9_./+-]*|''|[!/]*) dt_t=/tmp;; esac; "
    "[ ${#dt_t} -le 200 ] || dt_t=/tmp; "
    "dt_d=$(mktemp -d \"$dt_t/dt-stdin.XXXXXX\" 2>&1) && "
    "mkfifo \"$dt_d/in\" 2>/dev/null || { "
    "printf '%s\\n' \"dt: warning: rank 0 reads /dev/null: no fifo for "
    "its standard input in $dt_t on $(hostname) ($dt_d)\" >&2; "
    "[ ! -d \"$dt_d\" ] || rm -rf \"$dt_d\"; dt_d=; }; "
    "(trap '' HUP INT TERM; " WATCHDOG_WAIT
    "[ -z \"$dt_d\" ] || [ ! -d \"$dt_d\" ] || { "
    "[ ! -p \"$dt_d/in\" ] || true 0<>\"$dt_d/in\"; rm -rf \"$dt_d\"; }; "
    "kill -s KILL -- -$$) >/dev/null 2>&1 & "
    "printf 'DT-PGID %s %s %s\\n' $$ $! \"$dt_d\" >&2; "
    "exec 3<&- </dev/null; "
    "[ -z \"$dt_d\" ] || { exec <\"$dt_d/in\"; rm -rf \"$dt_d\"; }; "
    DT_EXEC_CHECK_FN "; dt_cannot_exec \"$@\" || exit $?; "
    "exec \"$@\"";

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf_t;

static void put(sbuf_t *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(sbuf_t *b, const char *s) { put(b, s, strlen(s)); }

/* 'text' with ' as '\'' and newline as '"$dt_nl"' (the script is one
 * line; the shell turns them back into the same bytes). */
static void put_quoted(sbuf_t *b, const char *s)
{
    puts_(b, "'");
    for (; *s; s++) {
        if (*s == '\'')
            puts_(b, "'\\''");
        else if (*s == '\n')
            puts_(b, "'\"$dt_nl\"'");
        else
            put(b, s, 1);
    }
    puts_(b, "'");
}

char *ssh_sh_quote(const char *s)
{
    sbuf_t b = {0};
    put_quoted(&b, s);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static int valid_name(const char *entry, size_t n)
{
    if (n == 0 || (!isalpha((unsigned char)entry[0]) && entry[0] != '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)entry[i]) && entry[i] != '_')
            return 0;
    return 1;
}

/* export NAME='value'; for each entry (later ones run later, so win). */
static void put_env(sbuf_t *b, const char *const *env)
{
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        size_t n = eq ? (size_t)(eq - env[i]) : 0;
        if (!valid_name(env[i], n)) {
            /* Only the name: the value may be a secret. */
            dt_warn("ssh launcher: environment entry '%.*s' is not a valid "
                    "variable name; not passed to the workers",
                    (int)(eq ? n : strlen(env[i])), env[i]);
            continue;
        }
        puts_(b, "export ");
        put(b, env[i], n);
        puts_(b, "=");
        put_quoted(b, eq + 1);
        puts_(b, "; ");
    }
}

static void put_cd(sbuf_t *b, const ssh_script_req_t *req)
{
    if (req->workdir) {
        puts_(b, "cd -- ");
        put_quoted(b, req->workdir);
        puts_(b, " 2>/dev/null || { printf '%s\\n' \"dt-start-error: cannot "
                 "change to the working directory \"");
        put_quoted(b, req->workdir);
        puts_(b, "\" on $(hostname): no such directory or no permission "
                 "([cluster] workdir / [launcher.ssh] workdir)\" >&2; "
                 "exit 126; }; ");
    } else if (req->try_dir) {
        puts_(b, "cd -- ");
        put_quoted(b, req->try_dir);
        puts_(b, " 2>/dev/null || cd; ");
    }
}

dt_status_t ssh_build_script(const ssh_script_req_t *req, char **script)
{
    if (!req->argv || !req->argv[0])
        return DT_ERR_INVALID;
    sbuf_t b = {0};
    puts_(&b, "dt_nl=$(printf '\\nx'); dt_nl=${dt_nl%x}; ");
    put_env(&b, req->env);
    put_env(&b, req->rank_env);
    put_cd(&b, req);
    puts_(&b, "set --");
    for (size_t i = 0; req->argv[i]; i++) {
        puts_(&b, " ");
        put_quoted(&b, req->argv[i]);
    }
    puts_(&b, "; dt_stage=");
    put_quoted(&b, req->stdin_fifo ? stage_stdin_text : stage_text);
    /* sshd made the shell a session (so group) leader; where a server did
     * not, setsid makes a new group (exit signals then arrive as codes). */
    puts_(&b, "; dt_pg=; read -r _ _ _ _ dt_pg _ </proc/$$/stat 2>/dev/null; "
              "[ \"$dt_pg\" = \"$$\" ] || "
              "exec setsid -w /bin/sh -c \"$dt_stage\" dt-worker \"$@\"; "
              "eval \"$dt_stage\"\n");
    if (b.oom) {
        free(b.p);
        return DT_ERR_NOMEM;
    }
    *script = b.p;
    return DT_OK;
}

int ssh_stdin_dir_ok(const char *dir)
{
    if (!dir || dir[0] != '/' || strlen(dir) >= SSH_STDIN_DIR_MAX)
        return 0;
    for (const char *c = dir; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("_./+-", *c))
            return 0;
    return 1;
}

dt_status_t ssh_stdin_cmd(const char *dir, char **cmd)
{
    if (!ssh_stdin_dir_ok(dir))
        return DT_ERR_INVALID;
    /* the open waits for the worker's; a fifo already gone (the job ended
     * first) is no message of rank 0's */
    if (asprintf(cmd, "exec /bin/sh -c 'exec 2>/dev/null; exec cat >%s/in'",
                 dir) < 0)
        return DT_ERR_NOMEM;
    return DT_OK;
}

dt_status_t ssh_join_argv(const char *const *argv, char **cmd)
{
    sbuf_t b = {0};
    for (size_t i = 0; argv && argv[i]; i++) {
        if (i)
            puts_(&b, " ");
        put_quoted(&b, argv[i]);
    }
    if (b.oom || !b.p) {
        free(b.p);
        return b.oom ? DT_ERR_NOMEM : DT_ERR_INVALID;
    }
    *cmd = b.p;
    return DT_OK;
}

/* " -12 -34" (groups, sign -1) or " 13 35" (processes, sign 1); 0 if
 * an id is not positive. */
static int put_ids(sbuf_t *b, const long *ids, size_t n, int sign)
{
    for (size_t i = 0; i < n; i++) {
        char num[32];
        if (ids[i] <= 0)
            return 0;
        snprintf(num, sizeof num, " %ld", sign * ids[i]);
        puts_(b, num);
    }
    return 1;
}

static int plain_word(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s))
            return 0;
    return 1;
}

static dt_status_t finish(sbuf_t *b, char **cmd)
{
    puts_(b, kill_tail);
    if (b->oom) {
        free(b->p);
        return DT_ERR_NOMEM;
    }
    *cmd = b->p;
    return DT_OK;
}

dt_status_t ssh_kill_cmd(const char *sig, const long *pgids, size_t n,
                         const char *rm_dir, char **cmd)
{
    if (!plain_word(sig) || n == 0 || (rm_dir && !ssh_stdin_dir_ok(rm_dir)))
        return DT_ERR_INVALID;
    sbuf_t b = {0};
    puts_(&b, kill_head);
    puts_(&b, sig);
    puts_(&b, " --");
    if (!put_ids(&b, pgids, n, -1)) {
        free(b.p);
        return DT_ERR_INVALID;
    }
    if (rm_dir) { /* [A-Za-z0-9_./+-] only: no quoting needed */
        puts_(&b, " 2>/dev/null; rm -rf ");
        puts_(&b, rm_dir);
    }
    return finish(&b, cmd);
}

dt_status_t ssh_stop_cmd(const long *pgids, const long *watchdogs, size_t n,
                         char **cmd)
{
    if (n == 0)
        return DT_ERR_INVALID;
    sbuf_t b = {0};
    puts_(&b, kill_head);
    puts_(&b, "STOP --");
    int ok = put_ids(&b, pgids, n, -1);
    /* the watchdogs run on at once: a channel that closes while the job
     * is stopped still ends it */
    puts_(&b, " 2>/dev/null; kill -s CONT --");
    ok = ok && put_ids(&b, watchdogs, n, 1);
    if (!ok) {
        free(b.p);
        return DT_ERR_INVALID;
    }
    return finish(&b, cmd);
}
