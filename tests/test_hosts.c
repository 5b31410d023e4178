/* test_hosts.c — -H host lists, hostfiles in every accepted format, their
 * errors (with file:line), and rank placement. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dt/hosts.h>
#include "stderr_capture.h"

static char *hostfile(char *buf, size_t len, const char *text)
{
    snprintf(buf, len, "/tmp/dt-test-hosts-XXXXXX");
    char *p = write_temp(buf, 0, text);
    assert_non_null(p);
    return p;
}

static void assert_host(const dt_hostlist_t *l, size_t i, const char *name,
                        int slots, int port)
{
    assert_true(i < l->n);
    assert_string_equal(l->hosts[i].name, name);
    assert_int_equal(l->hosts[i].slots, slots);
    assert_int_equal(l->hosts[i].port, port);
}

/* ---- -H lists ----------------------------------------------------------------- */

static void test_hosts_parse(void **state)
{
    (void)state;
    dt_hostlist_t l;
    assert_int_equal(dt_hosts_parse("h1:2,h2:4,h3", &l), DT_OK);
    assert_int_equal(l.n, 3);
    assert_host(&l, 0, "h1", 2, 0);
    assert_host(&l, 1, "h2", 4, 0);
    assert_host(&l, 2, "h3", 1, 0);
    assert_int_equal(dt_hostlist_slots(&l), 7);
    dt_hostlist_free(&l);
    assert_int_equal(l.n, 0);

    assert_int_equal(dt_hosts_parse(" a.example.com:3 , 10.0.0.2,", &l),
                     DT_OK);
    assert_int_equal(l.n, 2);
    assert_host(&l, 0, "a.example.com", 3, 0);
    assert_host(&l, 1, "10.0.0.2", 1, 0);
    dt_hostlist_free(&l);

    assert_int_equal(dt_hosts_parse("[fd00::1]:2,fe80::1%eth0", &l), DT_OK);
    assert_host(&l, 0, "fd00::1", 2, 0);
    assert_host(&l, 1, "fe80::1%eth0", 1, 0);
    dt_hostlist_free(&l);
}

