/* hostkey.h — the server's key against known_hosts (hostkey.c). */
#ifndef DT_LAUNCHER_SSH_HOSTKEY_H
#define DT_LAUNCHER_SSH_HOSTKEY_H

#include <dt/plugin.h>
#include "ssh_types.h"

/* Check the server's key against known_hosts. */
dt_status_t ssh_verify_host_key(const ssh_opts_t *o, ssh_conn_t *c);

#endif /* DT_LAUNCHER_SSH_HOSTKEY_H */
