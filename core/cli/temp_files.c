/* temp_files.c — dtctl's scratch files in $TMPDIR, not a fixed /tmp: on
 * machines where /tmp is small, full or read-only users point TMPDIR
 * elsewhere and expect every tool to follow. A failure names the
 * directory and the variable that moves it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "temp_files.h"

const char *dt_temp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

static void say_cannot(const char *who, const char *what, const char *why)
{
    const char *env = getenv("TMPDIR");
    if (env && *env)
        dt_error("%s: cannot create a temporary %s in %s: %s (that is "
                 "$TMPDIR: point it at a writable directory)", who, what,
                 env, why);
    else
        dt_error("%s: cannot create a temporary %s in /tmp: %s (set "
                 "TMPDIR to a writable directory)", who, what, why);
}

/* <temp dir>/<name>XXXXXX in buf; -1 (said) when it does not fit. */
static int make_template(const char *who, const char *what,
                         const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%sXXXXXX", dt_temp_dir(), name);
    if (n < 0 || (size_t)n >= len) {
        say_cannot(who, what, "the path is too long");
        return -1;
    }
    return 0;
}

int dt_temp_mkdtemp(const char *who, const char *name, char *buf,
                    size_t len)
{
    if (make_template(who, "directory", name, buf, len) != 0)
        return -1;
    if (!mkdtemp(buf)) {
        say_cannot(who, "directory", strerror(errno));
        return -1;
    }
    return 0;
}

int dt_temp_mkstemp(const char *who, const char *name, char *buf,
                    size_t len)
{
    if (make_template(who, "file", name, buf, len) != 0)
        return -1;
    /* close-on-exec: a program dtctl starts meanwhile (a bench, the
     * simulator, gnuplot) does not hold it open */
    int fd = mkostemp(buf, O_CLOEXEC);
    if (fd < 0)
        say_cannot(who, "file", strerror(errno));
    return fd;
}

FILE *dt_temp_file(const char *who)
{
    char path[4096];
    int fd = dt_temp_mkstemp(who, "dtctl-", path, sizeof path);
    if (fd < 0)
        return NULL;
    unlink(path); /* gone when closed, as tmpfile's */
    FILE *f = fdopen(fd, "w+");
    if (!f) {
        dt_error("%s: %s: %s", who, path, strerror(errno));
        close(fd);
    }
    return f;
}