static void test_hosts_parse_errors(void **state)
{
    (void)state;
    const struct {
        const char *spec, *message;
    } bad[] = {
        {"h1:0", "'h1:0' has 0 slots"},
        {"h1:1048577", "'h1:1048577' has 1048577 slots; want 1 to 1048576"},
        /* a long number is out of range, not unreadable */
        {"h1:2147483647", "'h1:2147483647' has 2147483647 slots; want 1 to"},
        {"[::1]:99999999999999999999",
         "has 99999999999999999999 slots; want 1 to 1048576"},
        {"h1:x", "cannot read 'h1:x'"},
        {"h1:", "cannot read 'h1:'"},
        {"h1:2,-oProxyCommand=x", "cannot read '-oProxyCommand=x'"},
        {"h1;rm", "cannot read 'h1;rm'"},
        {"h1,h2,h1:2", "host 'h1' appears twice"},
        /* host names ignore case: one machine, two sets of local ranks */
        {"Node1:2,node1:2", "host 'node1' appears twice (also as 'Node1'"},
        {"", "names no host"},
        {" , ", "names no host"},
        {"[::1", "cannot read '[::1'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        dt_hostlist_t l = {NULL, 0};
        capture_t c;
        capture_begin(&c);
        dt_status_t st = dt_hosts_parse(bad[i].spec, &l);
        char *err = capture_end(&c);
        assert_int_equal(st, DT_ERR_INVALID);
        assert_non_null(strstr(err, bad[i].message));
        assert_null(l.hosts);
        free(err);
    }
}

/* ---- hostfiles ------------------------------------------------------------------ */

static void test_hostfile_formats(void **state)
{
    (void)state;
    char path[64];
    hostfile(path, sizeof path,
             "# a comment line\n"
             "\n"
             "node1 slots=4\n"
             "node2 slots=2 port=2222   # trailing comment\n"
             "  node3:3\n"
             "node4\n"
             "\t\n"
             "10.0.0.5:2222\n"
             "10.0.0.6:22 slots=2\n"
             "10.0.0.7:1023\n"
             "10.0.0.8:1024\n"
             "node9 max_slots=8\n"
             "[fd00::7]:2\n"
             "node10 port=2200 slots=5\r\n");
    dt_hostlist_t l;
    assert_int_equal(dt_hostfile_parse(path, &l), DT_OK);
    assert_int_equal(l.n, 11);
    assert_host(&l, 0, "node1", 4, 0);
    assert_host(&l, 1, "node2", 2, 2222);
    assert_host(&l, 2, "node3", 3, 0);
    assert_host(&l, 3, "node4", 1, 0);
    assert_host(&l, 4, "10.0.0.5", 1, 2222);
    assert_host(&l, 5, "10.0.0.6", 2, 22);
    assert_host(&l, 6, "10.0.0.7", 1023, 0); /* below 1024: slots */
    assert_host(&l, 7, "10.0.0.8", 1, 1024); /* 1024 and up: port */
    assert_host(&l, 8, "node9", 1, 0);
    assert_host(&l, 9, "fd00::7", 2, 0);
    assert_host(&l, 10, "node10", 5, 2200);
    assert_int_equal(dt_hostlist_slots(&l), 4 + 2 + 3 + 1 + 1 + 2 + 1023 +
                                                1 + 1 + 2 + 5);
    dt_hostlist_free(&l);
    unlink(path);
}

static char *hostfile_error(const char *text, dt_status_t expect, char *path,
                            size_t len)
{
    hostfile(path, len, text);
    dt_hostlist_t l = {NULL, 0};
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_hostfile_parse(path, &l);
    char *err = capture_end(&c);
    assert_int_equal(st, expect);
    assert_null(l.hosts);
    unlink(path);
    return err;
}

static void test_hostfile_duplicate(void **state)
{
    (void)state;
    char path[64], expect[320];
    char *err = hostfile_error("# hosts\nnode1 slots=2\nnode2\n\nnode1:4\n",
                               DT_ERR_CONFIG, path, sizeof path);
    snprintf(expect, sizeof expect,
             "%s:5: host 'node1' is listed twice (first on %s:2 as 'node1'",
             path, path);
    assert_non_null(strstr(err, expect));
    free(err);

    /* Host names ignore case. */
    err = hostfile_error("NODE1.example.com slots=2\nnode1.Example.COM:2\n",
                         DT_ERR_CONFIG, path, sizeof path);
    snprintf(expect, sizeof expect, "%s:2: host 'node1.Example.COM' is "
             "listed twice (first on %s:1 as 'NODE1.example.com'", path,
             path);
    assert_non_null(strstr(err, expect));
    free(err);

    /* The same address and port, in both spellings of the port. */
    err = hostfile_error("10.0.0.5 port=2222\n10.0.0.5:2222\n",
                         DT_ERR_CONFIG, path, sizeof path);
    snprintf(expect, sizeof expect, "%s:2: host '10.0.0.5' port 2222 is "
             "listed twice (first on %s:1", path, path);
    assert_non_null(strstr(err, expect));
    free(err);
}

/* One address, two ssh ports: two machines (containers behind one IP). */
/* An MPI machinefile lists a host once per slot, and mpirun's --host a,a
 * means two slots: a bare name repeated adds a slot (one with slots= or
 * :N among its lines is still refused: test_hostfile_duplicate). */
static void test_bare_names_repeated(void **state)
{
    (void)state;
    char path[64];
    hostfile(path, sizeof path, "h1\nh2 slots=3\nh1\n# c\nH1\n");
    dt_hostlist_t l;
    assert_int_equal(dt_hostfile_parse(path, &l), DT_OK);
    assert_int_equal(l.n, 2);
    assert_host(&l, 0, "h1", 3, 0);
    assert_host(&l, 1, "h2", 3, 0);
    dt_hostlist_free(&l);
    unlink(path);
    assert_int_equal(dt_hosts_parse("h1,h2:2,h1", &l), DT_OK);
    assert_int_equal(l.n, 2);
    assert_host(&l, 0, "h1", 2, 0);
    assert_host(&l, 1, "h2", 2, 0);
    dt_hostlist_free(&l);
}

static void test_hostfile_same_address_two_ports(void **state)
{
    (void)state;
    char path[64];
    hostfile(path, sizeof path,
             "10.0.0.5 port=2222 slots=2\n10.0.0.5 port=2223 slots=2\n");
    dt_hostlist_t l;
    assert_int_equal(dt_hostfile_parse(path, &l), DT_OK);
    assert_int_equal(l.n, 2);
    assert_host(&l, 0, "10.0.0.5", 2, 2222);
    assert_host(&l, 1, "10.0.0.5", 2, 2223);
    dt_placement_t *p = NULL;
    assert_int_equal(dt_place_ranks(&l, 4, &p), DT_OK);
    assert_int_equal(p[3].num_nodes, 2); /* two nodes, local ranks 0-1 each */
    assert_int_equal(p[2].local_rank, 0);
    free(p);
    dt_hostlist_free(&l);
    unlink(path);
}

static void test_hostfile_bad_slots(void **state)
{
    (void)state;
    char path[64], expect[160];
    const struct {
        const char *text, *message;
    } bad[] = {
        {"node1\nnode2 slots=0\n", "%s:2: slots=0 is out of range"},
        {"node1 slots=abc\n", "%s:1: cannot read 'slots=abc'"},
        {"node1 slots=-2\n", "%s:1: cannot read 'slots=-2'"},
        {"\n\nnode1:0\n", "%s:3: 'node1:0' has 0 slots"},
        {"node1:2 slots=3\n", "%s:1: slots given twice"},
        {"node1 port=70000\n", "%s:1: port=70000 is out of range"},
        {"node1:99999\n", "%s:1: port 99999 is out of range"},
        {"node1:2147483648\n", "%s:1: port 2147483648 is out of range"},
        {"node1 slots=99999999999\n",
         "%s:1: slots=99999999999 is out of range; want 1 to 1048576"},
        {"node1 port=4294967296\n", "%s:1: port=4294967296 is out of range"},
        {"node1 cpus=4\n", "%s:1: unknown field 'cpus=4'"},
        {"-node1\n", "%s:1: cannot read host '-node1'"},
        {"# only comments\n\n", "hostfile '%s' lists no host"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *err =
            hostfile_error(bad[i].text, DT_ERR_CONFIG, path, sizeof path);
        snprintf(expect, sizeof expect, bad[i].message, path);
        assert_non_null(strstr(err, expect));
        free(err);
    }
}

static void test_hostfile_reports_every_bad_line(void **state)
{
    (void)state;
    char path[64], expect[320];
    char *err = hostfile_error("a slots=0\nb slots=1\nc slots=x\nb\n", DT_ERR_CONFIG,
                               path, sizeof path);
    snprintf(expect, sizeof expect, "%s:1:", path);
    assert_non_null(strstr(err, expect));
    snprintf(expect, sizeof expect, "%s:3:", path);
    assert_non_null(strstr(err, expect));
    snprintf(expect, sizeof expect, "%s:4: host 'b' is listed twice "
             "(first on %s:2", path, path);
    assert_non_null(strstr(err, expect));
    free(err);
}

/* A UTF-8 byte order mark (Windows editors) is no part of the first
 * host; a NUL byte hid the rest of its line (refused, named); a
 * directory is said to be one. */
static void test_hostfile_bom_nul_dir(void **state)
{
    (void)state;
    char path[64], expect[160];
    dt_hostlist_t l = {NULL, 0};
    hostfile(path, sizeof path, "\xef\xbb\xbfnode1 slots=2\n");
    assert_int_equal(dt_hostfile_parse(path, &l), DT_OK);
    assert_int_equal((int)l.n, 1);
    assert_string_equal(l.hosts[0].name, "node1");
    dt_hostlist_free(&l);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite("localhost\0junk slots=3\n", 1, 24, f);
    fclose(f);
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_hostfile_parse(path, &l);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    snprintf(expect, sizeof expect, "%s:1: a NUL byte (binary data): not "
             "a hostfile (check the path", path);
    assert_non_null(strstr(err, expect));
    free(err);
    unlink(path);
    capture_begin(&c);
    st = dt_hostfile_parse("/tmp", &l);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_IO);
    assert_non_null(strstr(err, "cannot read hostfile '/tmp': it is a directory"));
    free(err);
}

/* A line without end (/dev/zero, a data file) is read only so far, and
 * said once: getline held all of it, /dev/zero until memory ran out. */
static void test_hostfile_endless_line(void **state)
{
    (void)state;
    char path[64], expect[200];
    size_t n = ((size_t)16 << 20) + 4096;
    char *data = malloc(n + 1);
    assert_non_null(data);
    memcpy(data, "node1\n", 6);
    memset(data + 6, 'a', n - 6);
    data[n] = '\0';
    hostfile(path, sizeof path, data);
    free(data);
    dt_hostlist_t l = {NULL, 0};
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_hostfile_parse(path, &l);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    snprintf(expect, sizeof expect, "%s:2: a line longer than 16 MiB: not "
             "a hostfile", path);
    assert_non_null(strstr(err, expect));
    assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
    free(err);
    unlink(path);
}

static void test_hostfile_missing(void **state)
{
    (void)state;
    dt_hostlist_t l = {NULL, 0};
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_hostfile_parse("/nonexistent/dt-hosts", &l);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "cannot read hostfile '/nonexistent/dt-hosts'"));
    free(err);
}

