/* ssh_signal.h — stop the ranks (signal.c; not "signal.h", which would hide
 * the system header of that name from this folder's files). */
#ifndef DT_LAUNCHER_SSH_SIGNAL_H
#define DT_LAUNCHER_SSH_SIGNAL_H

#include <dt/plugin.h>
#include "ssh_types.h"

/* signo to every running rank's group. SIGSTOP (Ctrl-Z) and SIGCONT (fg)
 * return once their command ran on every host (at most 5 s): not DT_OK
 * when some host's workers may not have followed (said which). */
dt_status_t ssh_signal(void *ctx, int signo);
/* SIGKILL every group, wait (bounded) for the channels, close them. */
void ssh_kill_all(ssh_launcher_t *L);

#endif /* DT_LAUNCHER_SSH_SIGNAL_H */
