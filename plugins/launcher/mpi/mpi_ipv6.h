/* mpi_ipv6.h — what Open MPI's mpirun cannot take over IPv6 (mpi_ipv6.c). */
#ifndef DT_LAUNCHER_MPI_IPV6_H
#define DT_LAUNCHER_MPI_IPV6_H

#include <stddef.h>
#include <dt/status.h>

/* DT_ERR_CONFIG, with why and the fix in why, when host is an IPv6
 * address; DT_OK otherwise. */
dt_status_t mpi_ipv6_host_refusal(const char *host, char *why, size_t len);

/* The same for the [cluster] interface items (NULL-terminated, may be
 * NULL): the first that is an IPv6 address or network. */
dt_status_t mpi_ipv6_interface_refusal(char *const *interface, char *why,
                                       size_t len);

#endif /* DT_LAUNCHER_MPI_IPV6_H */