/* ---- placement ------------------------------------------------------------------ */

typedef struct expect_rank {
    size_t host;
    int local_rank, local_size, node_rank;
} expect_rank_t;

static void check_placement(const char *spec, int np, int num_nodes,
                            const expect_rank_t *want)
{
    dt_hostlist_t l;
    dt_placement_t *p = NULL;
    assert_int_equal(dt_hosts_parse(spec, &l), DT_OK);
    assert_int_equal(dt_place_ranks(&l, np, &p), DT_OK);
    for (int r = 0; r < np; r++) {
        assert_int_equal(p[r].rank, r);
        assert_int_equal(p[r].host, want[r].host);
        assert_int_equal(p[r].local_rank, want[r].local_rank);
        assert_int_equal(p[r].local_size, want[r].local_size);
        assert_int_equal(p[r].node_rank, want[r].node_rank);
        assert_int_equal(p[r].num_nodes, num_nodes);
    }
    free(p);
    dt_hostlist_free(&l);
}

static void test_place_fill_in_order(void **state)
{
    (void)state;
    /* Exactly the slots: h1 gets 2, h2 gets 3. */
    const expect_rank_t full[] = {{0, 0, 2, 0}, {0, 1, 2, 0}, {1, 0, 3, 1},
                                  {1, 1, 3, 1}, {1, 2, 3, 1}};
    check_placement("h1:2,h2:3", 5, 2, full);
    /* Fewer ranks than slots: the second host is partly used. */
    const expect_rank_t partial[] = {{0, 0, 2, 0}, {0, 1, 2, 0},
                                     {1, 0, 1, 1}};
    check_placement("h1:2,h2:3", 3, 2, partial);
    /* Fewer ranks than the first host has: one node. */
    const expect_rank_t one_node[] = {{0, 0, 2, 0}, {0, 1, 2, 0}};
    check_placement("h1:4,h2:4", 2, 1, one_node);
    /* One slot per host. */
    const expect_rank_t spread[] = {{0, 0, 1, 0}, {1, 0, 1, 1}, {2, 0, 1, 2}};
    check_placement("a,b,c,d", 3, 3, spread);
    /* Single rank. */
    const expect_rank_t single[] = {{0, 0, 1, 0}};
    check_placement("localhost:8", 1, 1, single);
}

