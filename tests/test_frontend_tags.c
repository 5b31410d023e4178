/* test_frontend_tags.c — the launchers' front-end output parsing: mpirun
 * --tag-output (tags at chunk starts, also in mid-line), srun --label,
 * tags split across reads, line assembly and exit markers; the rank
 * prologue under /bin/sh (a closed stdin; a program the host cannot run;
 * Ctrl-Z and dtctl's stop relayed to the worker, also when they come
 * before it runs). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../plugins/launcher/common/frontend/frontend.h"
#include "../plugins/launcher/common/frontend/prologue.h"
#include "../plugins/launcher/common/frontend/rank_lines.h"
#include "../plugins/launcher/common/frontend/tag_stream.h"

/* Lines collected as "rank fd text|" */
static char got[4096];

static void on_line(void *arg, int rank, int fd, const char *line, size_t len,
                    int complete)
{
    (void)arg;
    char one[512];
    snprintf(one, sizeof one, "%d %d %.*s%s|", rank, fd, (int)len, line,
             complete ? "" : "~");
    strncat(got, one, sizeof got - strlen(got) - 1);
}

static void sink(void *arg, int rank, int fd, const char *data, size_t len)
{
    rank_lines_feed(arg, rank, fd, data, len);
}

/* Feed text in pieces of `step` bytes through one stream. */
static void feed(frontend_tags_t style, int pipe_fd, const char *text,
                 size_t step)
{
    rank_lines_t *l;
    assert_int_equal(rank_lines_new(4, on_line, NULL, &l), DT_OK);
    tag_stream_t s;
    tag_stream_init(&s, style, pipe_fd);
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        assert_int_equal(tag_stream_feed(&s, text + i, k, 0, sink, l), DT_OK);
    }
    assert_int_equal(tag_stream_feed(&s, NULL, 0, 1, sink, l), DT_OK);
    rank_lines_flush(l);
    tag_stream_free(&s);
    rank_lines_free(l);
}

static void test_ompi_tags(void **state)
{
    (void)state;
    const char *text = "[1,0]<stdout>:hello\n"
                       "[1,2]<stderr>:oops\n"
                       "[1,1]<stdout>:PM[1,3]<stdout>:x\n"
                       "[1,1]<stdout>:IX\n"
                       "mpirun says\n";
    /* every split of the input gives the same lines */
    for (size_t step = 1; step <= strlen(text); step++) {
        got[0] = '\0';
        feed(FRONTEND_TAGS_OMPI, 1, text, step);
        assert_string_equal(got, "0 1 hello|2 2 oops|3 1 x|1 1 PMIX|"
                                 "-1 1 mpirun says|");
    }
}

static void test_slurm_labels(void **state)
{
    (void)state;
    const char *text = " 0: a\n10: b: c\nsrun: error: x\n 3: [1,0]<stdout>:y";
    for (size_t step = 1; step <= strlen(text); step++) {
        got[0] = '\0';
        feed(FRONTEND_TAGS_SLURM, 2, text, step);
        /* rank 10 is outside np=4: the front-end's */
        assert_string_equal(got, "0 2 a|-1 2 b: c|-1 2 srun: error: x|"
                                 "3 2 [1,0]<stdout>:y~|");
    }
}

static void test_tag_match_partial(void **state)
{
    (void)state;
    int rank, fd;
    size_t tl;
    assert_int_equal(tag_match(FRONTEND_TAGS_OMPI, "[12,3]<std", 10, &rank,
                               &fd, &tl), -1);
    assert_int_equal(tag_match(FRONTEND_TAGS_OMPI, "[12,3]<stdx", 11, &rank,
                               &fd, &tl), 0);
    assert_int_equal(tag_match(FRONTEND_TAGS_OMPI, "[12,3]<stddiag>:z", 17,
                               &rank, &fd, &tl), 1);
    assert_int_equal(rank, 3);
    assert_int_equal(fd, 2);
    assert_int_equal(tl, 16);
    assert_int_equal(tag_match(FRONTEND_TAGS_SLURM, "  12", 4, &rank, &fd,
                               &tl), -1);
    assert_int_equal(tag_match(FRONTEND_TAGS_SLURM, "x: 1", 4, &rank, &fd,
                               &tl), 0);
}

