/* check_iface.c — [cluster] interface against another host's addresses
 * (see check_iface.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_iface.h"

typedef struct addr {
    char name[64];
    char text[80];
    int family;
    unsigned char bytes[16];
} addr_t;

/* "2: dt0    inet 10.77.1.2/24 brd ..." -> name, address. */
static int parse_line(const char *line, addr_t *a)
{
    char idx[16], name[64], fam[16], cidr[80];
    if (sscanf(line, "%15s %63s %15s %79s", idx, name, fam, cidr) != 4)
        return 0;
    a->family = strcmp(fam, "inet") == 0    ? AF_INET
                : strcmp(fam, "inet6") == 0 ? AF_INET6
                                            : 0;
    if (!a->family)
        return 0;
    char *at = strchr(name, '@');
    if (at)
        *at = '\0';
    char *slash = strchr(cidr, '/');
    if (slash)
        *slash = '\0';
    snprintf(a->name, sizeof a->name, "%s", name);
    snprintf(a->text, sizeof a->text, "%s", cidr);
    return inet_pton(a->family, a->text, a->bytes) == 1;
}

static int is_loopback(const addr_t *a)
{
    if (a->family == AF_INET)
        return a->bytes[0] == 127;
    static const unsigned char lo6[16] = {[15] = 1};
    return memcmp(a->bytes, lo6, 16) == 0;
}

static int prefix_equal(const unsigned char *x, const unsigned char *y,
                        int bits)
{
    int full = bits / 8, rest = bits % 8;
    if (memcmp(x, y, (size_t)full) != 0)
        return 0;
    if (!rest)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (x[full] & mask) == (y[full] & mask);
}

static int item_matches(const char *item, const addr_t *a)
{
    if (strcmp(item, a->name) == 0 || strcmp(item, a->text) == 0)
        return 1;
    const char *slash = strchr(item, '/');
    if (!slash)
        return 0;
    char net[64];
    unsigned char bytes[16];
    size_t len = (size_t)(slash - item);
    if (len >= sizeof net)
        return 0;
    memcpy(net, item, len);
    net[len] = '\0';
    /* digits only, as core/net/netif.c reads them (atoi took "/abc" for
     * /0: every address matched, and the row passed a spec the workers
     * refuse) */
    const char *b = slash + 1;
    int bits = 0, max = a->family == AF_INET ? 32 : 128;
    if (!*b || strspn(b, "0123456789") != strlen(b) || strlen(b) > 3)
        return 0;
    bits = atoi(b);
    if (inet_pton(a->family, net, bytes) != 1 || bits > max)
        return 0;
    return prefix_equal(bytes, a->bytes, bits);
}

static int allowed(char *const *spec, size_t n, const addr_t *a)
{
    int all_excluded = n && spec[0][0] == '^', includes = 0, in = 0, out = 0;
    for (size_t i = 0; i < n; i++) {
        int excl = all_excluded || spec[i][0] == '^';
        const char *t = spec[i][0] == '^' ? spec[i] + 1 : spec[i];
        includes += !excl;
        if (item_matches(t, a)) {
            in |= !excl;
            out |= excl;
        }
    }
    return (in || includes == 0) && !out;
}

/* Appends ", NAME ADDR" to the list of interfaces seen (truncated). */
static void list_seen(char *found, size_t len, size_t *used, const addr_t *a)
{
    if (*used + 1 >= len)
        return;
    int w = snprintf(found + *used, len - *used, "%s%s %s", *used ? ", " : "",
                     a->name, a->text);
    *used += w > 0 ? (size_t)w : 0;
    if (*used >= len)
        *used = len - 1;
}

int check_iface_match(const char *ip_output, char *const *spec, size_t n,
                      char *found, size_t len)
{
    char *copy = strdup(ip_output ? ip_output : "");
    char lo[160] = ""; /* the first loopback address the spec allows */
    int seen = 0, hit = 0;
    size_t used = 0;
    found[0] = '\0';
    if (!copy)
        return -1;
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l && !hit;
         l = strtok_r(NULL, "\n", &save)) {
        addr_t a;
        if (!parse_line(l, &a))
            continue;
        seen = 1;
        int ok = allowed(spec, n, &a);
        if (ok && !is_loopback(&a)) {
            snprintf(found, len, "%s %s", a.name, a.text);
            hit = 1;
            continue;
        }
        if (ok && !lo[0])
            snprintf(lo, sizeof lo, "%s %s", a.name, a.text);
        list_seen(found, len, &used, &a);
    }
    free(copy);
    if (!hit && lo[0])
        snprintf(found, len, "%s", lo);
    return hit ? 1 : lo[0] ? 2 : seen ? 0 : -1;
}
