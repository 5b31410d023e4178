/* test_output_lines.c — dtctl's line assembler. dtctl's stdout is a
 * SOCK_SEQPACKET socket here: every write() arrives as one message, so the
 * test sees that each line leaves in exactly one write. */
#define _GNU_SOURCE /* posix_openpt, ptsname */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/crash_site.h"
#include "cli/output_lines.h"

typedef struct fx {
    int out[2], err[2]; /* [0] dtctl writes, [1] the test reads */
    output_lines_t *o;
} fx_t;

static fx_t *make(int np, size_t max_line)
{
    static fx_t f;
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, f.out), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, f.err), 0);
    assert_int_equal(output_lines_new(np, f.out[0], f.err[0], max_line, &f.o),
                     0);
    return &f;
}

static void done(fx_t *f)
{
    output_lines_free(f->o);
    close(f->out[0]);
    close(f->out[1]);
    close(f->err[0]);
    close(f->err[1]);
}

/* The next write() dtctl made on that socket, or "" when there is none. */
static const char *next_write(int fd)
{
    static char buf[65536];
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void feed(fx_t *f, int rank, int fd, const char *s)
{
    output_lines_feed(f->o, rank, fd, s, strlen(s));
}

static void test_lines_across_chunks(void **state)
{
    (void)state;
    fx_t *f = make(4, 0);
    feed(f, 3, 1, "hel");
    assert_string_equal(next_write(f->out[1]), "");
    feed(f, 3, 1, "lo\nwor");
    feed(f, 3, 1, "ld\n\n");
    assert_string_equal(next_write(f->out[1]), "[3] hello\n");
    assert_string_equal(next_write(f->out[1]), "[3] world\n");
    assert_string_equal(next_write(f->out[1]), "[3] \n");
    assert_string_equal(next_write(f->out[1]), "");
    done(f);
}

static void test_ranks_and_streams_do_not_mix(void **state)
{
    (void)state;
    fx_t *f = make(2, 0);
    feed(f, 0, 1, "a");
    feed(f, 1, 1, "b\n");
    feed(f, 0, 2, "error ");
    feed(f, 0, 1, "c\n");
    feed(f, 0, 2, "text\n");
    assert_string_equal(next_write(f->out[1]), "[1] b\n");
    assert_string_equal(next_write(f->out[1]), "[0] ac\n");
    assert_string_equal(next_write(f->err[1]), "[0] error text\n");
    assert_string_equal(next_write(f->out[1]), "");
    assert_string_equal(next_write(f->err[1]), "");
    done(f);
}

static void test_long_lines_are_split(void **state)
{
    (void)state;
    fx_t *f = make(1, 8);
    feed(f, 0, 1, "0123456789abcdefXY\n");
    assert_string_equal(next_write(f->out[1]), "[0] 01234567\n");
    /* the pieces after the first are marked as the rest of a line */
    assert_string_equal(next_write(f->out[1]), "[0]+ 89abcdef\n");
    assert_string_equal(next_write(f->out[1]), "[0]+ XY\n");
    /* the next line is a line of its own again */
    feed(f, 0, 1, "next\n");
    assert_string_equal(next_write(f->out[1]), "[0] next\n");
    /* split in the middle of an unfinished last line, then flushed */
    feed(f, 0, 2, "0123456789");
    output_lines_flush_rank(f->o, 0);
    assert_string_equal(next_write(f->err[1]), "[0] 01234567\n");
    assert_string_equal(next_write(f->err[1]), "[0]+ 89\n");
    feed(f, 0, 2, "e\n");
    assert_string_equal(next_write(f->err[1]), "[0] e\n");
    /* exactly max_line, then the newline in a later chunk: one line */
    feed(f, 0, 1, "ABCDEFGH");
    feed(f, 0, 1, "\n");
    assert_string_equal(next_write(f->out[1]), "[0] ABCDEFGH\n");
    assert_string_equal(next_write(f->out[1]), "");
    done(f);
}

static void test_flush_partial_lines(void **state)
{
    (void)state;
    fx_t *f = make(3, 0);
    feed(f, 1, 1, "no newline");
    feed(f, 2, 2, "other rank");
    output_lines_flush_rank(f->o, 1);
    assert_string_equal(next_write(f->out[1]), "[1] no newline\n");
    assert_string_equal(next_write(f->err[1]), "");
    output_lines_flush_rank(f->o, 1); /* nothing left: nothing written */
    assert_string_equal(next_write(f->out[1]), "");
    output_lines_flush_all(f->o);
    assert_string_equal(next_write(f->err[1]), "[2] other rank\n");
    done(f);
}

static void test_unknown_rank_is_the_job(void **state)
{
    (void)state;
    fx_t *f = make(2, 0);
    feed(f, -1, 1, "from the scheduler\n");
    feed(f, 7, 1, "x\n");
    assert_string_equal(next_write(f->out[1]), "[job] from the scheduler\n");
    assert_string_equal(next_write(f->out[1]), "[job] x\n");
    done(f);
}

static void test_closed_reader_is_survived(void **state)
{
    (void)state;
    fx_t *f = make(1, 0);
    close(f->out[1]);
    f->out[1] = socket(AF_UNIX, SOCK_SEQPACKET, 0); /* keep done() simple */
    for (int i = 0; i < 100; i++)
        feed(f, 0, 1, "nobody reads this\n");
    feed(f, 0, 2, "stderr still works\n");
    assert_string_equal(next_write(f->err[1]), "[0] stderr still works\n");
    /* the supervisor learns which stream lost its reader (and stops) */
    assert_int_equal(output_lines_reader_gone(f->o), 1);
    done(f);
}

static void test_reader_gone_only_on_epipe(void **state)
{
    (void)state;
    fx_t *f = make(1, 0);
    feed(f, 0, 1, "read\n");
    assert_int_equal(output_lines_reader_gone(f->o), 0);
    close(f->err[1]);
    f->err[1] = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    feed(f, 0, 2, "to a closed stderr\n");
    assert_int_equal(output_lines_reader_gone(f->o), 2);
    done(f);
}

/* Progress bars to a file or pipe: one line per bar, its last state;
 * "\r\n" is one line end. */
static void test_bar_to_a_file_is_its_last_state(void **state)
{
    (void)state;
    fx_t *f = make(2, 0);
    feed(f, 0, 1, "a\r");
    feed(f, 0, 1, "b\r");
    output_lines_tick(f->o); /* not a terminal: nothing drawn */
    assert_string_equal(next_write(f->out[1]), "");
    feed(f, 0, 1, "c\n");
    assert_string_equal(next_write(f->out[1]), "[0] c\n");
    feed(f, 0, 1, "windows\r\nline\r\n");
    assert_string_equal(next_write(f->out[1]), "[0] windows\n");
    assert_string_equal(next_write(f->out[1]), "[0] line\n");
    /* tqdm's way: '\r' before each state; "\r\r\n" keeps the last too */
    feed(f, 1, 2, "\r 10%|#    |\r 20%|##   |");
    feed(f, 1, 2, "\r100%|#####|\r\r\n");
    assert_string_equal(next_write(f->err[1]), "[1] 100%|#####|\n");
    /* a prompt is not a bar: only a stream without '\r' shows one */
    feed(f, 0, 1, "\rpartial");
    output_lines_show_prompt(f->o, 0);
    output_lines_show_prompt(f->o, 0);
    assert_string_equal(next_write(f->out[1]), "");
    /* the rank ends: its bar's last state is its last line */
    output_lines_flush_rank(f->o, 0);
    assert_string_equal(next_write(f->out[1]), "[0] partial\n");
    /* a bar its writer wiped (tqdm's leave=False) leaves no line */
    feed(f, 1, 2, "\r 50%|##  |\r         \r");
    output_lines_flush_all(f->o);
    assert_string_equal(next_write(f->err[1]), "");
    assert_string_equal(next_write(f->out[1]), "");
    done(f);
}

/* On a terminal: the lowest rank's bar is drawn in place, once a tick
 * at most; other lines erase it, then it comes back under them. */
static void test_bar_on_a_terminal_is_redrawn(void **state)
{
    (void)state;
    fx_t *f = make(8, 0);
    output_lines_set_terminal(f->o, 1, 1);
    feed(f, 1, 2, "\r 10%");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "\r[1]  10%\033[K");
    output_lines_tick(f->o); /* unchanged: not drawn again */
    assert_string_equal(next_write(f->err[1]), "");
    /* 8 ranks, 100 states each between two ticks: one redraw */
    for (int i = 0; i < 100; i++)
        for (int r = 1; r < 8; r++) {
            char state_text[32];
            snprintf(state_text, sizeof state_text, "\r%3d%%", i);
            feed(f, r, 2, state_text);
        }
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "\r[1]  99%\033[K");
    assert_string_equal(next_write(f->err[1]), "");
    /* other ranks' lines: erase the bar once, the lines, and the bar
     * again at the next tick, once however many lines came */
    feed(f, 0, 1, "epoch 1\n");
    assert_string_equal(next_write(f->err[1]), "\r\033[K");
    assert_string_equal(next_write(f->out[1]), "[0] epoch 1\n");
    feed(f, 0, 1, "epoch 2\n");
    assert_string_equal(next_write(f->out[1]), "[0] epoch 2\n");
    assert_string_equal(next_write(f->err[1]), "");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "\r[1]  99%\033[K");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "");
    /* the bar's own line ends: its last state stays as a line; the next
     * rank's bar takes the bar line at the next tick */
    feed(f, 1, 2, "\r100%\n");
    assert_string_equal(next_write(f->err[1]), "\r\033[K");
    assert_string_equal(next_write(f->err[1]), "[1] 100%\n");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "\r[2]  99%\033[K");
    /* a prompt needs the line: the bar stays as it is, the prompt below */
    feed(f, 0, 1, "name? ");
    output_lines_show_prompt(f->o, 0);
    output_lines_show_prompt(f->o, 0);
    assert_string_equal(next_write(f->err[1]), "\n");
    assert_string_equal(next_write(f->out[1]), "[0] name? ");
    output_lines_tick(f->o); /* the prompt waits: no bar over it */
    assert_string_equal(next_write(f->err[1]), "");
    feed(f, 0, 1, "bob\n");
    assert_string_equal(next_write(f->out[1]), "bob\n");
    /* the job ends: every bar's last state is a line */
    output_lines_flush_all(f->o);
    assert_string_equal(next_write(f->err[1]), "[2]  99%\n");
    assert_string_equal(next_write(f->err[1]), "[3]  99%\n");
    done(f);
}

