/* run_on_host.h — one command on a host (run_on_host.c). */
#ifndef DT_LAUNCHER_SSH_RUN_ON_HOST_H
#define DT_LAUNCHER_SSH_RUN_ON_HOST_H

#include <dt/plugin.h>
#include "ssh_types.h"

dt_status_t ssh_run_on_host(void *ctx, const dt_host_t *host,
                            const char *const *argv, char **output,
                            int *exit_code);
/* cmd: one line for the bootstrap shell (ending in a newline). */
dt_status_t ssh_run_on_conn(ssh_conn_t *c, const char *cmd, char **output,
                            int *exit_code);

#endif /* DT_LAUNCHER_SSH_RUN_ON_HOST_H */
