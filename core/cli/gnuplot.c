/* gnuplot.c — find and run gnuplot for dtctl's pictures (gnuplot.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/log.h>
#include "gnuplot.h"

int dt_gnuplot_find(const char *who, char *buf, size_t len)
{
    const char *env = getenv("GNUPLOT");
    int found = 0;
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        found = strchr(env, '/') ? access(env, X_OK) == 0 : 1;
    } else {
        const char *path = getenv("PATH");
        char *copy = path ? strdup(path) : NULL, *save = NULL;
        for (char *d = copy ? strtok_r(copy, ":", &save) : NULL;
             d && !found; d = strtok_r(NULL, ":", &save)) {
            snprintf(buf, len, "%s/gnuplot", *d ? d : ".");
            found = access(buf, X_OK) == 0;
        }
        free(copy);
    }
    if (!found)
        dt_error("%s needs gnuplot, which is not installed here (not on "
                 "PATH%s): install it, on Debian with 'apt-get install "
                 "gnuplot-nox', or set GNUPLOT to the program",
                 who, env ? " or at $GNUPLOT" : "");
    return found;
}

const char *dt_gnuplot_terminal(const char *who, const char *out, int w,
                                int h, char *buf, size_t len)
{
    const char *ext = strrchr(out, '.');
    if (ext && strcasecmp(ext, ".png") == 0)
        snprintf(buf, len, "pngcairo size %d,%d font ',10'", w, h);
    else if (ext && strcasecmp(ext, ".svg") == 0)
        snprintf(buf, len, "svg size %d,%d dynamic font 'sans,10'", w, h);
    else {
        dt_error("%s: %s: the picture is a .png or .svg file", who, out);
        return NULL;
    }
    return buf;
}

int dt_gnuplot_output_writable(const char *who, const char *out)
{
    /* gnuplot would say only "cannot open file; output not changed", and
     * about its script in a temporary directory. */
    struct stat st;
    int fd, created = 0;
    if (lstat(out, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return 1; /* gnuplot writes through it (and names its target) */
        fd = open(out, O_WRONLY | O_NONBLOCK | O_CLOEXEC); /* not changed */
    } else {
        /* made here, removed again: no empty picture left if what follows
         * fails (O_EXCL: only what this call made) */
        fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC,
                  0666);
        created = fd >= 0;
    }
    if (fd < 0) {
        dt_error("%s: cannot write the picture %s: %s; name a file in a "
                 "directory that exists and that you may write to",
                 who, out, strerror(errno));
        return 0;
    }
    close(fd);
    if (created)
        unlink(out);
    return 1;
}

void dt_gnuplot_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

int dt_gnuplot_run(const char *who, const char *gnuplot, const char *script,
                   const char *out)
{
    pid_t pid = fork();
    if (pid < 0) {
        dt_error("%s: fork: %s", who, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execlp(gnuplot, gnuplot, script, (char *)NULL);
        fprintf(stderr, "%s: cannot run %s: %s\n", who, gnuplot,
                strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    int st = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    struct stat sb;
    if (st != 0) {
        dt_error("%s: gnuplot (%s) failed with status %d; its messages are "
                 "above", who, gnuplot, st);
        return -1;
    }
    if (stat(out, &sb) != 0 || sb.st_size == 0) {
        dt_error("%s: gnuplot wrote no picture to %s", who, out);
        return -1;
    }
    return 0;
}
