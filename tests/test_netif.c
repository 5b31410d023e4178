/* test_netif.c — interface selection against this machine's real
 * interfaces. Only "lo" / 127.0.0.0/8 are assumed to exist. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <dt/netif.h>

static dt_status_t pick(const char *spec, const char *peer, char *addr)
{
    char *items[8], *copy = strdup(spec), *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(copy, ",", &save); t && n < 8;
         t = strtok_r(NULL, ",", &save))
        items[n++] = t;
    dt_status_t st = dt_netif_select(items, n, peer, "test", addr,
                                     DT_NETIF_ADDR_LEN);
    free(copy);
    return st;
}

/* Run pick() with stderr captured into msg. */
static dt_status_t pick_capture(const char *spec, char *addr, char *msg,
                                size_t msglen)
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    dt_status_t st = pick(spec, NULL, addr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(msg, 1, msglen - 1, tmp);
    msg[n] = '\0';
    fclose(tmp);
    fputs(msg, stderr); /* still visible in the test log */
    return st;
}

/* An up, non-loopback IPv4 interface of this machine, or "" if none. */
static void other_ipv4_interface(char *name, size_t len)
{
    struct ifaddrs *ifa = NULL;
    name[0] = '\0';
    assert_int_equal(getifaddrs(&ifa), 0);
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK)) {
            snprintf(name, len, "%s", i->ifa_name);
            break;
        }
    freeifaddrs(ifa);
}

/* The addresses dt_netif_select chooses from (those of up interfaces:
 * IPv4, and IPv6 other than link-local), narrowed to interface `only`
 * (NULL: any), without interface `skip` (NULL: none), without
 * 127.0.0.0/8 when no_127, and without the address `not_addr` (NULL:
 * none). This machine decides what a spec must give: there is a choice
 * exactly when this set is not empty. */
typedef struct addr_set {
    char text[4096]; /* " a b c " */
    int n, v4;
} addr_set_t;

static void usable_addresses(const char *only, const char *skip, int no_127,
                             const char *not_addr, addr_set_t *set)
{
    struct ifaddrs *ifa = NULL;
    memset(set, 0, sizeof *set);
    snprintf(set->text, sizeof set->text, " ");
    assert_int_equal(getifaddrs(&ifa), 0);
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) ||
            (only && strcmp(i->ifa_name, only) != 0) ||
            (skip && strcmp(i->ifa_name, skip) == 0))
            continue;
        int fam = i->ifa_addr->sa_family;
        char text[INET6_ADDRSTRLEN];
        if (fam == AF_INET) {
            const struct in_addr *a =
                &((const struct sockaddr_in *)i->ifa_addr)->sin_addr;
            if (no_127 && (ntohl(a->s_addr) >> 24) == 127)
                continue;
            inet_ntop(fam, a, text, sizeof text);
        } else if (fam == AF_INET6) {
            const struct in6_addr *a =
                &((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
            if (IN6_IS_ADDR_LINKLOCAL(a))
                continue;
            inet_ntop(fam, a, text, sizeof text);
        } else {
            continue;
        }
        if (not_addr && strcmp(text, not_addr) == 0)
            continue;
        size_t len = strlen(set->text);
        snprintf(set->text + len, sizeof set->text - len, "%s ", text);
        set->n++;
        set->v4 |= fam == AF_INET;
    }
    freeifaddrs(ifa);
}

/* spec gives an address of set (IPv4 when set has one), or DT_ERR_CONFIG
 * when set is empty. */
static void assert_pick_from(const char *spec, const addr_set_t *set)
{
    char addr[DT_NETIF_ADDR_LEN], word[DT_NETIF_ADDR_LEN + 2];
    dt_status_t st = pick(spec, NULL, addr);
    if (set->n == 0) {
        if (st != DT_ERR_CONFIG)
            fail_msg("'%s': no address here fits, yet it gave %s (%d)", spec,
                     st == DT_OK ? addr : "an error", st);
        return;
    }
    if (st != DT_OK)
        fail_msg("'%s': failed (%d) although these fit:%s", spec, st,
                 set->text);
    snprintf(word, sizeof word, " %s ", addr);
    if (!strstr(set->text, word) || (set->v4 && !strchr(addr, '.')))
        fail_msg("'%s' gave %s; want one of:%s(IPv4 first)", spec, addr,
                 set->text);
}