static void test_marker(void **state)
{
    (void)state;
    int status;
    const char *host;
    size_t hl;
    const char *ok = "dt-exit:abcd:137:node7";
    assert_int_equal(prologue_parse_marker(ok, strlen(ok), "abcd", &status,
                                           &host, &hl), 1);
    assert_int_equal(status, 137);
    assert_int_equal(hl, 5);
    assert_memory_equal(host, "node7", 5);
    const char *wrong = "dt-exit:abce:1:h";
    assert_int_equal(prologue_parse_marker(wrong, strlen(wrong), "abcd",
                                           &status, &host, &hl), 0);
    const char *nonum = "dt-exit:abcd::h";
    assert_int_equal(prologue_parse_marker(nonum, strlen(nonum), "abcd",
                                           &status, &host, &hl), 0);
}

/* The rank prologue under /bin/sh with stdin closed (a front-end that
 * gives its ranks none): the worker still runs and its exit is marked
 * (a failed `exec 3<&0` ended the prologue before the worker). */
static void test_prologue_closed_stdin(void **state)
{
    (void)state;
    char *script = NULL, dir[] = "/tmp/dt-prologue.XXXXXX", cmd[256];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(prologue_script("DT_HOST=h7; export DT_HOST\n",
                                     "abcd", 0, &script), DT_OK);
    snprintf(cmd, sizeof cmd, "%s/p.sh", dir);
    FILE *f = fopen(cmd, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    free(script);
    snprintf(cmd, sizeof cmd,
             "sh %s/p.sh sh -c 'echo ran; cat' <&- >%s/out 2>&1", dir, dir);
    assert_int_equal(system(cmd), 0);
    char out[512] = "";
    snprintf(cmd, sizeof cmd, "%s/out", dir);
    f = fopen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    if (!strstr(out, "ran\n") || !strstr(out, PROLOGUE_MARKER "abcd:0:h7"))
        fail_msg("prologue with stdin closed printed: %s", out);
}

/* A program the rank's host cannot run: the prologue says which rank, on
 * which host, why and what to do, and marks the shell's status (127 not
 * found, 126 cannot run). It once left it to setpriv ("setpriv: failed to
 * execute X"), naming neither rank nor host. Both relay forms (mpi's,
 * slurm's). */
static void prologue_refuses(int relay_stops, const char *prog, int status,
                             const char *why)
{
    char *script = NULL, dir[] = "/tmp/dt-prologue.XXXXXX", cmd[512];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(prologue_script("DT_RANK=3 DT_HOST=h7; export DT_RANK "
                                     "DT_HOST\n",
                                     "abcd", relay_stops, &script), DT_OK);
    snprintf(cmd, sizeof cmd, "%s/p.sh", dir);
    FILE *f = fopen(cmd, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    free(script);
    /* a plain file, not executable; a directory */
    snprintf(cmd, sizeof cmd, "cd %s && : >plain && mkdir sub", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && PATH=/usr/bin:/bin sh p.sh %s arg "
             "</dev/null >out 2>&1; echo \"rc=$?\" >>out",
             dir, prog);
    assert_int_equal(system(cmd), 0);
    char out[2048] = "", want[256];
    snprintf(cmd, sizeof cmd, "%s/out", dir);
    f = fopen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(want, sizeof want,
             "dt: error: rank 3 on h7: cannot execute '%s': %s", prog, why);
    if (!strstr(out, want))
        fail_msg("want '%s' in:\n%s", want, out);
    snprintf(want, sizeof want, PROLOGUE_MARKER "abcd:%d:h7\nrc=%d\n", status,
             status);
    if (!strstr(out, want) || strstr(out, "setpriv") || strstr(out, "setsid"))
        fail_msg("want the marker and status %d, and no setpriv/setsid line, "
                 "in:\n%s", status, out);
}

static void test_prologue_program_missing(void **state)
{
    (void)state;
    for (int relay = 0; relay <= 1; relay++) {
        prologue_refuses(relay, "dt-no-such-program", 127,
                         "command not found in PATH=/usr/bin:/bin: install "
                         "it there, or give its full path");
        prologue_refuses(relay, "./missing.py", 127, "no such file");
        prologue_refuses(relay, "./plain", 126,
                         "permission denied: make it executable (chmod +x");
        prologue_refuses(relay, "sub", 127, "command not found");
        prologue_refuses(relay, "./sub", 126, "it is a directory");
    }
}

static void test_ctl_marker(void **state)
{
    (void)state;
    int signo = 0;
    const char *stop = "dt-ctl:abcd:STOP", *cont = "dt-ctl:abcd:CONT";
    assert_int_equal(prologue_parse_ctl(stop, strlen(stop), "abcd", &signo), 1);
    assert_int_equal(signo, SIGSTOP);
    assert_int_equal(prologue_parse_ctl(cont, strlen(cont), "abcd", &signo), 1);
    assert_int_equal(signo, SIGCONT);
    const char *other = "dt-ctl:abce:STOP", *more = "dt-ctl:abcd:STOPX";
    assert_int_equal(prologue_parse_ctl(other, strlen(other), "abcd", &signo),
                     0);
    assert_int_equal(prologue_parse_ctl(more, strlen(more), "abcd", &signo), 0);
}

/* Ctrl-Z relayed through the prologue (mpirun's case): SIGUSR2 to the
 * prologue shell stops the worker, in a session of its own, and SIGCONT
 * continues it; each is confirmed on stderr. The shell itself does not
 * stop (a SIGSTOP of it left the worker running), and TERM still ends
 * the job. The loops only bound a hang (10 s). */
static const char relay_helpers[] =
    "st() { sed -n 's/^[0-9]* ([^)]*) \\([A-Z]\\) .*/\\1/p' /proc/$1/stat; }\n"
    "upto() { i=0; while ! eval \"$1\" && [ $i -lt 200 ]; do sleep 0.05; "
    "i=$((i + 1)); done; eval \"$1\"; }\n"
    "ran() { [ \"$(st $1)\" != T ] && echo runs || echo stopped; }\n"
    /* the children of process $1 (no pgrep on a minimal system) */
    "kids() { sed -n \"s/^\\([0-9]*\\) ([^)]*) [A-Z] $1 .*/\\1/p\" "
    "/proc/[0-9]*/stat 2>/dev/null; }\n";
static const char relay_check[] =
    "sh $D/p.sh sh -c 'echo $$ >'$D/w'; exec sleep 30' 2>$D/err & s=$!\n"
    "upto '[ -s $D/w ]' || { echo no-worker; exit; }\n"
    "w=$(cat $D/w)\n"
    "kill -USR2 $s\n"
    "upto 'grep -q dt-ctl:abcd:STOP $D/err'\n"
    /* a SIGSTOP takes effect when its target next runs: under load, a
     * moment after kill(2) returned */
    "upto '[ \"$(st $w)\" = T ]'\n"
    "echo \"stop: worker $(ran $w), shell $(ran $s)\"\n"
    "kill -CONT $s\n"
    "upto 'grep -q dt-ctl:abcd:CONT $D/err'\n"
    "upto '[ \"$(st $w)\" != T ]'\n"
    "echo \"cont: worker $(ran $w)\"\n"
    "kill -TERM $s; wait $s; echo \"exit: $?\"\n"
    "grep -c dt-exit:abcd:143 $D/err\n";

/* Run check (sh, given D: a fresh directory) against the prologue made
 * of identity with relay_stops set, written to $D/p.sh; its output. */
static void run_prologue_check(const char *identity, const char *check,
                               char *out, size_t len)
{
    char *script = NULL, dir[] = "/tmp/dt-prologue.XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(prologue_script(identity, "abcd", 1, &script), DT_OK);
    snprintf(path, sizeof path, "%s/p.sh", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    free(script);
    snprintf(path, sizeof path, "%s/check.sh", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(relay_helpers, f);
    fputs(check, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "D=%s sh %s/check.sh", dir, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    pclose(p);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_prologue_relays_stop(void **state)
{
    (void)state;
    char out[512];
    run_prologue_check("DT_HOST=h7; export DT_HOST\n", relay_check, out,
                       sizeof out);
    const char *want = "stop: worker stopped, shell runs\ncont: worker runs\n"
                       "exit: 143\n1\n";
    if (strcmp(out, want) != 0)
        fail_msg("relayed Ctrl-Z: want\n%s got\n%s", want, out);
}

/* An identity part that says it runs ($D/in) and waits for $D/go: a
 * signal sent then reaches the prologue before the worker runs. */
static const char blocking_identity[] =
    "echo $$ >$D/in; i=0\n"
    "while [ ! -e $D/go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); "
    "done\n"
    "DT_HOST=h7; export DT_HOST\n";

/* Ctrl-Z (SIGUSR2) while the prologue is still in its identity part: it
 * is kept, and the worker is stopped as soon as it runs (by default the
 * shell died: the job failed with "signal 12"). */
static const char early_stop_check[] =
    "sh $D/p.sh sleep 30 2>$D/err & s=$!\n"
    "upto '[ -s $D/in ]' || { echo no-identity; exit; }\n"
    "kill -USR2 $s; touch $D/go\n"
    "upto 'grep -q dt-ctl:abcd:STOP $D/err || [ \"$(st $s)\" = Z ]'\n"
    "[ \"$(st $s)\" = Z ] && { wait $s; echo \"shell ended: $?\"; exit; }\n"
    "w=$(kids $s)\n"
    "upto '[ \"$(st $w)\" = T ]'\n"
    "echo \"early stop: worker $(ran $w), shell $(ran $s)\"\n"
    "kill -CONT $s\n"
    "upto 'grep -q dt-ctl:abcd:CONT $D/err'\n"
    "kill -TERM $s; wait $s; echo \"exit: $?\"\n";

static void test_prologue_keeps_early_stop(void **state)
{
    (void)state;
    char out[512];
    run_prologue_check(blocking_identity, early_stop_check, out, sizeof out);
    const char *want = "early stop: worker stopped, shell runs\nexit: 143\n";
    if (strcmp(out, want) != 0)
        fail_msg("Ctrl-Z before the worker ran: want\n%s got\n%s", want,
                 out);
}

/* dtctl's stop (SIGUSR1, forwarded by mpirun) reaches the worker as
 * SIGTERM, also when it comes during the identity part (then the worker
 * may end by it before its trap is set: 143); the worker's status (75:
 * preempted, its checkpoint written) is in the marker, and
 * the prologue exits 0 so that mpirun does not kill the ranks still
 * writing theirs. The worker's loop only bounds a hang (10 s). The
 * worker sets its trap before it says it runs: a SIGTERM between the two
 * ended it with 143 (a rare failure on a busy machine). */
static const char graceful_stop_check[] =
    "W='trap \"exit 75\" TERM; echo $$ >'$D/w'; i=0; "
    "while [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done; exit 9'\n"
    "sh $D/p.sh sh -c \"$W\" 2>$D/err1 & s=$!\n"
    "upto '[ -s $D/in ]' || { echo no-identity; exit; }\n"
    "kill -USR1 $s; touch $D/go\n"
    "wait $s; echo \"early: exit $?, $(grep -cE 'dt-exit:abcd:(75|143):h7' $D/err1)\"\n"
    "rm -f $D/w\n"
    "sh $D/p.sh sh -c \"$W\" 2>$D/err2 & s=$!\n"
    "upto '[ -s $D/w ]' || { echo no-worker; exit; }\n"
    "kill -USR1 $s\n"
    "wait $s; echo \"late: exit $?, $(grep -c dt-exit:abcd:75:h7 $D/err2)\"\n";

static void test_prologue_relays_graceful_stop(void **state)
{
    (void)state;
    char out[512];
    run_prologue_check(blocking_identity, graceful_stop_check, out,
                       sizeof out);
    const char *want = "early: exit 0, 1\nlate: exit 0, 1\n";
    if (strcmp(out, want) != 0)
        fail_msg("dtctl's stop relayed: want\n%s got\n%s", want, out);
}

/* A stop that cuts the prologue's `wait` short (128+its number) while the
 * worker ends by itself: the marker keeps the worker's status, not the
 * shell's 138. The trap's own waits reaped the worker, and the prologue
 * took 138 for its status (a preemption's 75 lost, about 1 in 15 stops
 * of a worker that ends at once). With a setsid that makes no session
 * the trap waits (sleeps) for the worker's session, which never comes,
 * until the worker exits, 0.5 s after it started or at the trap's TERM
 * (a test slow to send USR1 under load), within the trap's 1 s of
 * sleeps: its end is reaped inside the trap every time. */
static const char interrupted_wait_check[] =
    "mkdir $D/bin && ln -s \"$(command -v sh)\" $D/bin/sh && "
    "ln -s \"$(command -v sleep)\" $D/bin/sleep && "
    "printf '#!/bin/sh\\nexec \"$@\"\\n' >$D/bin/setsid && "
    "chmod +x $D/bin/setsid || { echo no-bin; exit; }\n"
    "PATH=$D/bin sh $D/p.sh sh -c 'trap \"exit 75\" TERM; echo $$ >'$D/w'; "
    "sleep 0.5; exit 75' "
    "2>$D/err & s=$!\n"
    "upto '[ -s $D/w ]' || { echo no-worker; exit; }\n"
    "kill -USR1 $s\n"
    "wait $s; echo \"exit: $?, $(grep -o 'dt-exit:abcd:[0-9]*' $D/err)\"\n";

static void test_prologue_stop_keeps_worker_status(void **state)
{
    (void)state;
    char out[512];
    run_prologue_check("DT_HOST=h7; export DT_HOST\n", interrupted_wait_check,
                       out, sizeof out);
    const char *want = "exit: 0, dt-exit:abcd:75\n";
    if (strcmp(out, want) != 0)
        fail_msg("a stop during the prologue's wait: want\n%s got\n%s", want,
                 out);
}

/* The worker's output as the front-end passes it on ("rank fd text"). */
static char shown[1024];

static void on_output(void *arg, int rank, int fd, const char *data,
                      size_t len)
{
    (void)arg;
    char one[512];
    snprintf(one, sizeof one, "%d %d %.*s", rank, fd, (int)len, data);
    strncat(shown, one, sizeof shown - strlen(shown) - 1);
}

/* A front-end (sh standing in for mpirun --tag-output) printing what a
 * rank wrote: its unfinished stderr line (a progress bar, no newline),
 * then the prologue's markers, each after its own tag. */
static frontend_t *start_fake(const char *text)
{
    char script[512];
    snprintf(script, sizeof script, "printf '%s'; exec sleep 30", text);
    const char *argv[] = {"sh", "-c", script, NULL};
    extern char **environ;
    frontend_args_t a = {.label = "fake", .argv = argv, .envp = environ,
                         .tags = FRONTEND_TAGS_OMPI, .nonce = "abcd",
                         .np = 1, .output = on_output};
    frontend_t *fe = NULL;
    shown[0] = '\0';
    assert_int_equal(frontend_start(&a, &fe), DT_OK);
    return fe;
}

/* A marker after a worker's unfinished line still counts, and the
 * worker's text is shown without it: a stop's confirmation was missed
 * (dtctl waited 5 s and said the worker ran on), an exit was not the
 * rank's (nor named), and the nonce reached the output. */
static void test_marker_after_unfinished_line(void **state)
{
    (void)state;
    frontend_t *fe = start_fake("[1,0]<stderr>:40%%[1,0]<stderr>:"
                                "dt-ctl:abcd:STOP\\n");
    frontend_expect_acks(fe, SIGSTOP, SIGUSR2);
    char missing[32];
    /* the timeout only bounds a miss; a seen confirmation returns 0 */
    assert_int_equal(frontend_await_acks(fe, 3000, missing, sizeof missing),
                     0);
    assert_string_equal(shown, "0 2 40%");
    frontend_kill_and_reap(fe);
    frontend_free(fe);

    fe = start_fake("[1,0]<stderr>:50%%[1,0]<stderr>:"
                    "dt-exit:abcd:3:h7\\n");
    dt_worker_exit_t ev;
    assert_int_equal(frontend_wait(fe, 3000, &ev), DT_OK);
    assert_int_equal(ev.rank, 0);
    assert_int_equal(ev.code, 3);
    assert_string_equal(ev.host, "h7");
    assert_null(strstr(shown, "dt-exit"));
    frontend_kill_and_reap(fe);
    frontend_free(fe);
}

/* A front-end whose one rank confirms relayed requests as the prologue
 * does: SIGUSR2 (a stop) with "stop" and its STOP marker, SIGCONT with
 * "cont" and its CONT marker; the first of each may confirm more (an
 * older request that reached the rank late). "ready" once its traps are
 * set. */
#define SAY_STOP "[1,0]<stdout>:stop\\n[1,0]<stderr>:dt-ctl:abcd:STOP\\n"
#define SAY_CONT "[1,0]<stdout>:cont\\n[1,0]<stderr>:dt-ctl:abcd:CONT\\n"
#define FAKE_RANK(first_stop, first_cont)                                   \
    "s=0 c=0\n"                                                             \
    "trap 's=$((s + 1)); if [ $s = 1 ]; then printf \"" first_stop "\"; "   \
    "else printf \"" SAY_STOP "\"; fi' USR2\n"                              \
    "trap 'c=$((c + 1)); if [ $c = 1 ]; then printf \"" first_cont "\"; "   \
    "else printf \"" SAY_CONT "\"; fi' CONT\n"                              \
    "printf '[1,0]<stdout>:ready\\n'\n"                                     \
    "i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done\n"

static int count_shown(const char *what)
{
    int n = 0;
    for (const char *p = shown; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* Read the front-end's output (at most 5 s) until `what` was shown
 * `times` times. */
static void read_until(frontend_t *fe, const char *what, int times)
{
    dt_worker_exit_t ev;
    for (int i = 0; i < 100 && count_shown(what) < times; i++)
        frontend_wait(fe, 50, &ev);
}

static frontend_t *start_fake_rank(const char *script)
{
    const char *argv[] = {"sh", "-c", script, NULL};
    extern char **environ;
    frontend_args_t a = {.label = "fake", .argv = argv, .envp = environ,
                         .tags = FRONTEND_TAGS_OMPI, .nonce = "abcd",
                         .np = 1, .output = on_output};
    frontend_t *fe = NULL;
    shown[0] = '\0';
    assert_int_equal(frontend_start(&a, &fe), DT_OK);
    read_until(fe, "0 1 ready", 1);
    assert_int_equal(count_shown("0 1 ready"), 1);
    return fe;
}

static void stop_fake(frontend_t *fe)
{
    frontend_kill_and_reap(fe);
    frontend_free(fe);
}

/* fg's continue, then a stop relayed before it that reached the rank
 * only now (its shell was stopped or slow): the worker stayed stopped
 * for good. The continue is asked for again, and confirmed. */
static void test_relay_late_stop_after_continue(void **state)
{
    (void)state;
    frontend_t *fe = start_fake_rank(
        FAKE_RANK(SAY_STOP, SAY_CONT "[1,0]<stderr>:dt-ctl:abcd:STOP\\n"));
    frontend_expect_acks(fe, SIGCONT, SIGCONT);
    frontend_signal(fe, SIGCONT);
    char missing[32];
    assert_int_equal(frontend_await_acks(fe, 3000, missing, sizeof missing),
                     0);
    assert_int_equal(count_shown("0 1 cont"), 2);
    stop_fake(fe);
}

/* The same once the continue was confirmed: a late stop seen while dtctl
 * only reads the output (frontend_wait) is undone too; so is one before
 * any request (the ranks start running). */
static void test_relay_late_stop_while_running(void **state)
{
    (void)state;
    frontend_t *fe = start_fake_rank(FAKE_RANK(SAY_STOP, SAY_CONT));
    frontend_signal(fe, SIGUSR2); /* mpirun forwarding a stop, late */
    read_until(fe, "0 1 cont", 1);
    assert_int_equal(count_shown("0 1 stop"), 1);
    assert_int_equal(count_shown("0 1 cont"), 1);
    frontend_expect_acks(fe, SIGSTOP, SIGUSR2);
    frontend_signal(fe, SIGUSR2);
    char missing[32];
    assert_int_equal(frontend_await_acks(fe, 3000, missing, sizeof missing),
                     0);
    frontend_expect_acks(fe, SIGCONT, SIGCONT);
    frontend_signal(fe, SIGCONT);
    assert_int_equal(frontend_await_acks(fe, 3000, missing, sizeof missing),
                     0);
    frontend_signal(fe, SIGUSR2);
    read_until(fe, "0 1 cont", 3);
    assert_int_equal(count_shown("0 1 cont"), 3);
    stop_fake(fe);
}

/* The other way: while a stop is awaited, a rank confirms it and then an
 * older continue: it is not counted as stopped, and the stop is asked
 * for again. */
static void test_relay_late_continue_during_stop(void **state)
{
    (void)state;
    frontend_t *fe = start_fake_rank(
        FAKE_RANK(SAY_STOP "[1,0]<stderr>:dt-ctl:abcd:CONT\\n", SAY_CONT));
    frontend_expect_acks(fe, SIGSTOP, SIGUSR2);
    frontend_signal(fe, SIGUSR2);
    char missing[32];
    assert_int_equal(frontend_await_acks(fe, 3000, missing, sizeof missing),
                     0);
    assert_int_equal(count_shown("0 1 stop"), 2);
    stop_fake(fe);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ompi_tags),
        cmocka_unit_test(test_slurm_labels),
        cmocka_unit_test(test_tag_match_partial),
        cmocka_unit_test(test_marker),
        cmocka_unit_test(test_prologue_closed_stdin),
        cmocka_unit_test(test_prologue_program_missing),
        cmocka_unit_test(test_ctl_marker),
        cmocka_unit_test(test_prologue_relays_stop),
        cmocka_unit_test(test_prologue_keeps_early_stop),
        cmocka_unit_test(test_prologue_relays_graceful_stop),
        cmocka_unit_test(test_prologue_stop_keeps_worker_status),
        cmocka_unit_test(test_marker_after_unfinished_line),
        cmocka_unit_test(test_relay_late_stop_after_continue),
        cmocka_unit_test(test_relay_late_stop_while_running),
        cmocka_unit_test(test_relay_late_continue_during_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
