/* pump.h — I/O and exits of the ranks' channels (pump.c). */
#ifndef DT_LAUNCHER_SSH_PUMP_H
#define DT_LAUNCHER_SSH_PUMP_H

#include <dt/plugin.h>
#include "ssh_types.h"

dt_status_t ssh_wait(void *ctx, int timeout_ms, dt_worker_exit_t *ev);
/* One round of I/O on every session (callbacks forward output). */
void ssh_pump_once(ssh_launcher_t *L, int wait_ms);
void ssh_rank_callbacks(ssh_rank_t *r);
/* Put sessions into / take them out of the event (blocking libssh calls
 * must run outside it). */
void ssh_event_attach(ssh_launcher_t *L);
void ssh_event_detach(ssh_launcher_t *L);

#endif /* DT_LAUNCHER_SSH_PUMP_H */
