/* ckpt_aside.c — take files out of the ckpt-<step> series without losing
 * them: renamed within the directory to a name no scan picks, never over
 * an existing file (an earlier one set aside may be the only copy of
 * something a user wants back). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "ckpt.h"

/* Tried names: NAME+suffix, then NAME+suffix.1 ... .999. */
#define ASIDE_MAX_TRIES 1000

/* rename(from, to) unless `to` exists: 0, or -1 with errno (EEXIST when
 * taken). RENAME_NOREPLACE where the filesystem has it; else a hard link,
 * which fails on an existing name atomically too, also on NFS; else a
 * look before the rename, which the directory's lock (dt_ckpt_lock) keeps
 * other dt jobs out of. */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return -1;
#endif
    if (link(from, to) == 0)
        return unlink(from) == 0 || errno == ENOENT ? 0 : -1;
    if (errno == EEXIST || (errno != EPERM && errno != EOPNOTSUPP &&
                            errno != ENOSYS && errno != EXDEV))
        return -1;
    struct stat sb;
    if (lstat(to, &sb) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);
}

dt_status_t dt_ckpt_set_aside(const char *dir, const char *name,
                              const char *suffix, char *to, size_t tolen)
{
    char from[4096];
    snprintf(from, sizeof from, "%s/%s", dir, name);
    for (int i = 0; i < ASIDE_MAX_TRIES; i++) {
        int n = i ? snprintf(to, tolen, "%s%s.%d", from, suffix, i)
                  : snprintf(to, tolen, "%s%s", from, suffix);
        if (n < 0 || (size_t)n >= tolen) {
            dt_error("%s: cannot set it aside: the name %s%s is too long",
                     from, from, suffix);
            return DT_ERR_IO;
        }
        /* Renamed: a failed sync (said) risks only the old name coming
         * back after a crash, to be set aside again. */
        if (rename_noreplace(from, to) == 0) {
            dt_ckpt_sync_dir(dir);
            return DT_OK;
        }
        if (errno == ENOENT) /* gone meanwhile: nothing left to keep */
            return DT_ERR_NOT_FOUND;
        if (errno != EEXIST) {
            dt_error("%s: cannot set it aside as %s: %s (move it out of "
                     "the directory by hand)", from, to, strerror(errno));
            return DT_ERR_IO;
        }
    }
    dt_error("%s: cannot set it aside: %s%s and %d numbered names after it "
             "are all taken (remove some of them)", from, from, suffix,
             ASIDE_MAX_TRIES - 1);
    return DT_ERR_IO;
}

dt_status_t dt_ckpt_set_aside_after(const char *dir, uint64_t step,
                                    const char *suffix, size_t *moved)
{
    dt_ckpt_entry_t *v;
    size_t n;
    *moved = 0;
    dt_status_t st = dt_ckpt_list(dir, &v, &n);
    if (st != DT_OK)
        return st == DT_ERR_NOT_FOUND ? DT_OK : st;
    char to[4200];
    for (size_t i = 0; i < n && v[i].step > step; i++) { /* newest first */
        st = dt_ckpt_set_aside(dir, v[i].name, suffix, to, sizeof to);
        if (st == DT_ERR_NOT_FOUND)
            st = DT_OK;
        else if (st != DT_OK)
            break;
        else
            (*moved)++;
    }
    free(v);
    return st;
}
