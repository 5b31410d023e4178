/* launch.h — start the ranks (launch.c). */
#ifndef DT_LAUNCHER_SSH_LAUNCH_H
#define DT_LAUNCHER_SSH_LAUNCH_H

#include <dt/plugin.h>

dt_status_t ssh_launch(void *ctx, const dt_launch_spec_t *spec);

#endif /* DT_LAUNCHER_SSH_LAUNCH_H */
