/* host_local.c — recognise names of this machine without DNS. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <dt/hosts.h>

/* a equals b, or a equals b's first label ("node1" vs "node1.example"). */
static int same_host(const char *a, const char *b)
{
    if (strcasecmp(a, b) == 0)
        return 1;
    size_t short_len = strcspn(b, ".");
    return strlen(a) == short_len && strncasecmp(a, b, short_len) == 0;
}

/* ::1 in any spelling (0:0:0:0:0:0:0:1), or 127.x.y.z mapped into IPv6. */
static int ipv6_loopback(const char *name)
{
    struct in6_addr a;
    if (inet_pton(AF_INET6, name, &a) != 1)
        return 0;
    return IN6_IS_ADDR_LOOPBACK(&a) ||
           (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
}

int dt_host_is_local(const char *name)
{
    if (!name || !*name)
        return 0;
    /* ip6-localhost, ip6-loopback: Debian's /etc/hosts names of ::1 */
    if (strcasecmp(name, "localhost") == 0 ||
        strcasecmp(name, "localhost.localdomain") == 0 ||
        strcasecmp(name, "ip6-localhost") == 0 ||
        strcasecmp(name, "ip6-loopback") == 0 || ipv6_loopback(name) ||
        strncmp(name, "127.", 4) == 0)
        return 1;
    char self[256];
    if (gethostname(self, sizeof self) != 0)
        return 0;
    self[sizeof self - 1] = '\0';
    return same_host(name, self) || same_host(self, name);
}
