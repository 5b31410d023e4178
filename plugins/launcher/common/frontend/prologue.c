/* prologue.c — see prologue.h. The scripts are POSIX sh (dash on
 * Debian) and start no extra processes unless a variable is missing (but
 * one short setpriv probe, and short sleeps while a stop waits for the
 * worker's session: common_tail). The
 * identity part (DT_RANK & co. from the scheduler's variables) is the
 * launcher's, made by schedenv_prologue (../schedenv/schedenv.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "prologue.h"
#include "../exec_check.h"

/* Node and host of a rank from dtctl's placement (prologue_placement_env):
 * the node is the last host whose first rank is <= ours. */
const char prologue_placement_sh[] =
    "unset DT_NODE_RANK\n"
    "n=0; for f in $DT_PLACEMENT_FIRST_RANKS; do\n"
    "  [ \"$DT_RANK\" -ge \"$f\" ] && DT_NODE_RANK=$n; n=$((n+1)); done\n"
    "if [ -n \"$DT_NODE_RANK\" ]; then n=0; for h in $DT_PLACEMENT_HOSTS; do\n"
    "  [ $n = $DT_NODE_RANK ] && DT_HOST=$h; n=$((n+1)); done; fi\n"
    "unset DT_PLACEMENT_FIRST_RANKS DT_PLACEMENT_HOSTS n f h\n";

/* The script's first lines, before the identity part: a signal that
 * comes before the worker runs is kept, and passed on once it does. By
 * default it killed this shell (the job failed with "signal 12" for an
 * early Ctrl-Z), or, once the worker ran, left it, in its own session,
 * running unwatched. %s: relay_early. */
static const char common_head[] =
    "dt_stop=\n"
    "trap 'dt_stop=1' TERM INT HUP\n"
    "%s";

static const char common_tail[] =
    /* The worker runs in a session (so a process group) of its own, and
     * a stop signal for this shell goes to that whole group: the
     * front-end signals only the process it started, and whatever the
     * worker started must not outlive it. */
    /* The front-end's SIGKILL follows its SIGTERM soon (mpirun: 1 s), and
     * on a busy host this shell may not have passed the stop on by then:
     * the worker, in its own session, ran on. So where setpriv can, the
     * kernel sends the worker SIGTERM when this shell dies. */
    "dt_pd=\n"
    "if command -v setpriv >/dev/null 2>&1 && "
    "setpriv --pdeathsig TERM -- true 2>/dev/null; then "
    "dt_pd='setpriv --pdeathsig TERM --'; fi\n"
    /* A job started with & reads /dev/null unless told otherwise: the
     * worker keeps the stdin the front-end gave (rank 0: dtctl's, passed
     * on by mpirun or srun --input=0). A closed stdin gives /dev/null
     * (a failed `exec 3<&0` would end this shell: `command` keeps it). */
    "{ command exec 3<&0; } 2>/dev/null || exec 3</dev/null\n"
    "dt_sid=\n"
    "command -v setsid >/dev/null 2>&1 && dt_sid=setsid\n"
    "$dt_sid $dt_pd \"$@\" <&3 3<&- &\n"
    "exec 3<&-\n"
    "p=$!\n"
    /* A SIGTERM that reaches the worker before it called setsid (a stop
     * kept from before it ran, passed on right after the fork) is caught
     * by this shell's trap handler, which it inherited, and lost at its
     * exec: the worker ran on. Wait (at most 1 s) for its group. */
    "dt_in_session() { dt_i=0; while ! kill -0 -$p 2>/dev/null && "
    "kill -0 $p 2>/dev/null && [ $dt_i -lt 50 ]; do sleep 0.02; "
    "dt_i=$((dt_i + 1)); done; }\n"
    "dt_term() { [ -z \"$dt_sid\" ] || dt_in_session; "
    "kill -TERM -$p 2>/dev/null || kill -TERM $p 2>/dev/null; }\n"
    "trap dt_term TERM INT HUP\n"
    "%s" /* relay_late: its traps, before the kept signals are passed on */
    "[ -z \"$dt_stop\" ] || dt_term\n"
    "%s" /* relay_hold */
    "while :; do wait $p; s=$?; kill -0 $p 2>/dev/null || break; done\n"
    /* A trapped signal (a stop, USR1) cuts `wait` short with 128+its
     * number, and the trap's own waits (dt_in_session's sleeps) may reap
     * the worker meanwhile: s was then 143 or 138, not the worker's 75 of
     * a preemption checkpoint. The shell kept the status: ask again (127:
     * it had none to keep, s is the worker's). */
    "wait $p 2>/dev/null; dt_w=$?; [ $dt_w = 127 ] || s=$dt_w\n"
    /* what the worker left running in its group ends with it */
    "kill -KILL -$p 2>/dev/null\n"
    "printf '" PROLOGUE_MARKER "%s:%%d:%%s\\n' \"$s\" \"$DT_HOST\" >&2\n"
    /* Ended on dtctl's request (SIGUSR1, relay_early): the marker has the
     * status; a non-zero exit would make mpirun kill the ranks still
     * writing their checkpoints 1 s later (odls_base_sigkill_timeout). */
    "[ -z \"$dt_asked\" ] || exit 0\n"
    "exit $s\n";

