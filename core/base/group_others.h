/* group_others.h — whether a group holds users other than this one: a
 * directory its group may write is another user's to change only then
 * (a user's private group, umask 002, is not). */
#ifndef DT_BASE_GROUP_OTHERS_H
#define DT_BASE_GROUP_OTHERS_H

#include <stddef.h>
#include <sys/types.h>

/* 1 when a user other than uid is in group gid, by the group's member
 * list or as their primary group, with one such user's name in who;
 * 0 when none is. Reads the user database whole (once per call): local
 * files, or a directory service's users where it lists them. */
int dt_group_has_other(gid_t gid, uid_t uid, char *who, size_t len);

#endif /* DT_BASE_GROUP_OTHERS_H */
