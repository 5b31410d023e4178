/* netif.c — interface selection: match [cluster] interface against
 * getifaddrs(), defaulting to the route towards a peer. See netif.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/hosts.h>
#include <dt/log.h>
#include <dt/netif.h>

/* One usable address of one interface. */
typedef struct cand {
    char name[IF_NAMESIZE + 1];
    int family;
    unsigned char bytes[16]; /* 4 for IPv4, 16 for IPv6 */
    char text[DT_NETIF_ADDR_LEN];
    int loopback;
} cand_t;

typedef struct item {
    enum { IT_NAME, IT_ADDR, IT_CIDR } kind;
    const char *text; /* without the '^' */
    int family;
    unsigned char bytes[16];
    int prefix;
    int exclude;      /* a '^' item: never use what it matches */
} item_t;

static int addr_len(int family) { return family == AF_INET ? 4 : 16; }

/* Every up interface's IPv4 and (non link-local) IPv6 addresses. */
static dt_status_t list_candidates(cand_t **out, size_t *n)
{
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa)) {
        dt_error("cannot list network interfaces (getifaddrs): %m");
        return DT_ERR_IO;
    }
    size_t cap = 0;
    cand_t *c = NULL;
    *n = 0;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
            continue;
        int fam = i->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        const void *raw =
            fam == AF_INET
                ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
                : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
        if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)raw))
            continue; /* needs a scope id: useless for a job's peers */
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            cand_t *nc = realloc(c, cap * sizeof *nc);
            if (!nc) {
                free(c);
                freeifaddrs(ifa);
                return DT_ERR_NOMEM;
            }
            c = nc;
        }
        cand_t *x = &c[(*n)++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", i->ifa_name);
        x->family = fam;
        memcpy(x->bytes, raw, (size_t)addr_len(fam));
        inet_ntop(fam, raw, x->text, sizeof x->text);
        x->loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    }
    freeifaddrs(ifa);
    *out = c;
    return DT_OK;
}

/* "lo 127.0.0.1 ::1, eth0 10.0.0.2" for error messages (malloc'd). */
static char *describe(const cand_t *c, size_t n)
{
    size_t cap = 32 + n * (IF_NAMESIZE + DT_NETIF_ADDR_LEN + 4), len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    snprintf(s, cap, "(none that is up)");
    for (size_t i = 0; i < n; i++) {
        size_t first = 0;
        while (strcmp(c[first].name, c[i].name) != 0)
            first++;
        if (first < i)
            continue; /* already listed with its interface */
        len += (size_t)snprintf(s + len, cap - len, "%s%s", len ? ", " : "",
                                c[i].name);
        for (size_t j = i; j < n; j++)
            if (strcmp(c[j].name, c[i].name) == 0)
                len += (size_t)snprintf(s + len, cap - len, " %s", c[j].text);
    }
    return s;
}

/* "; not in use here: ib0 (down), eth1 (no carrier)": the interfaces a
 * spec may have meant that are not candidates, for the error; "" when
 * none. Each named once. */
static void not_in_use(char *buf, size_t len)
{
    struct ifaddrs *ifa = NULL;
    size_t at = 0;
    buf[0] = '\0';
    if (getifaddrs(&ifa))
        return;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        unsigned f = i->ifa_flags;
        if ((f & IFF_LOOPBACK) || ((f & IFF_UP) && (f & IFF_RUNNING)))
            continue;
        int seen = 0;
        for (struct ifaddrs *j = ifa; j != i && !seen; j = j->ifa_next)
            seen = strcmp(j->ifa_name, i->ifa_name) == 0;
        if (seen || at + 64 >= len)
            continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%s (%s)",
                               at ? ", " : "; not in use here: ",
                               i->ifa_name,
                               !(f & IFF_UP) ? "down" : "no carrier");
    }
    freeifaddrs(ifa);
}

