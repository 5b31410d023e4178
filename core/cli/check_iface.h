/* check_iface.h — does a host's interface list (the output of
 * `ip -o addr show up` run there) satisfy [cluster] interface? The same
 * rules as netif.h: names, addresses, CIDR networks, '^' exclusions. */
#ifndef DT_CLI_CHECK_IFACE_H
#define DT_CLI_CHECK_IFACE_H

#include <stddef.h>

/* 1 when a non-loopback address of ip_output is allowed by spec (n
 * items); `found` gets "NAME ADDR" of the first one. 2 when only loopback
 * addresses are: `found` gets the first ("lo 127.0.0.1"), which serves
 * workers that are all on one machine, not a job across hosts. 0 when
 * none is; `found` then lists the interfaces seen ("eth0 10.0.0.5, lo
 * 127.0.0.1"). -1 when ip_output holds no address at all. */
int check_iface_match(const char *ip_output, char *const *spec, size_t n,
                      char *found, size_t len);

#endif /* DT_CLI_CHECK_IFACE_H */
