/* mpi_rsh.c — how mpirun reaches other hosts. [launcher.mpi] rsh_agent
 * is used as written; otherwise ssh_identity / ssh_known_hosts / ssh_port
 * build an OpenSSH command that still verifies host keys
 * (StrictHostKeyChecking=yes, never "no") and never prompts (BatchMode),
 * so an unknown host fails at once instead of hanging mpirun. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "mpi_rsh.h"
#include "mpi_types.h"

/* Open MPI splits plm_rsh_agent at spaces: a path with one cannot be
 * passed through it. */
static dt_status_t check_path(const char *key, const char *path)
{
    if (strpbrk(path, " \t\n")) {
        dt_error("[launcher.mpi] %s = '%s' contains a space, which Open "
                 "MPI's plm_rsh_agent cannot carry; use a path without "
                 "spaces (a symlink)",
                 key, path);
        return DT_ERR_CONFIG;
    }
    if (access(path, R_OK) != 0) {
        dt_error("[launcher.mpi] %s = '%s' cannot be read: %m; give an "
                 "existing file readable by the user running dtctl",
                 key, path);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

dt_status_t mpi_build_rsh_agent(mpi_conf_t *c)
{
    const char *id = c->ssh_identity, *kh = c->ssh_known_hosts;
    long long port = c->ssh_port;
    if (!*id && !*kh && port == 0)
        return DT_OK; /* rsh_agent, or Open MPI's default (ssh) */
    if (*c->rsh_agent) {
        dt_error("[launcher.mpi] rsh_agent is set together with ssh_identity "
                 "/ ssh_known_hosts / ssh_port; use either rsh_agent (the "
                 "whole command) or the ssh_* keys");
        return DT_ERR_CONFIG;
    }
    if (port < 0 || port > 65535) {
        dt_error("[launcher.mpi] ssh_port = %lld is not a port (1-65535, or "
                 "0 for ssh's default)",
                 port);
        return DT_ERR_CONFIG;
    }
    if (*id)
        DT_CHECK(check_path("ssh_identity", id));
    if (*kh)
        DT_CHECK(check_path("ssh_known_hosts", kh));
    char portopt[32] = "";
    if (port)
        snprintf(portopt, sizeof portopt, " -p %lld", port);
    char *s = NULL;
    if (asprintf(&s,
                 "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes%s%s%s%s%s",
                 portopt, *id ? " -o IdentitiesOnly=yes -i " : "", id,
                 *kh ? " -o GlobalKnownHostsFile=/dev/null "
                       "-o UserKnownHostsFile="
                     : "",
                 kh) < 0)
        return DT_ERR_NOMEM;
    c->rsh_agent_built = s;
    c->rsh_agent = s;
    return DT_OK;
}