static char *join(char *const *spec, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(spec[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(s, ",");
        strcat(s, spec[i]);
    }
    return s;
}

static dt_status_t parse_item(const char *text, item_t *it)
{
    memset(it, 0, sizeof *it);
    it->text = text;
    const char *slash = strchr(text, '/');
    char buf[DT_NETIF_ADDR_LEN];
    if (slash) {
        size_t n = (size_t)(slash - text);
        char *end;
        long p = strtol(slash + 1, &end, 10);
        if (n == 0 || n >= sizeof buf || *end || !slash[1])
            return DT_ERR_CONFIG;
        memcpy(buf, text, n);
        buf[n] = '\0';
        it->kind = IT_CIDR;
        it->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
        if (inet_pton(it->family, buf, it->bytes) != 1 || p < 0 ||
            p > 8 * addr_len(it->family))
            return DT_ERR_CONFIG;
        it->prefix = (int)p;
        return DT_OK;
    }
    if (inet_pton(AF_INET, text, it->bytes) == 1) {
        it->kind = IT_ADDR;
        it->family = AF_INET;
    } else if (inet_pton(AF_INET6, text, it->bytes) == 1) {
        it->kind = IT_ADDR;
        it->family = AF_INET6;
    } else {
        it->kind = IT_NAME;
        if (!*text || strlen(text) > IF_NAMESIZE)
            return DT_ERR_CONFIG;
    }
    return DT_OK;
}

static int item_matches(const item_t *it, const cand_t *c)
{
    switch (it->kind) {
    case IT_NAME: return strcmp(it->text, c->name) == 0;
    case IT_ADDR:
        return it->family == c->family &&
               memcmp(it->bytes, c->bytes, (size_t)addr_len(c->family)) == 0;
    case IT_CIDR: {
        if (it->family != c->family)
            return 0;
        int full = it->prefix / 8, rest = it->prefix % 8;
        if (memcmp(it->bytes, c->bytes, (size_t)full) != 0)
            return 0;
        unsigned char mask = (unsigned char)(0xff << (8 - rest));
        return !rest || ((it->bytes[full] ^ c->bytes[full]) & mask) == 0;
    }
    }
    return 0;
}

dt_status_t dt_netif_route_to(const char *host, char *addr, size_t addrlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM};
    struct addrinfo *ai = NULL;
    dt_status_t st = DT_ERR_NOT_FOUND;
    if (getaddrinfo(host, "9", &hints, &ai) != 0)
        return DT_ERR_NOT_FOUND;
    /* connect() on UDP sends nothing: it only asks the kernel for a route. */
    for (struct addrinfo *a = ai; a && st != DT_OK; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
            getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
            getnameinfo((struct sockaddr *)&ss, len, addr, (socklen_t)addrlen,
                        NULL, 0, NI_NUMERICHOST) == 0)
            st = DT_OK;
        close(fd);
    }
    freeaddrinfo(ai);
    return st;
}

static const cand_t *find_text(const cand_t *c, size_t n, const char *text,
                               const unsigned char *allowed)
{
    for (size_t i = 0; i < n; i++)
        if (allowed[i] && strcmp(c[i].text, text) == 0)
            return &c[i];
    return NULL;
}

dt_status_t dt_netif_select(char *const *spec, size_t n, const char *peer,
                            const char *where, char *addr, size_t addrlen)
{
    cand_t *c = NULL;
    size_t nc = 0;
    item_t *items = NULL;
    unsigned char *allowed = NULL;
    char *spec_text = NULL, *have = NULL;
    char route[DT_NETIF_ADDR_LEN] = "127.0.0.1";
    const cand_t *pick = NULL;
    dt_status_t st;
    /* where: an origin ("--set", "job.ini:5") said before the key, or
     * the key's own name (no origin known) */
    char key[160];
    if (!where || !strcmp(where, "cluster.interface"))
        snprintf(key, sizeof key, "[cluster] interface");
    else
        snprintf(key, sizeof key, "%s: [cluster] interface", where);
    where = key;

    if (peer && dt_netif_route_to(peer, route, sizeof route) != DT_OK) {
        /* A name only ssh resolves (a ~/.ssh/config alias) has no route
         * here: with [cluster] interface set, the spec alone chooses. */
        if (n == 0) {
            dt_error("no route from this host to '%s' (cannot resolve or "
                     "reach it); check the host name, or set [cluster] "
                     "interface",
                     peer);
            return DT_ERR_NOT_FOUND;
        }
        dt_debug("interface: no route to '%s' from here (a name only ssh "
                 "resolves?): %s = ... alone chooses",
                 peer, where);
        route[0] = '\0';
    }
    if (n == 0) {
        snprintf(addr, addrlen, "%s", route);
        if (peer)
            dt_debug("interface: using %s (the route to %s)", addr, peer);
        else
            dt_debug("interface: using %s (loopback: single-host job)", addr);
        return DT_OK;
    }
    if ((st = list_candidates(&c, &nc)) != DT_OK)
        return st;
    st = DT_ERR_NOMEM;
    items = calloc(n, sizeof *items);
    allowed = calloc(nc + 1, 1);
    spec_text = join(spec, n);
    have = describe(c, nc);
    if (!items || !allowed || !spec_text || !have)
        goto out;

    /* A leading '^' excludes the whole list (NCCL's ^docker0,lo); else
     * '^' excludes just its item and the others include. */
    int all_excluded = spec[0][0] == '^', includes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = spec[i];
        if (parse_item(t[0] == '^' ? t + 1 : t, &items[i]) != DT_OK) {
            dt_error("%s = '%s': '%s' is not an interface name, an address "
                     "or a CIDR network (10.0.0.0/24); interfaces here: %s",
                     where, spec_text, t, have);
            st = DT_ERR_CONFIG;
            goto out;
        }
        items[i].exclude = all_excluded || t[0] == '^';
        includes += !items[i].exclude;
    }
    for (size_t j = 0; j < nc; j++) {
        int in = includes == 0, out = 0;
        for (size_t i = 0; i < n; i++)
            if (item_matches(&items[i], &c[j])) {
                in |= !items[i].exclude;
                out |= items[i].exclude;
            }
        allowed[j] = (unsigned char)(in && !out);
    }
    /* The route's own address when allowed; else the first allowed one in
     * spec order (only exclusions: non-loopback first), IPv4 first. */
    pick = find_text(c, nc, route, allowed);
    for (int fam = 0; !pick && fam < 2; fam++) {
        int family = fam == 0 ? AF_INET : AF_INET6;
        if (!includes) {
            for (int lo = 0; !pick && lo < 2; lo++)
                for (size_t j = 0; !pick && j < nc; j++)
                    if (allowed[j] && c[j].family == family &&
                        c[j].loopback == lo)
                        pick = &c[j];
        } else {
            for (size_t i = 0; !pick && i < n; i++)
                for (size_t j = 0; !pick && j < nc; j++)
                    if (allowed[j] && c[j].family == family &&
                        !items[i].exclude && item_matches(&items[i], &c[j]))
                        pick = &c[j];
        }
    }
    if (!pick) {
        char idle[512];
        not_in_use(idle, sizeof idle);
        dt_error("%s = '%s' matches no network interface of this host; "
                 "interfaces here: %s%s",
                 where, spec_text, have, idle);
        st = DT_ERR_CONFIG;
        goto out;
    }
    snprintf(addr, addrlen, "%s", pick->text);
    dt_debug("interface: using %s (%s), from %s = '%s'", addr, pick->name,
             where, spec_text);
    st = DT_OK;
