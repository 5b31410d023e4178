/* mpi_ipv6.c — refuse, before mpirun starts, what Open MPI 4.1 fails on
 * over IPv6 with messages about something else: an IPv6 address as a
 * host (its node-name check stops at the first ':'; "[fd00::7]:2" fails
 * too), and an IPv6 network or address in oob_tcp_if_include (it reads
 * only interface names and IPv4 networks: "None of the TCP networks
 * specified ... could be found"). Names that resolve to IPv6 work. */
#include <stdio.h>
#include <string.h>

#include "mpi_ipv6.h"

dt_status_t mpi_ipv6_host_refusal(const char *host, char *why, size_t len)
{
    if (!strchr(host, ':')) /* a name or IPv4: no ':' */
        return DT_OK;
    snprintf(why, len,
             "host '%s' is an IPv6 address, which Open MPI's mpirun cannot "
             "take as a host (only names: letters, digits, '.', '-'); give "
             "it a name that resolves to it (DNS, or /etc/hosts on this "
             "machine%s), or use --launcher=ssh",
             host,
             strcmp(host, "::1") == 0 ? "; this machine: localhost" : "");
    return DT_ERR_CONFIG;
}

dt_status_t mpi_ipv6_interface_refusal(char *const *interface, char *why,
                                       size_t len)
{
    for (size_t i = 0; interface && interface[i]; i++) {
        const char *item = interface[i] + (interface[i][0] == '^');
        if (!strchr(item, ':'))
            continue;
        snprintf(why, len,
                 "[cluster] interface item '%s' is an IPv6 %s, which Open "
                 "MPI's mpirun cannot match (oob_tcp_if_include and "
                 "btl_tcp_if_include take interface names and IPv4 "
                 "networks); name the interface instead (e.g. eth0), or "
                 "use --launcher=ssh",
                 interface[i], strchr(item, '/') ? "network" : "address");
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}