/* A program this host cannot run is said here, with the rank, the host
 * and what to do (exec_check.h): setpriv's or setsid's own "failed to
 * execute" (the worker's exec) named neither, and no one typed setpriv.
 * After the identity part (DT_RANK, DT_HOST); the marker carries the
 * shell's usual status (127 not found, 126 cannot run). %s: nonce. */
static const char exec_check_tail[] =
    "dt_cannot_exec \"$@\" || { dt_s=$?; "
    "printf '" PROLOGUE_MARKER "%s:%%d:%%s\\n' $dt_s \"$DT_HOST\" >&2; "
    "exit $dt_s; }\n";

dt_status_t prologue_nonce(char out[PROLOGUE_NONCE_LEN + 1])
{
    unsigned char b[PROLOGUE_NONCE_LEN / 2];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
        return DT_ERR_IO;
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return DT_OK;
}

/* relay_stops: the front-end cannot stop the worker itself (mpirun's
 * SIGTSTP becomes a SIGSTOP of this shell's group, which the worker, in
 * a session of its own, is not in), so it sends SIGUSR2 (Ctrl-Z) and
 * SIGCONT (fg), which this shell passes on to the worker's group, and
 * says it did on stderr ("dt-ctl:<nonce>:STOP"): the launcher learns
 * which ranks stopped. It ends the job with SIGUSR1, passed on as SIGTERM:
 * mpirun's own SIGTERM reaches the ranks only after its
 * odls_base_sigkill_timeout (1 s), and its SIGKILL 1 s later cut a
 * preemption checkpoint short; this way dtctl's kill_grace rules. A
 * signal before the worker runs is kept (relay_early comes first). */
static const char relay_early[] =
    "dt_hold= dt_asked=\n"
    "trap 'dt_hold=1' USR2\n"
    "trap 'dt_hold=; printf \"" PROLOGUE_CTL_MARKER "%s:CONT\\n\" >&2' CONT\n"
    "trap 'dt_asked=1 dt_stop=1' USR1\n";
static const char relay_late[] =
    "dt_ctl() { kill -$1 -$p 2>/dev/null || kill -$1 $p 2>/dev/null; "
    "printf '" PROLOGUE_CTL_MARKER "%s:%%s\\n' $1 >&2; }\n"
    "trap 'dt_ctl STOP' USR2\n"
    "trap 'dt_ctl CONT' CONT\n"
    "trap 'dt_asked=1; dt_term' USR1\n";
static const char relay_hold[] = "[ -z \"$dt_hold\" ] || dt_ctl STOP\n";

