/* pgrp_orphaned.h — whether dtctl's process group is orphaned. */
#ifndef DT_CLI_PGRP_ORPHANED_H
#define DT_CLI_PGRP_ORPHANED_H

/* 1 when no member of this process's group has a parent in another group
 * of the same session (POSIX's orphaned process group: no shell can
 * continue it, so the kernel discards a terminal's stop signals for it:
 * `docker run -it`, `kubectl exec -it`, `srun --pty`, setsid). 0
 * otherwise, or when /proc cannot tell. */
int dt_pgrp_orphaned(void);

#endif