/* A partial line shown as a prompt that then gets a '\r' is a bar: it
 * takes the prompt's line (the redraw overwrites the text, as the
 * terminal would have), other bars are not held up, and its line ends
 * with its prefix and last state (was: every bar held up until its
 * newline, then "[0] 1/9 [.] 9/9 [=]" on one line). */
static void test_prompt_that_becomes_a_bar(void **state)
{
    (void)state;
    fx_t *f = make(2, 0);
    output_lines_set_terminal(f->o, 1, 1);
    feed(f, 0, 1, "1/9 [.]");
    output_lines_show_prompt(f->o, 0);
    output_lines_show_prompt(f->o, 0);
    assert_string_equal(next_write(f->out[1]), "[0] 1/9 [.]");
    feed(f, 0, 1, "\r5/9 [==]");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->out[1]), "\r[0] 5/9 [==]\033[K");
    feed(f, 0, 1, "\r9/9 [===]\n");
    assert_string_equal(next_write(f->out[1]), "\r\033[K");
    assert_string_equal(next_write(f->out[1]), "[0] 9/9 [===]\n");
    /* a bar its writer wiped leaves the terminal's line at the next tick
     * (tqdm's leave=False), and is no line at the end */
    feed(f, 1, 2, "\r 50%");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "\r[1]  50%\033[K");
    feed(f, 1, 2, "\r    \r");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "\r\033[K");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "");
    output_lines_flush_all(f->o);
    assert_string_equal(next_write(f->err[1]), "");
    done(f);
}

