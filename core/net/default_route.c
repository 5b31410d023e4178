/* default_route.c — the address facing the default route, for jobs whose
 * hosts a scheduler picks after dtctl starts (see netif.h). IPv4's route
 * first, as before; an IPv6-only host has only the IPv6 one. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <dt/netif.h>

#define ROUTE_UP 0x1u      /* RTF_UP */
#define ROUTE_REJECT 0x200u /* RTF_REJECT: "unreachable", no way out */

/* The interface of the IPv4 default route (/proc/net/route). */
static int ipv4_default_iface(char *iface)
{
    FILE *f = fopen("/proc/net/route", "r");
    char line[512], name[64];
    unsigned long dest, gw;
    unsigned flags;
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        if (sscanf(line, "%63s %lx %lx %x", name, &dest, &gw, &flags) == 4 &&
            dest == 0 && (flags & ROUTE_UP) && strlen(name) <= IF_NAMESIZE) {
            strcpy(iface, name);
            found = 1;
        }
    if (f)
        fclose(f);
    return found;
}

/* The interface of the IPv6 default route (/proc/net/ipv6_route: ::/0,
 * up, not the kernel's "unreachable" entry on lo). */
static int ipv6_default_iface(char *iface)
{
    FILE *f = fopen("/proc/net/ipv6_route", "r");
    char line[512], dest[40], name[64];
    unsigned plen, flags;
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        if (sscanf(line, "%39s %x %*s %*s %*s %*s %*s %*s %x %63s", dest,
                   &plen, &flags, name) == 4 &&
            plen == 0 && strspn(dest, "0") == 32 && (flags & ROUTE_UP) &&
            !(flags & ROUTE_REJECT) && strlen(name) <= IF_NAMESIZE) {
            strcpy(iface, name);
            found = 1;
        }
    if (f)
        fclose(f);
    return found;
}

/* iface's first address of family: for IPv6 one peers can use without a
 * scope id (not link-local). */
static int address_of(const struct ifaddrs *ifs, const char *iface,
                      int family, char *addr, size_t addrlen)
{
    for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != family ||
            strcmp(i->ifa_name, iface) != 0)
            continue;
        const void *raw =
            family == AF_INET
                ? (const void *)&((const struct sockaddr_in *)(const void *)
                                      i->ifa_addr)->sin_addr
                : (const void *)&((const struct sockaddr_in6 *)(const void *)
                                      i->ifa_addr)->sin6_addr;
        if (family == AF_INET6 &&
            IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)raw))
            continue;
        if (inet_ntop(family, raw, addr, (socklen_t)addrlen))
            return 1;
    }
    return 0;
}

dt_status_t dt_netif_default_route(char *addr, size_t addrlen)
{
    char v4[IF_NAMESIZE + 1] = "", v6[IF_NAMESIZE + 1] = "";
    int has4 = ipv4_default_iface(v4), has6 = ipv6_default_iface(v6);
    if (!has4 && !has6)
        return DT_ERR_NOT_FOUND;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return DT_ERR_IO;
    int found = (has4 && address_of(ifs, v4, AF_INET, addr, addrlen)) ||
                (has6 && address_of(ifs, v6, AF_INET6, addr, addrlen));
    freeifaddrs(ifs);
    return found ? DT_OK : DT_ERR_NOT_FOUND;
}
