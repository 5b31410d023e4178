/* byte_source.c — plain or gzip input for the data readers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#ifdef DT_HAVE_ZLIB

dt_status_t dt_byte_source_open(const char *path, dt_byte_source_t **out)
{
    *out = NULL;
    /* gzopen reads plain files transparently; open(2) first so a missing
     * file gets the system's reason. */
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        dt_error("%s: cannot open: %s", path, strerror(errno));
        return errno == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
    }
    fclose(probe);
    dt_byte_source_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return DT_ERR_NOMEM;
    }
    s->gz = gzopen(path, "rb");
    if (!s->gz) {
        dt_error("%s: cannot open: %s", path,
                 errno ? strerror(errno) : "zlib could not allocate");
        free(s->path);
        free(s);
        return DT_ERR_IO;
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
            dt_error("%s: cannot read: %s (the file is damaged or not a "
                     "valid gzip file; download it again)",
                     s->path, zerr == Z_ERRNO ? strerror(errno) : msg);
            return DT_ERR_IO;
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
            return DT_ERR_IO;
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
    FILE *f = fopen(path, "rb");
    if (!f) {
        dt_error("%s: cannot open: %s", path, strerror(errno));
        return errno == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
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
