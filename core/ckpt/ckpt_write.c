/* ckpt_write.c — write a checkpoint atomically: temporary file in the same
 * directory, fsync, rename, fsync the directory; then prune old ones. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <dt/log.h>
#include "base/make_dirs.h"
#include "ckpt.h"
#include "ckpt_format.h"

typedef struct writer {
    int fd;
    const char *path;   /* for messages: the temporary file */
    EVP_MD_CTX *md;
} writer_t;

static dt_status_t put(writer_t *w, const void *buf, size_t len)
{
    if (len && EVP_DigestUpdate(w->md, buf, len) != 1) {
        dt_error("%s: SHA-256 failed", w->path);
        return DT_ERR_INTERNAL;
    }
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(w->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            dt_error("%s: cannot write checkpoint: %s (free some space in "
                     "[train] checkpoint_dir)", w->path, strerror(errno));
            return DT_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
    }
    return DT_OK;
}

static dt_status_t put_section(writer_t *w, const dt_ckpt_section_t *s)
{
    unsigned char head[CKPT_SECTION_HEAD] = {0};
    ckpt_put32(head, s->tag);
    ckpt_put64(head + 8, (uint64_t)s->len);
    DT_CHECK(put(w, head, sizeof head));
    if (s->data)
        DT_CHECK(put(w, s->data, s->len));
    else {
        char chunk[1 << 16];
        for (size_t off = 0; off < s->len; off += sizeof chunk) {
            size_t n = s->len - off < sizeof chunk ? s->len - off
                                                   : sizeof chunk;
            DT_CHECK(s->fill(s->arg, off, chunk, n));
            DT_CHECK(put(w, chunk, n));
        }
    }
    static const unsigned char zero[8];
    return put(w, zero, ckpt_pad8(s->len));
}

static dt_status_t put_all(writer_t *w, uint64_t step,
                           const dt_ckpt_section_t *secs, size_t nsecs)
{
    unsigned char head[CKPT_HEADER_LEN];
    memcpy(head, CKPT_MAGIC, CKPT_MAGIC_LEN);
    ckpt_put32(head + 8, DT_CKPT_VERSION);
    ckpt_put32(head + 12, (uint32_t)nsecs);
    ckpt_put64(head + 16, step);
    DT_CHECK(put(w, head, sizeof head));
    for (size_t i = 0; i < nsecs; i++)
        DT_CHECK(put_section(w, &secs[i]));
    unsigned char hash[EVP_MAX_MD_SIZE];
    unsigned int hlen = 0;
    if (EVP_DigestFinal_ex(w->md, hash, &hlen) != 1 ||
        hlen != CKPT_HASH_LEN) {
        dt_error("%s: SHA-256 failed", w->path);
        return DT_ERR_INTERNAL;
    }
    /* The hash itself is not hashed: write it directly. */
    EVP_MD_CTX *md = w->md;
    w->md = NULL;
    dt_status_t st = DT_OK;
    size_t off = 0;
    while (off < hlen) {
        ssize_t n = write(w->fd, hash + off, hlen - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            dt_error("%s: cannot write checkpoint: %s", w->path,
                     strerror(errno));
            st = DT_ERR_IO;
            break;
        }
        off += (size_t)n;
    }
    w->md = md;
    return st;
}

dt_status_t dt_ckpt_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0 || fsync(fd) != 0) {
        dt_error("%s: cannot sync the checkpoint directory: %s", dir,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return DT_ERR_IO;
    }
    close(fd);
    return DT_OK;
}

/* A directory mkdir just made: its name reaches the disk only with its
 * parent's fsync (else a crash can lose the directory and every
 * checkpoint in it, though each file was synced). */
static dt_status_t sync_parent(char *p)
{
    char *slash = strrchr(p, '/');
    if (!slash)
        return dt_ckpt_sync_dir(".");
    if (slash == p)
        return dt_ckpt_sync_dir("/");
    *slash = '\0';
    dt_status_t st = dt_ckpt_sync_dir(p);
    *slash = '/';
    return st;
}

static dt_status_t make_dir(const char *dir)
{
    return dt_make_dirs(dir, "checkpoint directory", "[train] checkpoint_dir",
                        sync_parent);
}

/* Temporary files a writer killed mid-write left (only one writer runs at
 * a time: the job holds the directory's lock, dt_ckpt_lock; so any is
 * stale). */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)))
        if (strncmp(e->d_name, CKPT_TMP_PREFIX, strlen(CKPT_TMP_PREFIX)) ==
            0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
}

static int skipped(uint64_t step, const uint64_t *skip, size_t nskip)
{
    for (size_t i = 0; i < nskip; i++)
        if (skip[i] == step)
            return 1;
    return 0;
}

void dt_ckpt_prune(const char *dir, int keep, uint64_t upto,
                   const uint64_t *skip, size_t nskip)
{
    remove_stale(dir);
    dt_ckpt_entry_t *v;
    size_t n, counted = 0;
    if (keep <= 0 || dt_ckpt_list(dir, &v, &n) != DT_OK)
        return;
    char path[4096];
    for (size_t i = 0; i < n; i++) { /* newest first */
        if (v[i].step > upto || skipped(v[i].step, skip, nskip) ||
            ++counted <= (size_t)keep)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
        if (unlink(path) != 0)
            dt_warn("%s: cannot delete old checkpoint: %s", path,
                    strerror(errno));
    }
    free(v);
}

