/* shm_sweep.c — the shared-memory segment a worker leaves, removed.
 *
 * Rank 0 of a host creates /dev/shm/dt-<its pid>-<24 hex digits> and
 * unlinks it once every rank there mapped it (core/coll/shm/
 * shm_segment.c). Killed in between (kill -9, the OOM killer, a crash at
 * start-up), it leaves the segment behind, holding its memory until
 * reboot. dtctl knows each worker's pid, so it removes them once the
 * worker has ended but before it is reaped: the pid is still taken, so a
 * file named after it is this worker's or a dead earlier holder's of the
 * pid, never a live job's. Only regular files of our own user, in exactly
 * that shape (the random part keeps names unguessable; we guess none). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "local.h"

#define SHM_DIR "/dev/shm"
#define RANDOM_DIGITS 24 /* shm_segment.c: 12 random bytes in hex */

/* "dt-<pid>-" then exactly RANDOM_DIGITS lowercase hex digits. */
static int is_segment_of(const char *name, const char *prefix, size_t plen)
{
    if (strncmp(name, prefix, plen) != 0 ||
        strlen(name + plen) != RANDOM_DIGITS)
        return 0;
    for (const char *p = name + plen; *p; p++)
        if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
            return 0;
    return 1;
}

void local_shm_sweep(pid_t pid)
{
    char prefix[32];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "dt-%d-", (int)pid);
    DIR *d = opendir(SHM_DIR);
    if (!d)
        return; /* no /dev/shm: no segments either */
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (!is_segment_of(e->d_name, prefix, plen) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            dt_debug("local launcher: removed " SHM_DIR "/%s: pid %d ended "
                     "before unlinking it",
                     e->d_name, (int)pid);
    }
    closedir(d);
}
