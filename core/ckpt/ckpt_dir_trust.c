/* ckpt_dir_trust.c — say when other users could change a checkpoint_dir.
 *
 * Whoever can create names in the directory can replace a checkpoint
 * with one that --resume then loads, or delete them (a link planted at
 * .dt-lock is refused where the lock is opened: ckpt_lock.c). So a
 * directory of another user's, one every user may write, or one under a
 * directory every user may write without the sticky bit (anyone could
 * rename the checkpoint_dir away and put one of their own in its place)
 * is said, with what to do. Said, not refused: in a container (root on a
 * host user's volume; Kubernetes' emptyDir, 0777, that the job cannot
 * change) there is no other user, and a refusal left no way to run. Its
 * group may write it: a user's private group (umask 002) is the common
 * case, and a team sharing a group shares its checkpoints knowingly. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "ckpt.h"

static const char *user_name(uid_t uid, char *buf, size_t len)
{
    struct passwd *pw = getpwuid(uid);
    if (pw && pw->pw_name)
        snprintf(buf, len, "%s (uid %u)", pw->pw_name, (unsigned)uid);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
    return buf;
}

/* The first directory above `real` (an absolute path without links)
 * that every user may write and that lacks the sticky bit, in `bad`;
 * 0 when none. */
static int open_ancestor(const char *real, char *bad, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", real);
    for (;;) {
        char *slash = strrchr(path, '/');
        if (!slash)
            return 0;
        slash[slash == path ? 1 : 0] = '\0'; /* keep "/" itself */
        struct stat sb;
        if (stat(path, &sb) == 0 && (sb.st_mode & S_IWOTH) &&
            !(sb.st_mode & S_ISVTX)) {
            snprintf(bad, len, "%s", path);
            return 1;
        }
        if (slash == path)
            return 0;
    }
}

dt_status_t dt_ckpt_dir_trusted(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        dt_error("[train] checkpoint_dir %s: %s (check it)", dir,
                 strerror(errno));
        return DT_ERR_IO;
    }
    char owner[150], me[150];
    /* Said, not refused: root in a container writing to a volume of the
     * host user's is common and legitimate, and the lock is never opened
     * through a link (ckpt_lock.c) nor a checkpoint written through one
     * (a new name, then rename). */
    if (sb.st_uid != geteuid())
        dt_warn("[train] checkpoint_dir %s belongs to %s, not to this user "
                "(%s): its owner can replace the checkpoints --resume "
                "loads; use a directory of this user's own unless that "
                "user is trusted (a container's volume, say)",
                dir, user_name(sb.st_uid, owner, sizeof owner),
                user_name(geteuid(), me, sizeof me));
    /* Said, not refused either: a container's volumes are often 0777
     * (Kubernetes' emptyDir, a bind mount opened up for a uid mismatch,
     * drvfs, CIFS), cannot be changed by the job, and hold no other
     * user; on a shared host the warning says what to do. The lock and
     * the checkpoints are never written through a link planted there. */
    if (sb.st_mode & S_IWOTH) {
        int mine = sb.st_uid == geteuid() && !(sb.st_mode & S_ISVTX);
        dt_warn("[train] checkpoint_dir %s is writable by every user (mode "
                "%04o): on a host shared with other users they could "
                "replace the checkpoints --resume loads; %s%s%s",
                dir, (unsigned)(sb.st_mode & 07777),
                mine ? "run `chmod o-w " : "use a directory of your own "
                                           "inside it (mkdir -m 700 ",
                dir, mine ? "`" : "/NAME)");
    }
    char real[PATH_MAX], bad[PATH_MAX];
    if (realpath(dir, real) && open_ancestor(real, bad, sizeof bad))
        dt_warn("[train] checkpoint_dir %s is inside %s, which every user "
                "may write and which lacks the sticky bit: on a host shared "
                "with other users anyone could put a directory of their own "
                "in its place; give a directory outside it",
                dir, bad);
    return DT_OK;
}
