/* ckpt_lock.c — one job per checkpoint directory.
 *
 * Two jobs writing one directory delete each other's temporary files
 * (each takes any it finds for a killed writer's, ckpt_write.c) and prune
 * each other's checkpoints. So rank 0 holds flock() on a file in the
 * directory for the job's life: the kernel drops it when the process
 * ends, however (kill -9, OOM), so a dead job never blocks the next one
 * and no stale lock needs breaking. The file holds who took it, for the
 * message the next job prints; it stays (removing it would let a third
 * job lock a new file while the second still holds the old one). A
 * restart may wait for it: the previous attempt's rank 0 on a host cut
 * off from dtctl ends only at its own timeout. NFS:
 * Linux maps flock to NFS byte-range locks, seen by every client; with
 * the `nolock` mount option they are local to each host. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include "ckpt.h"

#define LOCK_NAME ".dt-lock"

/* "pid P on HOST since TIME", from the holder's file (or a stand-in). */
static void read_holder(int fd, char *buf, size_t len)
{
    ssize_t n = pread(fd, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (!buf[0])
        snprintf(buf, len, "a process that has not written its name yet");
}

/* Replace the file's text with ours: pid, host, start time (UTC). */
static void write_holder(int fd)
{
    char host[256] = "?", when[32] = "?", line[400];
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    int n = snprintf(line, sizeof line, "pid %d on %s since %s\n",
                     (int)getpid(), host, when);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n)
        dt_debug("cannot record this job in its checkpoint lock file: %s",
                 strerror(errno));
}

/* flock, tried again every 100 ms for up to wait_s seconds while another
 * process holds it (said once, naming it). */
static int lock_within(int fd, const char *dir, double wait_s)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int said = 0;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK || !(wait_s > 0))
            return -1;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double spent = (double)(now.tv_sec - t0.tv_sec) +
                       (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (spent >= wait_s) {
            errno = EWOULDBLOCK;
            return -1;
        }
        if (!said) {
            char who[400];
            read_holder(fd, who, sizeof who);
            dt_info("[train] checkpoint_dir %s is still locked (%s): "
                    "waiting up to %.0f s (half the [cluster] timeout) for "
                    "the previous attempt's rank 0 to end",
                    dir, who, wait_s);
            said = 1;
        }
        struct timespec nap = {0, 100 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

dt_status_t dt_ckpt_lock(const char *dir, double wait_s, int *fd_out)
{
    char path[4096];
    *fd_out = -1;
    snprintf(path, sizeof path, "%s/" LOCK_NAME, dir);
    /* Never through a link, nor into anything but a plain file: the
     * holder's line truncates and overwrites what it opens. */
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                  0644);
    struct stat sb;
    if (fd < 0 && errno == ELOOP) {
        dt_error("%s is a symbolic link: rank 0 would write through it to "
                 "wherever it points (whoever made it chose where); remove "
                 "it, it is not dt's", path);
        return DT_ERR_CONFIG;
    }
    if (fd < 0) {
        dt_error("%s: cannot open the checkpoint directory's lock file: %s "
                 "(check [train] checkpoint_dir and its permissions)",
                 path, strerror(errno));
        return DT_ERR_IO;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        dt_error("%s is not a plain file: it is not dt's lock file; remove "
                 "it", path);
        close(fd);
        return DT_ERR_CONFIG;
    }
    if (lock_within(fd, dir, wait_s) != 0) {
        int err = errno;
        char who[400];
        read_holder(fd, who, sizeof who);
        close(fd);
        if (err == EWOULDBLOCK) {
            dt_error("[train] checkpoint_dir %s is in use by another job (%s; "
                     "lock file %s): two jobs in one directory delete each "
                     "other's checkpoints; wait for that job to end or stop "
                     "it, or give this one another checkpoint_dir",
                     dir, who, path);
            return DT_ERR_CONFIG;
        }
        /* A file system without locks (some FUSE mounts): training there
         * must still work; only the guard against a second job is lost. */
        if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS) {
            dt_warn("%s: this file system takes no locks (%s): a second "
                    "job on [train] checkpoint_dir %s is not refused; run "
                    "one at a time there",
                    path, strerror(err), dir);
            return DT_OK;
        }
        dt_error("%s: cannot lock the checkpoint directory: %s", path,
                 strerror(err));
        return DT_ERR_IO;
    }
    write_holder(fd);
    *fd_out = fd;
    return DT_OK;
}

void dt_ckpt_unlock(int *fd)
{
    if (*fd >= 0)
        close(*fd); /* the lock goes with the last descriptor */
    *fd = -1;
}
