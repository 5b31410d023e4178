/* ckpt_read.c — read and verify checkpoints; find the newest valid one. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <dt/log.h>
#include "ckpt.h"
#include "ckpt_format.h"

static dt_status_t slurp(const char *path, void **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    *buf = NULL;
    if (!f && (errno == EACCES || errno == EPERM)) {
        /* Another user's (a root job's under umask 077): an intact file,
         * so --resume must not go back past it and then overwrite it. */
        dt_error("%s: cannot open checkpoint: %s (user id %d may not read "
                 "it): make it readable to this user (chown or chmod), or "
                 "move it out of the directory to resume from the one "
                 "before it", path, strerror(errno), (int)geteuid());
        return DT_ERR_CONFIG;
    }
    if (!f) {
        dt_error("%s: cannot open checkpoint: %s", path, strerror(errno));
        return errno == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
    }
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return DT_ERR_IO;
    }
    *len = (size_t)st.st_size;
    *buf = malloc(*len ? *len : 1);
    if (!*buf) {
        fclose(f);
        return DT_ERR_NOMEM;
    }
    size_t got = fread(*buf, 1, *len, f);
    int failed = ferror(f);
    fclose(f);
    if (got != *len) {
        dt_error("%s: cannot read checkpoint: %s", path,
                 failed ? strerror(errno) : "file shrank while reading");
        free(*buf);
        *buf = NULL;
        return DT_ERR_IO;
    }
    return DT_OK;
}

/* DT_OK when the file's SHA-256 matches, DT_ERR_INVALID (not logged)
 * when it does not. */
static dt_status_t hash_matches(const char *path, const unsigned char *p,
                                size_t len)
{
    unsigned char hash[EVP_MAX_MD_SIZE];
    unsigned int hlen = 0;
    if (EVP_Digest(p, len - CKPT_HASH_LEN, hash, &hlen, EVP_sha256(),
                   NULL) != 1 || hlen != CKPT_HASH_LEN) {
        dt_error("%s: SHA-256 failed", path);
        return DT_ERR_INTERNAL;
    }
    return memcmp(hash, p + len - CKPT_HASH_LEN, CKPT_HASH_LEN) == 0
               ? DT_OK
               : DT_ERR_INVALID;
}

static dt_status_t verify_hash(const char *path, const unsigned char *p,
                               size_t len)
{
    dt_status_t st = hash_matches(path, p, len);
    if (st == DT_ERR_INVALID)
        dt_error("%s: checksum mismatch: the checkpoint is corrupt", path);
    return st;
}

/* A format version other than this dt's. Intact (the checksum matches), a
 * later one is a newer dt's file: DT_ERR_UNSUPPORTED, so that --resume
 * neither calls it corrupt nor goes back to an older checkpoint past it.
 * Otherwise the version field is as damaged as the rest. */
static dt_status_t say_other_version(const char *path,
                                     const unsigned char *p, size_t len,
                                     uint32_t version)
{
    dt_status_t st = hash_matches(path, p, len);
    if (st == DT_OK && version > DT_CKPT_VERSION) {
        dt_error("%s was written by a newer dt (checkpoint format version "
                 "%u; this dt reads version %d): resume it with that dt "
                 "version or a later one; this one can only start afresh "
                 "(without --resume, or with another checkpoint_dir)",
                 path, version, DT_CKPT_VERSION);
        return DT_ERR_UNSUPPORTED;
    }
    if (st == DT_ERR_INTERNAL)
        return st;
    dt_error("%s: checkpoint format version %u; this dt reads version %d "
             "only%s", path, version, DT_CKPT_VERSION,
             st == DT_OK ? " (no dt wrote that version: corrupt)"
                         : ", and the checksum does not match: corrupt");
    return DT_ERR_INVALID;
}

/* Walk the sections; every length must fit exactly before the hash. */
static dt_status_t parse_sections(const char *path, dt_ckpt_t *c,
                                  uint32_t nsecs)
{
    const unsigned char *p = c->buf;
    size_t end = c->len - CKPT_HASH_LEN, off = CKPT_HEADER_LEN;
    if (nsecs > end / CKPT_SECTION_HEAD) {
        dt_error("%s: header announces %u sections, more than the file can "
                 "hold: corrupt", path, nsecs);
        return DT_ERR_INVALID;
    }
    c->secs = calloc(nsecs ? nsecs : 1, sizeof *c->secs);
    if (!c->secs)
        return DT_ERR_NOMEM;
    for (uint32_t i = 0; i < nsecs; i++) {
        if (end - off < CKPT_SECTION_HEAD) {
            dt_error("%s: section %u header runs past the end: corrupt",
                     path, i);
            return DT_ERR_INVALID;
        }
        uint64_t len = ckpt_get64(p + off + 8);
        c->secs[i].tag = ckpt_get32(p + off);
        off += CKPT_SECTION_HEAD;
        if (len > end - off || ckpt_pad8((size_t)len) > end - off - len) {
            dt_error("%s: section %u (%llu bytes) runs past the end: "
                     "corrupt", path, i, (unsigned long long)len);
            return DT_ERR_INVALID;
        }
        c->secs[i].len = (size_t)len;
        c->secs[i].data = p + off;
        off += (size_t)len + ckpt_pad8((size_t)len);
    }
    if (off != end) {
        dt_error("%s: %zu unexpected bytes after the last section: corrupt",
                 path, end - off);
        return DT_ERR_INVALID;
    }
    c->nsecs = nsecs;
    return DT_OK;
}

/* Test hook (tests/train_rollback.sh): DT_TEST_CKPT_READ_LOG=FILE
 * appends the path of every checkpoint read whole to FILE, so that a test
 * can say which files a choice read (dt_ckpt_peek reads none whole). */
