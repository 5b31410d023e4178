/* nccl_env.c — [transport.nccl] keys become NCCL's own variables, set in
 * this worker's environment before NCCL reads them (at communicator init):
 * socket_ifname -> NCCL_SOCKET_IFNAME (default: the interface [cluster]
 * interface selects, when it is set), ib_hca -> NCCL_IB_HCA, debug ->
 * NCCL_DEBUG. A key left empty keeps whatever the environment has. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <dt/log.h>
#include "nccl_tp.h"
#include <dt/netif.h>

#define SECTION "transport.nccl"

/* The name of the interface that holds addr, or "" if none. */

static dt_status_t set_var(const char *var, const char *value,
                           const char *key)
{
    if (setenv(var, value, 1) != 0) {
        dt_error("nccl: cannot set %s from [transport.nccl] %s", var, key);
        return DT_ERR_NOMEM;
    }
    dt_debug("nccl: %s=%s", var, value);
    return DT_OK;
}

dt_status_t nccl_apply_env(const dt_config_t *cfg,
                           const dt_transport_args_t *a)
{
    static const struct {
        const char *key, *var;
    } map[] = {{"socket_ifname", "NCCL_SOCKET_IFNAME"},
               {"ib_hca", "NCCL_IB_HCA"},
               {"debug", "NCCL_DEBUG"}};
    for (size_t i = 0; cfg && i < sizeof map / sizeof map[0]; i++) {
        const char *v = "";
        DT_CHECK(dt_config_get_string(cfg, SECTION, map[i].key, &v));
        if (*v)
            DT_CHECK(set_var(map[i].var, v, map[i].key));
    }
    const char *ifn = cfg ? dt_config_get(cfg, SECTION, "socket_ifname") : NULL;
    if ((!ifn || !*ifn) && !getenv("NCCL_SOCKET_IFNAME") && cfg &&
        dt_config_get(cfg, "cluster", "interface") && a->bind_addr) {
        char name[IF_NAMESIZE + 1];
        dt_netif_name_of(a->bind_addr, name, sizeof name);
        if (name[0])
            DT_CHECK(set_var("NCCL_SOCKET_IFNAME", name,
                             "socket_ifname (from [cluster] interface)"));
    }
    return DT_OK;
}
