/* netif.h — which network interface a job uses, and what interface an
 * address belongs to (transports name the device their library should use:
 * UCX_NET_DEVICES, NCCL_SOCKET_IFNAME).
 *
 * `[cluster] interface` (or DT_INTERFACE) is a list of items, like Open
 * MPI's btl_tcp_if_include or NCCL_SOCKET_IFNAME:
 *   eth0            an interface name (exact)
 *   10.0.0.0/24     every interface with an address in that network
 *   10.0.0.5        the interface holding that address
 *   eth0,ib0        any of these
 *   ^docker0,lo     anything except these (a leading '^' makes the whole
 *                   list an exclusion list)
 *   eth0,10.0.0.0/24,^docker0   after an include, '^' excludes one item
 * With no spec, the address is the one the kernel would use to reach the
 * peer (a UDP socket connected to it, then getsockname), or 127.0.0.1 when
 * there is no peer (a single-host job). Among the allowed interfaces that
 * route address wins when allowed; otherwise the first match in spec order,
 * IPv4 before IPv6. */
#ifndef DT_NETIF_H
#define DT_NETIF_H

#include <stddef.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_NETIF_ADDR_LEN 64

/* Choose the local address to listen on / advertise.
 * spec, n: the list items (n == 0: the default described above).
 * peer: a host to route towards; NULL for a single-host job.
 * where: where the spec came from ("--set", "job.ini:5"), said before
 *   "[cluster] interface" in messages; NULL or "cluster.interface": none.
 * addr: the numeric address (DT_NETIF_ADDR_LEN bytes).
 * DT_ERR_CONFIG (logged, with every interface here and its addresses) when
 * the spec is malformed or matches nothing; DT_ERR_NOT_FOUND when there is
 * no route to peer. */
dt_status_t dt_netif_select(char *const *spec, size_t n, const char *peer,
                            const char *where, char *addr, size_t addrlen);

/* The address the kernel would use to reach host (resolved by name). */
dt_status_t dt_netif_route_to(const char *host, char *addr, size_t addrlen);

/* The IPv4 address of the interface holding the default route (from
 * /proc/net/route; no traffic is sent); without one (an IPv6-only host),
 * a global IPv6 address of the interface holding the IPv6 default route
 * (/proc/net/ipv6_route). DT_ERR_NOT_FOUND when there is no default route.
 * Used when a scheduler, not dtctl, picks the hosts. */
dt_status_t dt_netif_default_route(char *addr, size_t addrlen);

/* The name of the interface holding the numeric address addr (e.g. the
 * bind address a transport got), or "" when none here holds it. An
 * address in a loopback interface's subnet (127.0.0.2) is that
 * interface's. */
void dt_netif_name_of(const char *addr, char *name, size_t len);

/* 1 when host names this machine: "localhost", a loopback address, one of
 * our interface addresses or our host name. */
int dt_netif_is_local(const char *host);

#ifdef __cplusplus
}
#endif
#endif /* DT_NETIF_H */
