/* cwd_gone.c — a shell left in a directory that was then removed (a
 * checkout recreated, a scratch directory cleaned) runs dtctl there: every
 * relative path of the job then fails with "No such file or directory"
 * although the user sees the file, and a worker's error blamed --metrics.
 * One warning at start names the real cause. */
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include <dt/log.h>
#include "cwd_gone.h"

int dt_warn_if_cwd_gone(void)
{
    char buf[PATH_MAX];
    if (getcwd(buf, sizeof buf) || errno != ENOENT)
        return 0;
    dt_warn("the current directory no longer exists (it was removed): "
            "relative paths (the job file, --metrics, checkpoint_dir, data "
            "path) cannot be found from it and the workers start in it; cd "
            "to an existing directory and run again");
    return 1;
}
