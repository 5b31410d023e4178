/* test_check_iface.c — [cluster] interface matched against a host's
 * `ip -o addr show up` output (dtctl check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "cli/check_iface.h"

static const char ip_out[] =
    "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
    "1: lo    inet6 ::1/128 scope host \\       valid_lft forever\n"
    "2: dt0    inet 10.77.1.2/24 brd 10.77.1.255 scope global dt0\\ x\n"
    "3: eth1@if9    inet 192.168.5.7/16 scope global eth1\\ x\n"
    "3: eth1@if9    inet6 fd00::7/64 scope global \\ x\n";

static int match(char *const *spec, size_t n, char *found)
{
    return check_iface_match(ip_out, spec, n, found, 256);
}

static void test_name_cidr_address(void **state)
{
    (void)state;
    char found[256];
    char *by_name[] = {"eth1"};
    assert_int_equal(match(by_name, 1, found), 1);
    assert_string_equal(found, "eth1 192.168.5.7"); /* "@if9" dropped */
    char *by_cidr[] = {"10.77.1.0/24"};
    assert_int_equal(match(by_cidr, 1, found), 1);
    assert_string_equal(found, "dt0 10.77.1.2");
    char *by_addr[] = {"192.168.5.7"};
    assert_int_equal(match(by_addr, 1, found), 1);
    char *by_v6[] = {"fd00::/16"};
    assert_int_equal(match(by_v6, 1, found), 1);
    assert_string_equal(found, "eth1 fd00::7");
    char *narrow[] = {"10.77.2.0/24"};
    assert_int_equal(match(narrow, 1, found), 0);
    /* A prefix that is no number matches nothing (read as /0 it matched
     * every address) */
    char *junk[] = {"10.0.0.0/abc"}, *empty[] = {"10.0.0.0/"},
         *neg[] = {"10.0.0.0/-1"};
    assert_int_equal(match(junk, 1, found), 0);
    assert_int_equal(match(empty, 1, found), 0);
    assert_int_equal(match(neg, 1, found), 0);
}

static void test_exclusions_and_loopback(void **state)
{
    (void)state;
    char found[256];
    /* Leading '^': everything but these. */
    char *not_dt0[] = {"^dt0"};
    assert_int_equal(match(not_dt0, 1, found), 1);
    assert_string_equal(found, "eth1 192.168.5.7");
    char *neither[] = {"^dt0", "eth1"}; /* whole list excluded */
    assert_int_equal(match(neither, 2, found), 2); /* loopback left */
    /* An include with one exclusion after it. */
    char *mixed[] = {"10.0.0.0/8", "^dt0"};
    assert_int_equal(match(mixed, 2, found), 0);
    /* Loopback alone: 2, naming it (enough for workers on one machine,
     * never for a job across hosts: the caller decides). */
    char *lo[] = {"lo"};
    assert_int_equal(match(lo, 1, found), 2);
    assert_string_equal(found, "lo 127.0.0.1");
    char *only_lo[] = {"^dt0", "^eth1"};
    assert_int_equal(match(only_lo, 2, found), 2);
    assert_string_equal(found, "lo 127.0.0.1");
    /* A non-loopback address wins over loopback listed first. */
    char *lo_or_eth1[] = {"lo", "eth1"};
    assert_int_equal(match(lo_or_eth1, 2, found), 1);
    assert_string_equal(found, "eth1 192.168.5.7");
    /* None allowed: the list of what is there. */
    char *none[] = {"^lo", "^dt0", "^eth1"};
    assert_int_equal(match(none, 3, found), 0);
    assert_non_null(strstr(found, "lo 127.0.0.1"));
    assert_non_null(strstr(found, "dt0 10.77.1.2"));
}

static void test_no_addresses(void **state)
{
    (void)state;
    char found[64];
    char *any[] = {"eth0"};
    assert_int_equal(check_iface_match("sh: ip: not found\n", any, 1, found,
                                       sizeof found),
                     -1);
    assert_int_equal(check_iface_match("", any, 1, found, sizeof found), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_cidr_address),
        cmocka_unit_test(test_exclusions_and_loopback),
        cmocka_unit_test(test_no_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