/* Only dtctl's stderr is a terminal: a stdout line (to a file) leaves
 * the bar alone. */
static void test_line_to_a_file_leaves_the_bar(void **state)
{
    (void)state;
    fx_t *f = make(1, 0);
    output_lines_set_terminal(f->o, 0, 1);
    feed(f, 0, 1, "\rnot drawn: stdout is a file");
    feed(f, 0, 2, "\rdrawn");
    output_lines_tick(f->o);
    assert_string_equal(next_write(f->err[1]), "\r[0] drawn\033[K");
    feed(f, 0, 1, "\n");
    assert_string_equal(next_write(f->out[1]),
                        "[0] not drawn: stdout is a file\n");
    assert_string_equal(next_write(f->err[1]), "");
    done(f);
}

/* A bar wider than the terminal is cut to its width (in characters,
 * not bytes), so that it never wraps: '\r' redraws one row only. */
static void test_bar_fits_the_terminal(void **state)
{
    (void)state;
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    int tty = open(ptsname(master), O_RDWR | O_NOCTTY);
    assert_true(tty >= 0);
    struct termios raw;
    assert_int_equal(tcgetattr(tty, &raw), 0);
    cfmakeraw(&raw);
    assert_int_equal(tcsetattr(tty, TCSANOW, &raw), 0);
    struct winsize ws = {.ws_row = 24, .ws_col = 12};
    assert_int_equal(ioctl(tty, TIOCSWINSZ, &ws), 0);
    output_lines_t *o;
    assert_int_equal(output_lines_new(1, tty, tty, 0, &o), 0);
    output_lines_set_terminal(o, 1, 1);
    /* 12 columns: "[0] " and 7 characters, the last column free */
    const char *bar = "\r\xe2\x96\x88\xe2\x96\x88" "3456789";
    output_lines_feed(o, 0, 2, bar, strlen(bar));
    output_lines_tick(o);
    char got[64];
    ssize_t n = read(master, got, sizeof got - 1);
    got[n > 0 ? n : 0] = '\0';
    assert_string_equal(got, "\r[0] \xe2\x96\x88\xe2\x96\x88" "34567\033[K");
    output_lines_free(o);
    close(tty);
    close(master);
}

