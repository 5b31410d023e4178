/* group_others.c — another user in a group? (group_others.h) */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group_others.h"

/* getgrgid_r with a buffer grown until the entry fits; NULL: none. */
static struct group *group_of(gid_t gid, struct group *gr, char **buf)
{
    struct group *out = NULL;
    size_t len = 4096;
    for (;;) {
        char *nb = realloc(*buf, len);
        if (!nb)
            return NULL;
        *buf = nb;
        int err = getgrgid_r(gid, gr, *buf, len, &out);
        if (err != ERANGE || len >= (1u << 24))
            return err ? NULL : out;
        len *= 2;
    }
}

/* A listed member: another user unless the name is uid's own (a name
 * without a user counts as another: the list says someone is in it). */
static int member_is_other(const char *name, uid_t uid)
{
    struct passwd pw, *found = NULL;
    char buf[4096];
    return getpwnam_r(name, &pw, buf, sizeof buf, &found) != 0 || !found ||
           found->pw_uid != uid;
}

/* A user other than uid whose primary group is gid, its name in who. */
static int primary_other(gid_t gid, uid_t uid, char *who, size_t len)
{
    struct passwd pw, *p = NULL;
    char buf[4096];
    int found = 0;
    setpwent();
    while (!found && getpwent_r(&pw, buf, sizeof buf, &p) == 0 && p)
        if (p->pw_gid == gid && p->pw_uid != uid) {
            snprintf(who, len, "%s", p->pw_name);
            found = 1;
        }
    endpwent();
    return found;
}

int dt_group_has_other(gid_t gid, uid_t uid, char *who, size_t len)
{
    struct group gr;
    char *buf = NULL;
    int found = 0;
    struct group *g = group_of(gid, &gr, &buf);
    for (char **m = g ? g->gr_mem : NULL; m && *m && !found; m++)
        if (member_is_other(*m, uid)) {
            snprintf(who, len, "%s", *m);
            found = 1;
        }
    free(buf);
    return found || primary_other(gid, uid, who, len);
}
