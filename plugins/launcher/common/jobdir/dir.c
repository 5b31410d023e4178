/* dir.c — the private job directory: created 0700 and checked, so no
 * other user can read the token file or plant files in it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "jobdir.h"

/* mkdir -p with mode 0700 for the parts we create. */
static dt_status_t make_parents(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return DT_ERR_NOMEM;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            dt_error("cannot create directory '%s': %s; set a writable "
                     "directory shared with the execution hosts",
                     p, strerror(errno));
            free(p);
            return DT_ERR_IO;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    return DT_OK;
}

dt_status_t jobdir_create(const char *parent, const char *name, char **path)
{
    *path = NULL;
    dt_status_t st = make_parents(parent);
    if (st != DT_OK)
        return st;
    char *p = NULL;
    if (asprintf(&p, "%s/%s", parent, name) < 0)
        return DT_ERR_NOMEM;
    if (mkdir(p, 0700) != 0) {
        dt_error("cannot create the job directory '%s': %s", p,
                 strerror(errno));
        free(p);
        return DT_ERR_IO;
    }
    struct stat sb;
    if (lstat(p, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
        sb.st_uid != geteuid() || (sb.st_mode & 077) != 0) {
        dt_error("the job directory '%s' is not a private directory of "
                 "ours (mode 0700) after creating it; refusing to put the "
                 "job token there",
                 p);
        rmdir(p);
        free(p);
        return DT_ERR_IO;
    }
    *path = p;
    return DT_OK;
}

dt_status_t jobdir_write(const char *dir, const char *name, const char *data,
                         size_t len, mode_t mode)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        return DT_ERR_NOMEM;
    dt_status_t st = DT_OK;
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  mode);
    if (fd < 0) {
        dt_error("cannot create '%s': %s", p, strerror(errno));
        st = DT_ERR_IO;
        goto out;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            dt_error("cannot write '%s': %s", p, strerror(errno));
            st = DT_ERR_IO;
            break;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 && st == DT_OK) {
        dt_error("cannot write '%s': %s", p, strerror(errno));
        st = DT_ERR_IO;
    }
out:
    free(p);
    return st;
}

static int remove_entry(const char *path, const struct stat *sb, int type,
                        struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int r = type == FTW_DP ? rmdir(path) : unlink(path);
    if (r != 0)
        dt_debug("cannot remove '%s': %s", path, strerror(errno));
    return 0;
}

void jobdir_remove(const char *dir)
{
    if (dir && *dir)
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
