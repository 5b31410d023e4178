/* std_fds.c — a program started with stdin, stdout or stderr closed
 * (`dtctl run JOB.ini <&- >&- 2>&-`, some cron and daemon setups) hands
 * that number to its next open(), pipe() or socket(): dtctl's wake-up
 * pipe or a worker's rendezvous socket then received the log lines meant
 * for stderr, and the job stalled for minutes and failed. /dev/null in
 * each closed one keeps those numbers taken (as OpenSSH's sanitise_stdfd):
 * what would have been printed is dropped, as the caller asked. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "std_fds.h"

int dt_std_fds_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        /* The lowest free number: fd itself, as the lower ones are open. */
        int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (null < 0)
            return -1;
        if (null != fd) {
            int moved = dup2(null, fd);
            int saved = errno;
            close(null);
            if (moved < 0) {
                errno = saved;
                return -1;
            }
        }
    }
    return 0;
}

int dt_stdin_is_dev_null(void)
{
    struct stat in, null;
    return fstat(STDIN_FILENO, &in) == 0 && stat("/dev/null", &null) == 0 &&
           S_ISCHR(in.st_mode) && in.st_rdev == null.st_rdev;
}
