/* connect.h — sessions: open, verify, authenticate (connect.c). */
#ifndef DT_LAUNCHER_SSH_CONNECT_H
#define DT_LAUNCHER_SSH_CONNECT_H

#include <dt/plugin.h>
#include "ssh_types.h"

/* Open, verify the host key, authenticate. On failure c->err
 * says what and how to fix it. */
dt_status_t ssh_conn_open(const ssh_opts_t *o, ssh_conn_t *c);
void ssh_conn_close(ssh_conn_t *c);
/* Open every connection at once, at most o->max_parallel at a time.
 * fail_fast: the first failure stops new attempts, every failure is
 * logged by host and all connections are closed again on failure.
 * Otherwise every host is tried and each c->err tells (DT_OK returned).
 * stop (NULL: none): once it returns non-zero no new host is tried, the
 * connections are closed and DT_ERR_INTERRUPTED returned (a connection
 * under way ends first: within connect_timeout). */
dt_status_t ssh_conn_open_all(const ssh_opts_t *o, ssh_conn_t *conns,
                              size_t n, int fail_fast, int (*stop)(void));

#endif /* DT_LAUNCHER_SSH_CONNECT_H */
