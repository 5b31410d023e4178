/* ckpt_peek.c — one small section of a checkpoint without reading the
 * rest: the header and the section heads, seeking past every payload.
 * For a choice among many large files (a rollback's, by their recorded
 * losses) where reading and hashing each whole would take minutes while
 * the other ranks wait. The checksum covers the whole file only, so what
 * this returns is not verified: the file that is chosen must still be
 * read with dt_ckpt_read before it is used. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "ckpt.h"
#include "ckpt_format.h"

static dt_status_t read_at(int fd, const char *path, void *buf, size_t n,
                           size_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            dt_error("%s: cannot read checkpoint: %s", path,
                     r < 0 ? strerror(errno) : "file shrank while reading");
            return DT_ERR_IO;
        }
        got += (size_t)r;
    }
    return DT_OK;
}

/* Another format version: dt_ckpt_read's verdict (it needs the hash). */
static dt_status_t other_version(const char *path)
{
    dt_ckpt_t c;
    dt_status_t st = dt_ckpt_read(path, &c);
    dt_ckpt_free(&c);
    return st == DT_OK ? DT_ERR_INVALID : st;
}

static dt_status_t walk(int fd, const char *path, size_t size, uint32_t tag,
                        void *buf, size_t cap, size_t *len, uint64_t *step)
{
    unsigned char head[CKPT_HEADER_LEN];
    if (size < CKPT_HEADER_LEN + CKPT_HASH_LEN) {
        dt_error("%s: not a dt checkpoint (too short: truncated)", path);
        return DT_ERR_INVALID;
    }
    DT_CHECK(read_at(fd, path, head, sizeof head, 0));
    if (memcmp(head, CKPT_MAGIC, CKPT_MAGIC_LEN) != 0) {
        dt_error("%s: not a dt checkpoint (wrong magic)", path);
        return DT_ERR_INVALID;
    }
    if (ckpt_get32(head + 8) != DT_CKPT_VERSION)
        return other_version(path);
    *step = ckpt_get64(head + 16);
    uint32_t nsecs = ckpt_get32(head + 12);
    size_t end = size - CKPT_HASH_LEN, off = CKPT_HEADER_LEN;
    dt_status_t st = DT_ERR_NOT_FOUND;
    for (uint32_t i = 0; i < nsecs; i++) {
        unsigned char sh[CKPT_SECTION_HEAD];
        if (end - off < CKPT_SECTION_HEAD) {
            dt_error("%s: section %u header runs past the end: corrupt",
                     path, i);
            return DT_ERR_INVALID;
        }
        DT_CHECK(read_at(fd, path, sh, sizeof sh, off));
        uint64_t n = ckpt_get64(sh + 8);
        off += CKPT_SECTION_HEAD;
        if (n > end - off || ckpt_pad8((size_t)n) > end - off - n) {
            dt_error("%s: section %u (%llu bytes) runs past the end: "
                     "corrupt", path, i, (unsigned long long)n);
            return DT_ERR_INVALID;
        }
        if (st == DT_ERR_NOT_FOUND && ckpt_get32(sh) == tag) {
            *len = (size_t)n;
            DT_CHECK(read_at(fd, path, buf, n < cap ? (size_t)n : cap, off));
            st = DT_OK;
        }
        off += (size_t)n + ckpt_pad8((size_t)n);
    }
    if (off != end) {
        dt_error("%s: %zu unexpected bytes after the last section: corrupt",
                 path, end - off);
        return DT_ERR_INVALID;
    }
    return st;
}

dt_status_t dt_ckpt_peek(const char *path, uint32_t tag, void *buf,
                         size_t cap, size_t *len, uint64_t *step)
{
    *len = 0;
    *step = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
        /* as dt_ckpt_read says it: an intact file nobody may go past */
        dt_ckpt_t c;
        dt_status_t st = dt_ckpt_read(path, &c);
        dt_ckpt_free(&c);
        return st == DT_OK ? DT_ERR_CONFIG : st;
    }
    if (fd < 0) {
        dt_error("%s: cannot open checkpoint: %s", path, strerror(errno));
        return DT_ERR_IO; /* NOT_FOUND is the section's */
    }
    struct stat sb;
    dt_status_t st = fstat(fd, &sb) != 0 ? DT_ERR_IO
                     : walk(fd, path, (size_t)sb.st_size, tag, buf, cap, len,
                            step);
    close(fd);
    return st;
}
