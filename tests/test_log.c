/* test_log.c — dt's logger (core/base/log.c): a message longer than its
 * 4 KiB line (an error naming a path near PATH_MAX) keeps its end, where
 * the reason and what to do are, and loses its middle, cut between UTF-8
 * characters; a short message is written whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dt/log.h>
#include "stderr_capture.h"

/* A path of `bytes` bytes of `unit` repeated (whole units only). */
static char *long_path(const char *unit, size_t bytes)
{
    size_t u = strlen(unit);
    char *p = malloc(bytes + 1);
    size_t n = 0;
    while (n + u <= bytes) {
        memcpy(p + n, unit, u);
        n += u;
    }
    p[n] = '\0';
    return p;
}

/* Every multi-byte UTF-8 sequence in s is whole. */
static int utf8_whole(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int more = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1
                 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (more < 0)
            return 0;
        p++;
        for (int i = 0; i < more; i++, p++)
            if ((*p & 0xC0) != 0x80)
                return 0;
    }
    return 1;
}

static void check_long(const char *unit)
{
    char *path = long_path(unit, 6000);
    capture_t c;
    capture_begin(&c);
    dt_error("%s: cannot open the metrics file: File name too long (check "
             "--metrics)", path);
    char *out = capture_end(&c);
    size_t len = strlen(out);
    assert_true(len <= 4096);
    assert_non_null(strstr(out, "dt: error: "));
    assert_non_null(strstr(out, " [...] "));
    assert_memory_equal(out + strlen("dt: error: "), path, 64);
    const char *end = ": cannot open the metrics file: File name too long "
                      "(check --metrics)\n";
    assert_true(len > strlen(end));
    assert_string_equal(out + len - strlen(end), end);
    assert_true(utf8_whole(out));
    assert_int_equal(strchr(out, '\n'), out + len - 1); /* one line */
    free(out);
    free(path);
}

static void long_message_keeps_its_end(void **state)
{
    (void)state;
    check_long("abcdefgh/");
}

static void long_message_cut_between_utf8_characters(void **state)
{
    (void)state;
    check_long("\xc3\xbc");         /* ü: 2 bytes */
    check_long("a\xe2\x82\xac");    /* a€: 1 + 3 bytes */
    check_long("\xf0\x9f\x98\x80"); /* an emoji: 4 bytes */
}

static void short_message_whole(void **state)
{
    (void)state;
    capture_t c;
    capture_begin(&c);
    dt_error("%s: %s", "/tmp/x y/ck", "No space left on device");
    char *out = capture_end(&c);
    assert_string_equal(out,
                        "dt: error: /tmp/x y/ck: No space left on device\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(long_message_keeps_its_end),
        cmocka_unit_test(long_message_cut_between_utf8_characters),
        cmocka_unit_test(short_message_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
