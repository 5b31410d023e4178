/* check.h — the preflight for `dtctl check` (check.c). */
#ifndef DT_LAUNCHER_SSH_CHECK_H
#define DT_LAUNCHER_SSH_CHECK_H

#include <dt/plugin.h>

dt_status_t ssh_check(void *ctx, const dt_hostlist_t *hosts,
                      void (*report)(void *arg, const char *host,
                                     const char *problem),
                      void *arg);

#endif /* DT_LAUNCHER_SSH_CHECK_H */
