/* ckpt.h — checkpoint files: atomic, versioned, checksummed (internal).
 *
 * A checkpoint is a list of tagged sections (parameters, optimizer state,
 * progress, RNG state...) the trainer defines. File layout, little-endian:
 *   "DTCKPT\r\n"  u32 version  u32 nsections  u64 step
 *   nsections x { u32 tag, u32 zero, u64 len, len bytes, zero pad to 8 }
 *   SHA-256 of everything before it (32 bytes)
 * Files are named ckpt-<step, 12 digits>.dtckpt in the checkpoint
 * directory. Writing goes to a temporary file in the same directory which
 * is fsync'ed, renamed over the final name, then the directory is fsync'ed:
 * a crash at any point leaves either the old set of checkpoints or the new
 * one, never a partial file under a checkpoint name. */
#ifndef DT_CKPT_H
#define DT_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

#define DT_CKPT_VERSION 1

typedef struct dt_ckpt_section {
    uint32_t tag;
    size_t len;
    const void *data;  /* the bytes, or NULL to produce them with fill      */
    /* Produce bytes [off, off+n) into buf (e.g. copy them from a GPU). */
    dt_status_t (*fill)(void *arg, size_t off, void *buf, size_t n);
    void *arg;
} dt_ckpt_section_t;

/* Write a checkpoint for `step` into dir (created if missing), then delete
 * all but the newest `keep` checkpoints (keep <= 0: delete none) and
 * temporary files left by interrupted writers. *path (malloc'd, may be
 * NULL) names the file written. */
dt_status_t dt_ckpt_write(const char *dir, uint64_t step,
                          const dt_ckpt_section_t *secs, size_t nsecs,
                          int keep, char **path);

/* The same under a fixed name in dir (e.g. "best.dtckpt"), outside the
 * series of ckpt-<step> files: neither counted by `keep` nor found by
 * dt_ckpt_load_latest; name NULL: dt_ckpt_write. */
dt_status_t dt_ckpt_write_named(const char *dir, const char *name,
                                uint64_t step, const dt_ckpt_section_t *secs,
                                size_t nsecs, int keep, char **path);

/* A checkpoint read back and verified. Sections point into buf. */
typedef struct dt_ckpt {
    char *path;
    uint64_t step;
    uint32_t version;
    void *buf;
    size_t len;
    dt_ckpt_section_t *secs;
    size_t nsecs;
} dt_ckpt_t;

/* Read and verify one file: magic, version, lengths, checksum. A bad file
 * is logged naming it and what is wrong; returns DT_ERR_INVALID. */
dt_status_t dt_ckpt_read(const char *path, dt_ckpt_t *out);

/* The newest valid checkpoint in dir: newer ones that fail verification
 * are named in a warning and skipped. DT_ERR_NOT_FOUND when there is no
 * valid checkpoint (or no directory). */
dt_status_t dt_ckpt_load_latest(const char *dir, dt_ckpt_t *out);
/* The same among the checkpoints of steps below `before` (by file name). */
dt_status_t dt_ckpt_load_before(const char *dir, uint64_t before,
                                dt_ckpt_t *out);

/* The section with this tag, or NULL. */
const dt_ckpt_section_t *dt_ckpt_find(const dt_ckpt_t *c, uint32_t tag);
void dt_ckpt_free(dt_ckpt_t *c);

#endif /* DT_CKPT_H */