/* asprintf that leaves *out NULL on failure (asprintf's is undefined). */
static char *format(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

dt_status_t prologue_script(const char *identity, const char *nonce,
                            int relay_stops, char **out)
{
    /* the nonce is hex: safe inside the single-quoted formats */
    char *early = format(relay_early, nonce), *late = format(relay_late, nonce);
    char *head = NULL, *tail = NULL;
    char *check_tail = format(exec_check_tail, nonce);
    char *check = check_tail
                      ? format("%s\n%s", DT_EXEC_CHECK_FN, check_tail)
                      : NULL;
    free(check_tail);
    if (early && late) {
        head = format(common_head, relay_stops ? early : "");
        tail = format(common_tail, relay_stops ? late : "",
                      relay_stops ? relay_hold : "", nonce);
    }
    *out = head && check && tail
               ? format("%s%s%s%s", head, identity, check, tail)
               : NULL;
    free(early);
    free(late);
    free(head);
    free(check);
    free(tail);
    return *out ? DT_OK : DT_ERR_NOMEM;
}

/* A growing "NAME=w1 w2 ..." string. */
typedef struct words {
    char *s;
    size_t len, cap;
    int n;
} words_t;

static int add_word(words_t *w, const char *word)
{
    size_t n = strlen(word);
    if (w->len + n + 2 > w->cap) {
        size_t c = w->cap ? w->cap * 2 : 256;
        while (c < w->len + n + 2)
            c *= 2;
        char *p = realloc(w->s, c);
        if (!p)
            return -1;
        w->s = p;
        w->cap = c;
    }
    if (w->n++ > 1) /* the name= comes first, then words with spaces */
        w->s[w->len++] = ' ';
    memcpy(w->s + w->len, word, n + 1);
    w->len += n;
    return 0;
}

dt_status_t prologue_placement_env(const dt_launch_spec_t *spec,
                                   char **first_ranks, char **hosts)
{
    words_t f = {0}, h = {0};
    int ok = add_word(&f, "DT_PLACEMENT_FIRST_RANKS=") == 0 &&
             add_word(&h, "DT_PLACEMENT_HOSTS=") == 0;
    for (int r = 0; ok && r < spec->np; r++) {
        const dt_placement_t *p = &spec->placement[r];
        if (p->local_rank != 0)
            continue; /* not the first rank of its host */
        char num[16];
        snprintf(num, sizeof num, "%d", r);
        ok = add_word(&f, num) == 0 &&
             add_word(&h, spec->hosts->hosts[p->host].name) == 0;
    }
    if (!ok) {
        free(f.s);
        free(h.s);
        return DT_ERR_NOMEM;
    }
    *first_ranks = f.s;
    *hosts = h.s;
    return DT_OK;
}

int prologue_parse_marker(const char *line, size_t len, const char *nonce,
                          int *status, const char **host, size_t *host_len)
{
    size_t ml = strlen(PROLOGUE_MARKER), nl = strlen(nonce);
    if (len < ml + nl + 3 || memcmp(line, PROLOGUE_MARKER, ml) != 0 ||
        memcmp(line + ml, nonce, nl) != 0 || line[ml + nl] != ':')
        return 0;
    size_t i = ml + nl + 1;
    int v = 0, digits = 0;
    while (i < len && line[i] >= '0' && line[i] <= '9' && digits < 4) {
        v = v * 10 + (line[i++] - '0');
        digits++;
    }
    if (!digits || i >= len || line[i] != ':')
        return 0;
    *status = v;
    *host = line + i + 1;
    *host_len = len - i - 1;
    return 1;
}

int prologue_parse_ctl(const char *line, size_t len, const char *nonce,
                       int *signo)
{
    size_t ml = strlen(PROLOGUE_CTL_MARKER), nl = strlen(nonce);
    if (len != ml + nl + 5 || memcmp(line, PROLOGUE_CTL_MARKER, ml) != 0 ||
        memcmp(line + ml, nonce, nl) != 0 || line[ml + nl] != ':')
        return 0;
    const char *what = line + ml + nl + 1;
    if (memcmp(what, "STOP", 4) == 0)
        *signo = SIGSTOP;
    else if (memcmp(what, "CONT", 4) == 0)
        *signo = SIGCONT;
    else
        return 0;
    return 1;
}

/* 1: an exit or ctl marker starts at line[at] and ends with the line. */
static int marker_from(const char *line, size_t len, size_t at,
                       const char *nonce)
{
    int status, signo;
    const char *host;
    size_t host_len;
    return prologue_parse_marker(line + at, len - at, nonce, &status, &host,
                                 &host_len) ||
           prologue_parse_ctl(line + at, len - at, nonce, &signo);
}

size_t prologue_marker_at(const char *line, size_t len, const char *nonce)
{
    size_t nl = strlen(nonce);
    const char *const markers[] = {PROLOGUE_MARKER, PROLOGUE_CTL_MARKER};
    const char *p = line;
    while (nl && (p = memmem(p, len - (size_t)(p - line), nonce, nl))) {
        size_t q = (size_t)(p - line);
        for (size_t k = 0; k < sizeof markers / sizeof markers[0]; k++) {
            size_t ml = strlen(markers[k]);
            if (q >= ml && memcmp(line + q - ml, markers[k], ml) == 0 &&
                marker_from(line, len, q - ml, nonce))
                return q - ml;
        }
        p++;
    }
    return len;
}
