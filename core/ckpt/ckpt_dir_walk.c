/* ckpt_dir_walk.c — a checkpoint_dir's path followed one name at a time,
 * as the kernel follows it, each symbolic link on the way named.
 *
 * The job resolves the directory once, at its start, and goes through
 * the resolved path from then on (dt_ckpt_dir_resolve): checked through
 * one path and written through another, a link swapped mid-run moved the
 * checkpoints, and the lock with them, to a directory nobody had looked
 * at. The links met are also what the trust checks look at
 * (ckpt_dir_trust.c): whoever may change one chooses where a restart or
 * a --resume, which resolve the path again, goes. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "ckpt.h"

/* The kernel's limit of links followed in one lookup (MAXSYMLINKS). */
#define WALK_MAX_LINKS 40

/* real's parent, in place ("/" stays "/"). */
static void up(char *real)
{
    char *slash = strrchr(real, '/');
    if (slash)
        slash[slash == real ? 1 : 0] = '\0';
}

/* real + "/" + name into out (PATH_MAX); -1 with ENAMETOOLONG. */
static int join(char *out, const char *real, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s%s%s", real,
                     strcmp(real, "/") == 0 ? "" : "/", name);
    if (n < 0 || n >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

typedef struct walk {
    int links;
    dt_ckpt_link_fn each;
    void *arg;
} walk_t;

/* path from real (a directory without links, PATH_MAX bytes), which ends
 * as where path leads. */
static int follow(walk_t *w, char *real, const char *path)
{
    if (path[0] == '/')
        snprintf(real, PATH_MAX, "/");
    for (const char *p = path; *p;) {
        p += strspn(p, "/");
        size_t n = strcspn(p, "/");
        if (n == 0)
            break;
        char name[NAME_MAX + 1], next[PATH_MAX], target[PATH_MAX];
        if (n > NAME_MAX) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        p += n;
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0) { /* real has no links: its parent */
            up(real);
            continue;
        }
        struct stat sb;
        if (join(next, real, name) != 0 || lstat(next, &sb) != 0)
            return -1;
        if (!S_ISLNK(sb.st_mode)) {
            memcpy(real, next, strlen(next) + 1);
            continue;
        }
        if (++w->links > WALK_MAX_LINKS) {
            errno = ELOOP;
            return -1;
        }
        if (w->each)
            w->each(w->arg, next, real, &sb);
        ssize_t t = readlink(next, target, sizeof target - 1);
        if (t < 0)
            return -1;
        if ((size_t)t >= sizeof target - 1) {
            errno = ENAMETOOLONG;
            return -1;
        }
        target[t] = '\0';
        /* a relative target starts from the link's own directory */
        if (follow(w, real, target) != 0)
            return -1;
    }
    return 0;
}

int dt_ckpt_dir_walk(const char *dir, char *real, dt_ckpt_link_fn each,
                     void *arg)
{
    walk_t w = {0, each, arg};
    if (dir[0] != '/' && !getcwd(real, PATH_MAX))
        return -1;
    if (follow(&w, real, dir) != 0)
        return -1;
    return w.links;
}

dt_status_t dt_ckpt_dir_resolve(const char *dir, char **path)
{
    char real[PATH_MAX];
    *path = NULL;
    int links = dt_ckpt_dir_walk(dir, real, NULL, NULL);
    if (links < 0) {
        dt_error("[train] checkpoint_dir %s: cannot follow its path: %s "
                 "(check it and the links on its way)", dir,
                 strerror(errno));
        return DT_ERR_IO;
    }
    /* Without a link the path as typed is as fixed as the resolved one
     * (a relative one starts from the working directory the process
     * holds, not from its name) and keeps the messages as the user
     * wrote them. */
    *path = strdup(links ? real : dir);
    return *path ? DT_OK : DT_ERR_NOMEM;
}
