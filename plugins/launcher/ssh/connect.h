/* connect.h — sessions: open, verify, authenticate (connect.c). */
#ifndef DT_LAUNCHER_SSH_CONNECT_H
#define DT_LAUNCHER_SSH_CONNECT_H

#include <dt/plugin.h>
#include "ssh_types.h"

/* Open, verify the host key, authenticate. On failure c->err
 * says what and how to fix it. stop (NULL: none): the connection is given
 * up once it returns non-zero (DT_ERR_INTERRUPTED, c->err empty). */
dt_status_t ssh_conn_open(const ssh_opts_t *o, ssh_conn_t *c,
                          int (*stop)(void));
void ssh_conn_close(ssh_conn_t *c);
/* Open every connection at once, at most o->max_parallel at a time.
 * fail_fast: the first failure stops new attempts, every failure is
 * logged by host and all connections are closed again on failure.
 * Otherwise every host is tried and each c->err tells (DT_OK returned).
 * stop (NULL: none): once it returns non-zero no new host is tried, a
 * connection under way is given up within 50 ms (once its name is
 * resolved; not during authentication), the connections are closed and
 * DT_ERR_INTERRUPTED returned. */
dt_status_t ssh_conn_open_all(const ssh_opts_t *o, ssh_conn_t *conns,
                              size_t n, int fail_fast, int (*stop)(void));

#endif /* DT_LAUNCHER_SSH_CONNECT_H */
