/* ckpt_dir_trust.c — say when other users could change a checkpoint_dir.
 *
 * Whoever can create names in the directory can replace a checkpoint
 * with one that --resume then loads, or delete them (a link planted at
 * .dt-lock is refused where the lock is opened: ckpt_lock.c). So a
 * directory of another user's, one every user may write, or one under a
 * directory others may write without the sticky bit (anyone could
 * rename the checkpoint_dir away and put one of their own in its place)
 * is said, with what to do. "Others" are every user, or a group with a
 * user other than this one in it: a team's group-writable directory lets
 * each member swap another's. A symbolic link on the way is followed
 * once, at the job's start (ckpt_dir_walk.c), but a restart or --resume
 * follows it again: one another user owns, or may replace, is said too.
 * Said, not refused: in a container (root on a host user's volume;
 * Kubernetes' emptyDir, 0777, that the job cannot change) there is no
 * other user, and a refusal left no way to run. The checkpoint_dir's own
 * group may write it: a user's private group (umask 002) is the common
 * case, and a team sharing a group shares its checkpoints knowingly. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "base/group_others.h"
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

enum { OPEN_NONE, OPEN_WORLD, OPEN_GROUP };

/* Whether users other than this one may rename what the directory sb
 * holds: no sticky bit, and every user (OPEN_WORLD) or a group with
 * another user in it (OPEN_GROUP) may write it; why: "every user may
 * write" or "its group G may write (user U is in it)". */
static int others_may_rename(const struct stat *sb, char *why, size_t len)
{
    char who[256];
    if (sb->st_mode & S_ISVTX)
        return OPEN_NONE;
    if (sb->st_mode & S_IWOTH) {
        snprintf(why, len, "every user may write");
        return OPEN_WORLD;
    }
    if (!(sb->st_mode & S_IWGRP) ||
        !dt_group_has_other(sb->st_gid, geteuid(), who, sizeof who))
        return OPEN_NONE;
    struct group *gr = getgrgid(sb->st_gid);
    if (gr && gr->gr_name)
        snprintf(why, len, "its group %s may write (user %s is in it)",
                 gr->gr_name, who);
    else
        snprintf(why, len, "its group (gid %u) may write (user %s is in "
                 "it)", (unsigned)sb->st_gid, who);
    return OPEN_GROUP;
}

/* The first of `real` (an absolute path without links; with self) and
 * the directories above it that others may rename in (others_may_rename):
 * its path in bad, its stat in bsb, why in why; OPEN_NONE when none. */
static int first_open(const char *real, int self, char *bad, size_t len,
                      struct stat *bsb, char *why, size_t whylen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", real);
    for (;;) {
        char *slash = strrchr(path, '/');
        int kind;
        if (self && stat(path, bsb) == 0 &&
            (kind = others_may_rename(bsb, why, whylen)) != OPEN_NONE) {
            snprintf(bad, len, "%s", path);
            return kind;
        }
        self = 1;
        if (!slash || strcmp(path, "/") == 0)
            return OPEN_NONE;
        slash[slash == path ? 1 : 0] = '\0'; /* keep "/" itself */
    }
}

/* The links met: the first that another user owns or may replace is
 * said, once. */
typedef struct link_audit {
    const char *shown, *path;
    int said;
} link_audit_t;

static void audit_link(void *arg, const char *link, const char *parent,
                       const struct stat *lsb)
{
    link_audit_t *a = arg;
    char owner[150], bad[PATH_MAX], why[400];
    struct stat bsb;
    if (a->said)
        return;
    if (lsb->st_uid != geteuid() && lsb->st_uid != 0) {
        dt_warn("[train] checkpoint_dir %s goes through the symbolic link "
                "%s, which belongs to %s: its owner chooses where the "
                "checkpoints go and what --resume loads (this job followed "
                "it once, at its start; a restart or --resume follows it "
                "again); give the directory itself ([train] checkpoint_dir "
                "= %s) unless that user is trusted", a->shown, link,
                user_name(lsb->st_uid, owner, sizeof owner), a->path);
        a->said = 1;
        return;
    }
    int kind = first_open(parent, 1, bad, sizeof bad, &bsb, why, sizeof why);
    if (kind == OPEN_NONE)
        return;
    dt_warn("[train] checkpoint_dir %s goes through the symbolic link %s, "
            "under %s, which %s and which lacks the sticky bit: %s could "
            "point it elsewhere (this job followed it once, at its start; a "
            "restart or --resume follows it again); give the directory "
            "itself ([train] checkpoint_dir = %s)", a->shown, link, bad, why,
            kind == OPEN_WORLD ? "any user" : "any member of that group",
            a->path);
    a->said = 1;
}

/* A directory above path that others may rename in: said. */
static void say_open_ancestor(const char *shown, const char *path)
{
    char real[PATH_MAX], bad[PATH_MAX], why[400];
    struct stat bsb;
    int kind = realpath(path, real)
                   ? first_open(real, 0, bad, sizeof bad, &bsb, why,
                                sizeof why)
                   : OPEN_NONE;
    if (kind == OPEN_WORLD)
        dt_warn("[train] checkpoint_dir %s is inside %s, which every user "
                "may write and which lacks the sticky bit: on a host shared "
                "with other users anyone could put a directory of their own "
                "in its place; give a directory outside it",
                shown, bad);
    /* A team's directory (a project's, setgid): the sticky bit keeps
     * its sharing and stops members renaming each other's entries. */
    else if (kind == OPEN_GROUP && bsb.st_uid == geteuid())
        dt_warn("[train] checkpoint_dir %s is inside %s, which %s and which "
                "lacks the sticky bit: any member of that group could put a "
                "directory of their own in its place; run `chmod +t %s` "
                "(members still create their own entries there, but may no "
                "longer rename others'), or give a directory outside it",
                shown, bad, why, bad);
    else if (kind == OPEN_GROUP)
        dt_warn("[train] checkpoint_dir %s is inside %s, which %s and which "
                "lacks the sticky bit: any member of that group could put a "
                "directory of their own in its place; give a directory "
                "outside it (or ask its owner to `chmod +t %s`)",
                shown, bad, why, bad);
}

dt_status_t dt_ckpt_dir_trusted(const char *dir, const char *path)
{
    /* "ck", or "ck (-> /data/ck)" where a link was on the way */
    char shown[2 * PATH_MAX + 8];
    if (strcmp(dir, path) == 0)
        snprintf(shown, sizeof shown, "%s", dir);
    else
        snprintf(shown, sizeof shown, "%s (-> %s)", dir, path);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        dt_error("[train] checkpoint_dir %s: %s (check it)", shown,
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
                shown, user_name(sb.st_uid, owner, sizeof owner),
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
                shown, (unsigned)(sb.st_mode & 07777),
                mine ? "run `chmod o-w " : "use a directory of your own "
                                           "inside it (mkdir -m 700 ",
                path, mine ? "`" : "/NAME)");
    }
    say_open_ancestor(shown, path);
    link_audit_t audit = {shown, path, 0};
    char real[PATH_MAX];
    if (strcmp(dir, path) != 0)
        dt_ckpt_dir_walk(dir, real, audit_link, &audit);
    return DT_OK;
}