/* mkstemp's unique name, but created with mode 0666 so the umask decides
 * who may read the checkpoint, as for metrics and TensorBoard files
 * (mkstemp makes 0600; a fixed fchmod ignored the umask and could make a
 * model world-readable). `tmpl` ends in XXXXXX, replaced here. */
static int create_tmp(char *tmpl)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyz"
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t n = strlen(tmpl);
    if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX") != 0) {
        errno = EINVAL;
        return -1;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            return -1;
        for (int i = 0; i < 6; i++)
            tmpl[n - 6 + i] = chars[r[i] % (sizeof chars - 1)];
        int fd = open(tmpl, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

dt_status_t dt_ckpt_write(const char *dir, uint64_t step,
                          const dt_ckpt_section_t *secs, size_t nsecs,
                          int keep, char **path)
{
    return dt_ckpt_write_named(dir, NULL, step, secs, nsecs, keep, path);
}

dt_status_t dt_ckpt_write_named(const char *dir, const char *name,
                                uint64_t step, const dt_ckpt_section_t *secs,
                                size_t nsecs, int keep, char **path)
{
    char tmp[4096], final[4096];
    writer_t w = {-1, tmp, NULL};
    dt_status_t st;
    if (path)
        *path = NULL;
    for (size_t i = 0; i < nsecs; i++)
        if (!secs[i].data && !secs[i].fill && secs[i].len) {
            dt_error("checkpoint section %u has neither data nor fill",
                     secs[i].tag);
            return DT_ERR_INVALID;
        }
    DT_CHECK(make_dir(dir));
    if (name)
        snprintf(final, sizeof final, "%s/%s", dir, name);
    else
        snprintf(final, sizeof final, "%s/" CKPT_PREFIX "%012llu"
                 CKPT_SUFFIX, dir, (unsigned long long)step);
    snprintf(tmp, sizeof tmp, "%s/" CKPT_TMP_PREFIX "%012llu.XXXXXX", dir,
             (unsigned long long)step);
    w.fd = create_tmp(tmp);
    if (w.fd < 0) {
        dt_error("%s: cannot create a checkpoint file there: %s (check "
                 "[train] checkpoint_dir)", dir, strerror(errno));
        return DT_ERR_IO;
    }
    if (!(w.md = EVP_MD_CTX_new()) ||
        EVP_DigestInit_ex(w.md, EVP_sha256(), NULL) != 1) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    if ((st = put_all(&w, step, secs, nsecs)) != DT_OK)
        goto out;
    if (fsync(w.fd) != 0) {
        dt_error("%s: fsync failed: %s", tmp, strerror(errno));
        st = DT_ERR_IO;
        goto out;
    }
    if (close(w.fd) != 0) {
        w.fd = -1;
        dt_error("%s: close failed: %s", tmp, strerror(errno));
        st = DT_ERR_IO;
        goto out;
    }
    w.fd = -1;
    if (rename(tmp, final) != 0) {
        dt_error("cannot rename %s to %s: %s", tmp, final, strerror(errno));
        st = DT_ERR_IO;
        goto out;
    }
    tmp[0] = '\0';
    if ((st = dt_ckpt_sync_dir(dir)) != DT_OK)
        goto out;
    /* a named file is not in the series */
    dt_ckpt_prune(dir, name ? 0 : keep, step, NULL, 0);
    if (path && !(*path = strdup(final)))
        st = DT_ERR_NOMEM;
out:
    if (w.fd >= 0)
        close(w.fd);
    if (st != DT_OK && tmp[0])
        unlink(tmp); /* never leave a partial file behind on error */
    EVP_MD_CTX_free(w.md);
    return st;
}

dt_status_t dt_ckpt_check_dir(const char *dir, char **path)
{
    *path = NULL;
    DT_CHECK(make_dir(dir));
    char *p = NULL;
    DT_CHECK(dt_ckpt_dir_resolve(dir, &p));
    if (strcmp(p, dir) != 0)
        dt_info("[train] checkpoint_dir %s (-> %s): a symbolic link on the "
                "way, followed once: this job's checkpoints and its lock go "
                "to %s until it ends, also if the link changes meanwhile",
                dir, p, p);
    dt_status_t st = dt_ckpt_dir_trusted(dir, p);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/" CKPT_TMP_PREFIX "probe.XXXXXX", p);
    int fd = st == DT_OK ? create_tmp(tmp) : -1;
    if (st == DT_OK && fd < 0) {
        dt_error("[train] checkpoint_dir %s: cannot create a file there: %s "
                 "(rank 0 writes the checkpoints there: make it writable "
                 "or choose another directory)", p, strerror(errno));
        st = DT_ERR_IO;
    }
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    if (st == DT_OK)
        *path = p;
    else
        free(p);
    return st;
}