static void test_place_errors(void **state)
{
    (void)state;
    dt_hostlist_t l;
    dt_placement_t *p = NULL;
    assert_int_equal(dt_hosts_parse("h1:2,h2:2", &l), DT_OK);
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_place_ranks(&l, 5, &p);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_INVALID);
    assert_null(p);
    assert_non_null(strstr(err, "cannot place 5 workers"));
    assert_non_null(strstr(err, "only 4 slots"));
    assert_non_null(strstr(err, "-H host:N"));
    assert_non_null(strstr(err, "-n 4"));
    free(err);
    capture_begin(&c);
    st = dt_place_ranks(&l, 0, &p);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_INVALID);
    free(err);
    dt_hostlist_t empty = {NULL, 0};
    capture_begin(&c);
    st = dt_place_ranks(&empty, 1, &p);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_INVALID);
    assert_non_null(strstr(err, "only 0 slots"));
    free(err);
    dt_hostlist_free(&l);
    /* -H ::1:2 meant ::1 with 2 slots: it is the address ::1:2, 1 slot */
    assert_int_equal(dt_hosts_parse("::1:2", &l), DT_OK);
    capture_begin(&c);
    st = dt_place_ranks(&l, 2, &p);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_INVALID);
    assert_non_null(strstr(err, "'::1:2' is read as one IPv6 address"));
    assert_non_null(strstr(err, "-H [ADDR]:N (e.g. [::1]:2"));
    free(err);
    dt_hostlist_free(&l);
}

/* Names of this machine wherever they are read: the local launcher runs
 * them here, and a job on them alone gets MASTER_ADDR 127.0.0.1. ::1 has
 * several spellings and Debian's /etc/hosts names (ip6-localhost). */
static void test_host_is_local(void **state)
{
    (void)state;
    const char *local[] = {"localhost", "LocalHost", "127.0.0.1", "127.1.2.3",
                           "::1", "0:0:0:0:0:0:0:1", "0::1",
                           "::ffff:127.0.0.1", "ip6-localhost",
                           "ip6-loopback"};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        if (!dt_host_is_local(local[i]))
            fail_msg("'%s' should name this machine", local[i]);
    const char *other[] = {"::2", "fd00::1", "::ffff:10.0.0.1", "192.0.2.1",
                           "ip6-allnodes", ""};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        if (dt_host_is_local(other[i]))
            fail_msg("'%s' should not name this machine", other[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_parse),
        cmocka_unit_test(test_hosts_parse_errors),
        cmocka_unit_test(test_hostfile_formats),
        cmocka_unit_test(test_hostfile_duplicate),
        cmocka_unit_test(test_bare_names_repeated),
        cmocka_unit_test(test_hostfile_same_address_two_ports),
        cmocka_unit_test(test_hostfile_bad_slots),
        cmocka_unit_test(test_hostfile_reports_every_bad_line),
        cmocka_unit_test(test_hostfile_bom_nul_dir),
        cmocka_unit_test(test_hostfile_endless_line),
        cmocka_unit_test(test_hostfile_missing),
        cmocka_unit_test(test_place_fill_in_order),
        cmocka_unit_test(test_place_errors),
        cmocka_unit_test(test_host_is_local),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