static void test_default(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN];
    /* Single host: loopback. */
    assert_int_equal(dt_netif_select(NULL, 0, NULL, NULL, addr, sizeof addr),
                     DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    /* The route to a loopback peer is loopback. */
    assert_int_equal(dt_netif_select(NULL, 0, "127.0.0.1", NULL, addr,
                                     sizeof addr),
                     DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(dt_netif_route_to("127.0.0.5", addr, sizeof addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
}

static void test_name(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN];
    assert_int_equal(pick("lo", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1"); /* IPv4 before ::1 */
    assert_int_equal(pick("lo", "127.0.0.1", addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
}

/* A peer this host cannot resolve (an ssh alias): without [cluster]
 * interface an error; with it, the spec alone chooses. */
static void test_unresolvable_peer(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN];
    assert_int_equal(dt_netif_select(NULL, 0, "no-such-host.invalid", NULL,
                                     addr, sizeof addr),
                     DT_ERR_NOT_FOUND);
    assert_int_equal(pick("lo", "no-such-host.invalid", addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(pick("127.0.0.0/8", "no-such-host.invalid", addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
}

static void test_cidr_and_address(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN];
    assert_int_equal(pick("127.0.0.0/8", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(pick("127.0.0.1/32", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(pick("127.0.0.1", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    /* 127.0.0.1 is not in 127.0.0.128/25. */
    assert_int_equal(pick("127.0.0.128/25", NULL, addr), DT_ERR_CONFIG);
}

static void test_list(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN];
    assert_int_equal(pick("nosuchif0,lo", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(pick("0.0.0.0/32,127.0.0.0/8", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
}

static void test_exclusion(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN], other[IF_NAMESIZE + 1];
    /* Excluding what is not there leaves loopback for a single host. */
    assert_int_equal(pick("^docker0,nosuchif0", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    /* Excluding lo: an address of another interface, or an error if there
     * is none. */
    addr_set_t set;
    usable_addresses(NULL, "lo", 0, NULL, &set);
    assert_pick_from("^lo", &set);
    /* By CIDR and name: what is left is neither in 127.0.0.0/8 nor on
     * that interface (lo's ::1, say), or nothing. */
    other_ipv4_interface(other, sizeof other);
    if (other[0]) {
        char spec[64];
        snprintf(spec, sizeof spec, "^127.0.0.0/8,%s", other);
        usable_addresses(NULL, other, 1, NULL, &set);
        assert_pick_from(spec, &set);
    }
}

static void test_include_with_exclusion(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN];
    /* After an include, '^' removes just its item. */
    assert_int_equal(pick("lo,^nosuchif0", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(pick("127.0.0.0/8,^docker0", NULL, addr), DT_OK);
    assert_string_equal(addr, "127.0.0.1");
    /* Including and excluding the same thing leaves nothing. */
    assert_int_equal(pick("lo,^lo", NULL, addr), DT_ERR_CONFIG);
    /* lo without 127.0.0.1: its other addresses (::1) where it has
     * them, else nothing. */
    addr_set_t set;
    usable_addresses("lo", NULL, 0, "127.0.0.1", &set);
    assert_pick_from("lo,^127.0.0.1", &set);
}

static void test_no_match_lists_interfaces(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN], msg[8192];
    assert_int_equal(pick_capture("nosuchif0", addr, msg, sizeof msg),
                     DT_ERR_CONFIG);
    assert_non_null(strstr(msg, "nosuchif0"));
    assert_non_null(strstr(msg, "lo 127.0.0.1"));
    assert_int_equal(pick_capture("0.0.0.0/32", addr, msg, sizeof msg),
                     DT_ERR_CONFIG);
    assert_non_null(strstr(msg, "lo 127.0.0.1"));
}

static void test_malformed(void **state)
{
    (void)state;
    char addr[DT_NETIF_ADDR_LEN];
    assert_int_equal(pick("10.0.0.0/33", NULL, addr), DT_ERR_CONFIG);
    assert_int_equal(pick("10.0.0.0/", NULL, addr), DT_ERR_CONFIG);
    assert_int_equal(pick("10.0.0/8", NULL, addr), DT_ERR_CONFIG);
    assert_int_equal(pick("averyveryverylongname0", NULL, addr),
                     DT_ERR_CONFIG);
    assert_int_equal(pick("lo,^", NULL, addr), DT_ERR_CONFIG);
}

static void test_is_local(void **state)
{
    (void)state;
    char me[256];
    assert_int_equal(gethostname(me, sizeof me), 0);
    assert_true(dt_netif_is_local("localhost"));
    assert_true(dt_netif_is_local("127.0.0.1"));
    assert_true(dt_netif_is_local("127.0.1.1"));
    assert_true(dt_netif_is_local(me));
    assert_false(dt_netif_is_local("192.0.2.1"));
    assert_false(dt_netif_is_local(""));
}

/* The interface behind a bind address: an address listed on it, any
 * address of a loopback interface's subnet (transports keep such ranks on
 * loopback), and nothing for an address not on this machine. */
static void test_name_of(void **state)
{
    (void)state;
    char lo[IF_NAMESIZE + 1], lo2[IF_NAMESIZE + 1], none[IF_NAMESIZE + 1],
        bad[IF_NAMESIZE + 1], other[IF_NAMESIZE + 1], got[IF_NAMESIZE + 1];
    dt_netif_name_of("127.0.0.1", lo, sizeof lo);
    assert_true(lo[0] != '\0');
    assert_true(if_nametoindex(lo) > 0);
    dt_netif_name_of("127.0.0.2", lo2, sizeof lo2);
    assert_string_equal(lo2, lo);
    dt_netif_name_of("192.0.2.1", none, sizeof none);
    assert_string_equal(none, "");
    dt_netif_name_of("not-an-address", bad, sizeof bad);
    assert_string_equal(bad, "");
    /* Another interface's own address names that interface. */
    other_ipv4_interface(other, sizeof other);
    if (!other[0])
        return;
    char addr[DT_NETIF_ADDR_LEN];
    assert_int_equal(pick(other, NULL, addr), DT_OK);
    dt_netif_name_of(addr, got, sizeof got);
    assert_string_equal(got, other);
}

/* The default route's interface (what scheduler-placed jobs face) is one
 * of ours; without a default route the answer is "not found", never junk. */
static void test_default_route(void **state)
{
    (void)state;
    /* Every interface holding a default route (any may be chosen). */
    char addr[DT_NETIF_ADDR_LEN] = "", devs[512] = " ";
    FILE *f = fopen("/proc/net/route", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char name[64];
        unsigned long dest;
        if (sscanf(line, "%63s %lx", name, &dest) == 2 && dest == 0 &&
            strlen(devs) + strlen(name) + 2 < sizeof devs) {
            strcat(devs, name);
            strcat(devs, " ");
        }
    }
    if (f)
        fclose(f);
    /* The IPv4 addresses of the default route's interface, read here
     * independently: the answer must be one of them. */
    struct ifaddrs *ifs = NULL, *i;
    int dev_has_v4 = 0;
    char key[80];
    if (devs[1] && getifaddrs(&ifs) == 0)
        for (i = ifs; i; i = i->ifa_next) {
            snprintf(key, sizeof key, " %s ", i->ifa_name);
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
                strstr(devs, key))
                dev_has_v4 = 1;
        }
    dt_status_t st = dt_netif_default_route(addr, sizeof addr);
    if (!dev_has_v4) { /* none, or on an interface without IPv4: the
                        * IPv6 default route's address, if any
                        * (tests/ipv6_netns.sh checks which) */
        freeifaddrs(ifs);
        if (st == DT_OK && !strchr(addr, ':'))
            fail_msg("no IPv4 default route, yet an IPv4 answer: %s", addr);
        assert_true(st == DT_OK || st == DT_ERR_NOT_FOUND);
        return;
    }
    assert_int_equal(st, DT_OK);
    int on_dev = 0;
    for (i = ifs; i; i = i->ifa_next) {
        char a[INET_ADDRSTRLEN];
        snprintf(key, sizeof key, " %s ", i->ifa_name);
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            strstr(devs, key) &&
            inet_ntop(AF_INET,
                      &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
                      a, sizeof a) &&
            strcmp(a, addr) == 0)
            on_dev = 1;
    }
    freeifaddrs(ifs);
    if (!on_dev)
        fail_msg("default route via%s, but dt_netif_default_route gave %s, "
                 "not an address of one of them", devs, addr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_unresolvable_peer),
        cmocka_unit_test(test_cidr_and_address),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_exclusion),
        cmocka_unit_test(test_include_with_exclusion),
        cmocka_unit_test(test_no_match_lists_interfaces),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_is_local),
        cmocka_unit_test(test_name_of),
        cmocka_unit_test(test_default_route),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