static void log_whole_read(const char *path)
{
    const char *log = getenv("DT_TEST_CKPT_READ_LOG");
    FILE *f = log && *log ? fopen(log, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "%s\n", path);
    fclose(f);
}

dt_status_t dt_ckpt_read(const char *path, dt_ckpt_t *out)
{
    memset(out, 0, sizeof *out);
    log_whole_read(path);
    dt_status_t st = slurp(path, &out->buf, &out->len);
    if (st != DT_OK)
        return st;
    const unsigned char *p = out->buf;
    st = DT_ERR_INVALID;
    if (out->len < CKPT_HEADER_LEN + CKPT_HASH_LEN ||
        memcmp(p, CKPT_MAGIC, CKPT_MAGIC_LEN) != 0) {
        dt_error("%s: not a dt checkpoint (%s)", path,
                 out->len < CKPT_HEADER_LEN + CKPT_HASH_LEN
                     ? "too short: truncated"
                     : "wrong magic");
        goto out;
    }
    out->version = ckpt_get32(p + 8);
    if (out->version != DT_CKPT_VERSION) {
        st = say_other_version(path, p, out->len, out->version);
        goto out;
    }
    if ((st = verify_hash(path, p, out->len)) != DT_OK)
        goto out;
    out->step = ckpt_get64(p + 16);
    if ((st = parse_sections(path, out, ckpt_get32(p + 12))) != DT_OK)
        goto out;
    if (!(out->path = strdup(path)))
        st = DT_ERR_NOMEM;
out:
    if (st != DT_OK)
        dt_ckpt_free(out);
    return st;
}

/* Only regular files (or links to them) are checkpoints: a directory or
 * a socket of that name is nobody's checkpoint. */
static int is_regular(const char *dir, const struct dirent *e)
{
    if (e->d_type == DT_REG)
        return 1;
    if (e->d_type != DT_UNKNOWN && e->d_type != DT_LNK)
        return 0;
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int by_step_desc(const void *a, const void *b)
{
    uint64_t x = ((const dt_ckpt_entry_t *)a)->step,
             y = ((const dt_ckpt_entry_t *)b)->step;
    return (x < y) - (x > y);
}

static dt_status_t add_entry(dt_ckpt_entry_t **v, size_t *n, size_t *cap,
                             const char *name, uint64_t step)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        dt_ckpt_entry_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return DT_ERR_NOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[*n].step = step;
    /* names that parse fit; a copy, not snprintf: gcc -O1/-Os called the
     * %s of a d_name a truncation (-Werror) */
    size_t l = strnlen(name, sizeof (*v)[*n].name - 1);
    memcpy((*v)[*n].name, name, l);
    (*v)[*n].name[l] = '\0';
    (*n)++;
    return DT_OK;
}

dt_status_t dt_ckpt_list(const char *dir, dt_ckpt_entry_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d && errno == ENOENT)
        return DT_ERR_NOT_FOUND;
    if (!d) {
        dt_error("cannot read the checkpoint directory %s: %s (check [train] "
                 "checkpoint_dir and its permissions)", dir, strerror(errno));
        return DT_ERR_IO;
    }
    dt_ckpt_entry_t *v = NULL;
    size_t cap = 0;
    dt_status_t st = DT_OK;
    struct dirent *e;
    uint64_t step;
    while (st == DT_OK && (e = readdir(d)))
        if (ckpt_parse_name(e->d_name, &step) && is_regular(dir, e))
            st = add_entry(&v, n, &cap, e->d_name, step);
    closedir(d);
    if (st != DT_OK) {
        free(v);
        *n = 0;
        return st;
    }
    if (*n > 1)
        qsort(v, *n, sizeof *v, by_step_desc);
    *out = v;
    return DT_OK;
}

dt_status_t dt_ckpt_load_latest(const char *dir, dt_ckpt_t *out)
{
    return dt_ckpt_load_before(dir, UINT64_MAX, out);
}

dt_status_t dt_ckpt_load_before(const char *dir, uint64_t before,
                                dt_ckpt_t *out)
{
    memset(out, 0, sizeof *out);
    dt_ckpt_entry_t *v;
    size_t n, tried = 0;
    DT_CHECK(dt_ckpt_list(dir, &v, &n));
    dt_status_t st = DT_ERR_NOT_FOUND;
    char path[4096];
    for (size_t i = 0; i < n; i++) {
        if (v[i].step >= before)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
        tried++;
        st = dt_ckpt_read(path, out);
        /* a newer dt's file, or one we may not read: going back past it
         * would drop its progress */
        if (st == DT_OK || st == DT_ERR_NOMEM || st == DT_ERR_UNSUPPORTED ||
            st == DT_ERR_CONFIG)
            break;
        dt_warn("%s: skipped (see above); trying the previous checkpoint",
                path);
    }
    free(v);
    if (st != DT_OK && st != DT_ERR_NOMEM && st != DT_ERR_UNSUPPORTED &&
        st != DT_ERR_CONFIG)
        st = tried ? DT_ERR_INVALID : DT_ERR_NOT_FOUND;
    return st;
}

const dt_ckpt_section_t *dt_ckpt_find(const dt_ckpt_t *c, uint32_t tag)
{
    for (size_t i = 0; i < c->nsecs; i++)
        if (c->secs[i].tag == tag)
            return &c->secs[i];
    return NULL;
}

void dt_ckpt_free(dt_ckpt_t *c)
{
    if (!c)
        return;
    free(c->path);
    free(c->buf);
    free(c->secs);
    memset(c, 0, sizeof *c);
}