out:
    free(c);
    free(items);
    free(allowed);
    free(spec_text);
    free(have);
    return st;
}

int dt_netif_is_local(const char *host)
{
    if (!host || !*host)
        return 0;
    if (dt_host_is_local(host)) /* loopback names and spellings, ours */
        return 1;
    char me[256];
    if (gethostname(me, sizeof me) == 0) {
        me[sizeof me - 1] = '\0';
        size_t len = strcspn(me, ".");
        if (strcmp(host, me) == 0 ||
            (strlen(host) == len && strncmp(host, me, len) == 0))
            return 1;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, NULL, &hints, &ai) != 0)
        return 0;
    cand_t *c = NULL;
    size_t nc = 0;
    int local = 0;
    if (list_candidates(&c, &nc) == DT_OK) {
        for (struct addrinfo *a = ai; a && !local; a = a->ai_next) {
            const unsigned char *b =
                a->ai_family == AF_INET
                    ? (const unsigned char *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
                    : (const unsigned char *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
            if (a->ai_family == AF_INET && b[0] == 127)
                local = 1;
            for (size_t j = 0; j < nc && !local; j++)
                local = c[j].family == a->ai_family &&
                        memcmp(c[j].bytes, b, (size_t)addr_len(c[j].family)) == 0;
        }
        free(c);
    }
    freeaddrinfo(ai);
    return local;
}

/* Whether a and b (len bytes) agree under mask. */
static int same_subnet(const unsigned char *a, const unsigned char *b,
                       const unsigned char *mask, size_t len)
{
    for (size_t k = 0; k < len; k++)
        if ((a[k] ^ b[k]) & mask[k])
            return 0;
    return 1;
}

static const unsigned char *in_addr_of(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET
               ? (const unsigned char *)&((const struct sockaddr_in *)sa)
                     ->sin_addr
               : (const unsigned char *)&((const struct sockaddr_in6 *)sa)
                     ->sin6_addr;
}

void dt_netif_name_of(const char *addr, char *name, size_t len)
{
    struct ifaddrs *ifs = NULL;
    unsigned char want[sizeof(struct in6_addr)];
    int fam = inet_pton(AF_INET, addr, want) == 1    ? AF_INET
              : inet_pton(AF_INET6, addr, want) == 1 ? AF_INET6
                                                     : 0;
    name[0] = '\0';
    if (!fam || getifaddrs(&ifs) != 0)
        return;
    size_t alen = (size_t)addr_len(fam);
    const char *lo_match = NULL;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != fam)
            continue;
        if (memcmp(in_addr_of(i->ifa_addr), want, alen) == 0) {
            snprintf(name, len, "%s", i->ifa_name);
            break;
        }
        /* The kernel delivers a loopback interface's whole subnet
         * (127.0.0.2 is lo's as much as 127.0.0.1 is), not only the
         * addresses listed on it. */
        if (!lo_match && (i->ifa_flags & IFF_LOOPBACK) && i->ifa_netmask &&
            i->ifa_netmask->sa_family == fam &&
            same_subnet(in_addr_of(i->ifa_addr), want,
                        in_addr_of(i->ifa_netmask), alen))
            lo_match = i->ifa_name;
    }
    if (!name[0] && lo_match)
        snprintf(name, len, "%s", lo_match);
    freeifaddrs(ifs);
}