/* A rank's crash report (plugin/crash_line.h), read as its lines pass:
 * dtctl's closing line names the plugin op (cli/crash_site.c). Only a
 * whole line of dt's own words counts, for a rank of the job, and only
 * for the signal it names. */
static void test_crash_report_is_read(void **state)
{
    (void)state;
    fx_t *f = make(3, 0);
    crash_sites_t *c = NULL;
    assert_int_equal(crash_sites_new(3, &c), DT_OK);
    output_lines_set_watch(f->o, crash_sites_see, c);
    feed(f, 1, 2, "dt: [1 node2] error: crashed in transport plugin 'my-net_2"
                  "', in its op isend() (signal 11: Segm");
    assert_null(crash_sites_of(c, 1, 11)); /* not a whole line yet */
    feed(f, 1, 2, "entation fault): the fault is the plugin's, not dt's; "
                  "rebuild or remove /x/dt_transport_my-net_2.so\n");
    assert_string_equal(crash_sites_of(c, 1, 11),
                        "transport plugin 'my-net_2', in its op isend()");
    assert_null(crash_sites_of(c, 1, 9)); /* killed by another signal */
    assert_null(crash_sites_of(c, 0, 11));
    /* still passed on as it came */
    assert_non_null(strstr(next_write(f->err[1]), "[1] dt: [1 node2] error: "
                                                  "crashed in transport"));
    /* untagged (no dt_init tag), on stdout: read too */
    feed(f, 0, 1, "dt: error: crashed in optimizer plugin 'o', in its op "
                  "save() (signal 6: Aborted): ...\n");
    assert_string_equal(crash_sites_of(c, 0, 6),
                        "optimizer plugin 'o', in its op save()");
    /* a program's own words, a line cut short, the job's lines: not */
    feed(f, 2, 2, "worker: dt: error: crashed in optimizer plugin 'o', in "
                  "its op step() (signal 11: Segmentation fault)\n");
    feed(f, 2, 2, "dt: error: crashed in optimizer plugin 'o', in its op "
                  "step()\n");
    feed(f, -1, 2, "dt: error: crashed in optimizer plugin 'o', in its op "
                   "step() (signal 11: Segmentation fault)\n");
    assert_null(crash_sites_of(c, 2, 11));
    crash_sites_clear(c); /* a new attempt */
    assert_null(crash_sites_of(c, 1, 11));
    assert_null(crash_sites_of(c, 0, 6));
    crash_sites_free(c);
    done(f);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as dtctl does while it runs a job */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_across_chunks),
        cmocka_unit_test(test_ranks_and_streams_do_not_mix),
        cmocka_unit_test(test_long_lines_are_split),
        cmocka_unit_test(test_flush_partial_lines),
        cmocka_unit_test(test_unknown_rank_is_the_job),
        cmocka_unit_test(test_closed_reader_is_survived),
        cmocka_unit_test(test_reader_gone_only_on_epipe),
        cmocka_unit_test(test_bar_to_a_file_is_its_last_state),
        cmocka_unit_test(test_bar_on_a_terminal_is_redrawn),
        cmocka_unit_test(test_prompt_that_becomes_a_bar),
        cmocka_unit_test(test_line_to_a_file_leaves_the_bar),
        cmocka_unit_test(test_bar_fits_the_terminal),
        cmocka_unit_test(test_crash_report_is_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
