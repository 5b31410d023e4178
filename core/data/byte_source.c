/* byte_source.c — plain or gzip input for the data readers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "byte_source.h"

#ifdef DT_HAVE_ZLIB
#include <zlib.h>
#endif

struct dt_byte_source {
    char *path;
#ifdef DT_HAVE_ZLIB
    gzFile gz;
#else
    FILE *f;
#endif
};

static const char *not_regular(mode_t mode)
{
    if (S_ISDIR(mode))
        return "is a directory, not a file";
    if (S_ISFIFO(mode))
        return "is a named pipe (FIFO), not a regular file";
    if (S_ISSOCK(mode))
        return "is a socket, not a regular file";
    return "is a device, not a regular file";
}

int dt_open_regular(const char *path, off_t *size, char *why, size_t whylen,
                    dt_status_t *st)
{
    /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of
     * waiting for a writer; it is cleared again for the regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    int flags = fd < 0 ? -1 : fcntl(fd, F_GETFL);
    if (flags < 0 || fstat(fd, &sb) != 0 ||
        (S_ISREG(sb.st_mode) &&
         fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) {
        int e = errno;
        char to[1024];
        ssize_t n = e == ENOENT ? readlink(path, to, sizeof to - 1) : -1;
        if (n >= 0) { /* a link to nothing: its storage not mounted? */
            to[n] = '\0';
            snprintf(why, whylen, "cannot open: a symbolic link to %s, which "
                     "does not exist (its storage not mounted?)", to);
        } else {
            snprintf(why, whylen, "cannot open: %s", strerror(e));
        }
        *st = e == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
    } else if (!S_ISREG(sb.st_mode)) {
        snprintf(why, whylen, "%s", not_regular(sb.st_mode));
        *st = DT_ERR_INVALID;
    } else {
        *size = sb.st_size;
        return fd;
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The data file at path, opened; logged when it cannot be. */
static int open_data_file(const char *path, dt_status_t *st)
{
    char why[256];
    off_t size;
    int fd = dt_open_regular(path, &size, why, sizeof why, st);
    if (fd < 0)
        dt_error("%s: %s%s", path, why,
                 *st == DT_ERR_INVALID ? " (give the data file itself: dt "
                                         "reads regular files or links to "
                                         "them)" : "");
    return fd;
}

#ifdef DT_HAVE_ZLIB

dt_status_t dt_byte_source_open(const char *path, dt_byte_source_t **out)
{
    *out = NULL;
    /* gzdopen reads plain files transparently; our open(2) first so a
     * missing file gets the system's reason and a FIFO does not block. */
    dt_status_t st;
    int fd = open_data_file(path, &st);
    if (fd < 0)
        return st;
    dt_byte_source_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        close(fd);
        return DT_ERR_NOMEM;
    }
    s->gz = gzdopen(fd, "rb");
    if (!s->gz) { /* zlib leaves fd open then */
        dt_error("%s: cannot open: zlib could not allocate", path);
        close(fd);
        free(s->path);
        free(s);
        return DT_ERR_NOMEM;
    }
    gzbuffer(s->gz, 1 << 17);
    *out = s;
    return DT_OK;
}

dt_status_t dt_byte_source_read(dt_byte_source_t *s, void *buf, size_t len,
                                size_t *got)
{
    *got = 0;
    while (*got < len) {
        size_t want = len - *got;
        if (want > (1u << 30))
            want = 1u << 30;
        int n = gzread(s->gz, (char *)buf + *got, (unsigned)want);
        if (n < 0 || (n == 0 && !gzeof(s->gz))) {
            int zerr = 0;
            const char *msg = gzerror(s->gz, &zerr);
            if (zerr == Z_ERRNO) { /* the system's error: may pass */
                dt_error("%s: cannot read: %s", s->path, strerror(errno));
                return DT_ERR_IO;
            }
            /* The bytes are wrong: every reading meets them again. */
            dt_error("%s: cannot read: %s (the file is damaged or not a "
                     "valid gzip file; download it again)", s->path, msg);
            return DT_ERR_INVALID;
        }
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    /* A gzip stream cut short reads as EOF plus an error state. */
    if (*got < len) {
        int zerr = 0;
        const char *msg = gzerror(s->gz, &zerr);
        if (zerr != Z_OK && zerr != Z_STREAM_END) {
            dt_error("%s: cannot read: %s (the compressed file is truncated "
                     "or damaged; download it again)", s->path, msg);
            return zerr == Z_ERRNO ? DT_ERR_IO : DT_ERR_INVALID;
        }
    }
    return DT_OK;
}

void dt_byte_source_close(dt_byte_source_t *s)
{
    if (!s)
        return;
    gzclose(s->gz);
    free(s->path);
    free(s);
}

#else /* no zlib: plain files only */

dt_status_t dt_byte_source_open(const char *path, dt_byte_source_t **out)
{
    *out = NULL;
    dt_status_t st;
    int fd = open_data_file(path, &st);
    if (fd < 0)
        return st;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        dt_error("%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return DT_ERR_IO;
    }
    unsigned char m[2] = {0, 0};
    size_t n = fread(m, 1, 2, f);
    if (n == 2 && m[0] == 0x1f && m[1] == 0x8b) {
        dt_error("%s: is gzip-compressed but dt was built without zlib; "
                 "gunzip it, or install zlib1g-dev and rebuild dt", path);
        fclose(f);
        return DT_ERR_UNSUPPORTED;
    }
    rewind(f);
    dt_byte_source_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        fclose(f);
        return DT_ERR_NOMEM;
    }
    s->f = f;
    *out = s;
    return DT_OK;
}

dt_status_t dt_byte_source_read(dt_byte_source_t *s, void *buf, size_t len,
                                size_t *got)
{
    *got = fread(buf, 1, len, s->f);
    if (*got < len && ferror(s->f)) {
        dt_error("%s: cannot read: %s", s->path, strerror(errno));
        return DT_ERR_IO;
    }
    return DT_OK;
}

void dt_byte_source_close(dt_byte_source_t *s)
{
    if (!s)
        return;
    fclose(s->f);
    free(s->path);
    free(s);
}

#endif
