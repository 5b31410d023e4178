/* test_output_lines.c — dtctl's line assembler. dtctl's stdout is a
 * SOCK_SEQPACKET socket here: every write() arrives as one message, so the
 * test sees that each line leaves in exactly one write. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
