/* make_dirs.h — mkdir -p for the directories dt writes into (checkpoints,
 * TensorBoard logs). */
#ifndef DT_BASE_MAKE_DIRS_H
#define DT_BASE_MAKE_DIRS_H

#include <dt/status.h>

/* Create dir and its missing parents (mode 0755). made (may be NULL) is
 * called with each directory this call created, in order (the checkpoint
 * writer syncs its parent). On failure, logs "cannot create WHAT PATH:
 * errno (check HINT)" for the part that failed and returns DT_ERR_IO, or
 * what made returned. */
dt_status_t dt_make_dirs(const char *dir, const char *what, const char *hint,
                         dt_status_t (*made)(char *path));

#endif /* DT_BASE_MAKE_DIRS_H */
