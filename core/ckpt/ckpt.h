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

/* Write a checkpoint for `step` into dir (created if missing, with its
 * parents, each new one synced into its parent), then dt_ckpt_prune(dir,
 * keep, step, NULL, 0). *path (malloc'd, may be NULL) names the file
 * written. */
dt_status_t dt_ckpt_write(const char *dir, uint64_t step,
                          const dt_ckpt_section_t *secs, size_t nsecs,
                          int keep, char **path);

/* The same under a fixed name in dir (e.g. "best.dtckpt"), outside the
 * series of ckpt-<step> files: neither counted by `keep` nor found by
 * dt_ckpt_load_latest; name NULL: dt_ckpt_write. */
dt_status_t dt_ckpt_write_named(const char *dir, const char *name,
                                uint64_t step, const dt_ckpt_section_t *secs,
                                size_t nsecs, int keep, char **path);

/* Delete temporary files left by interrupted writers and all but the
 * newest `keep` checkpoints (keep <= 0: none) among those of steps up to
 * `upto` (the one just written), leaving out the steps in skip[0..nskip).
 * Files of later steps, or skipped ones, are not this run's (a corrupt
 * newer checkpoint that --resume went past and could not set aside):
 * they neither count nor are deleted, so they cannot push out good ones. (A rollback sets its
 * abandoned steps aside: dt_ckpt_set_aside_after.) */
void dt_ckpt_prune(const char *dir, int keep, uint64_t upto,
                   const uint64_t *skip, size_t nskip);

/* dir/name out of the series (ckpt_aside.c): renamed within dir to
 * name + suffix (e.g. ".corrupt"), or name + suffix + ".1", ".2"... when
 * that is taken: never over an existing file; then dir synced. The new
 * path in to. DT_ERR_NOT_FOUND: no such file (nothing done, quiet);
 * DT_ERR_IO: logged, naming the file and the reason. */
dt_status_t dt_ckpt_set_aside(const char *dir, const char *name,
                              const char *suffix, char *to, size_t tolen);

/* The series files of steps after `step` out of the series, each by
 * dt_ckpt_set_aside (kept, never loaded or pruned). *moved: how many. A
 * missing dir is none; DT_ERR_IO names what failed. */
dt_status_t dt_ckpt_set_aside_after(const char *dir, uint64_t step,
                                    const char *suffix, size_t *moved);

/* fsync of a directory, so that renames in it last; DT_ERR_IO logged. */
dt_status_t dt_ckpt_sync_dir(const char *dir);

/* Before training: create dir as dt_ckpt_write would, resolve it
 * (dt_ckpt_dir_resolve; said when a link was on the way, naming both
 * paths), check it (dt_ckpt_dir_trusted) and create a file in it
 * (removed again), so that an unwritable directory fails at the start,
 * not at the first checkpoint. *path (malloc'd): the path every later
 * checkpoint operation of the job must go through. DT_ERR_IO is logged
 * naming dir and errno. */
dt_status_t dt_ckpt_check_dir(const char *dir, char **path);

/* A symbolic link met following a checkpoint_dir's path
 * (dt_ckpt_dir_walk): link, its path through directories without links;
 * parent, the directory it is in; lsb, its lstat. */
struct stat;
typedef void (*dt_ckpt_link_fn)(void *arg, const char *link,
                                const char *parent, const struct stat *lsb);

/* Follow dir one name at a time as the kernel does (ckpt_dir_walk.c),
 * each link met passed to each (may be NULL); where it leads, without
 * links, ends in real (PATH_MAX bytes). The number of links met, or -1
 * with errno (ENOENT, ELOOP...). */
int dt_ckpt_dir_walk(const char *dir, char *real, dt_ckpt_link_fn each,
                     void *arg);

/* The path a job's checkpoints go through, resolved once (*path,
 * malloc'd): dir itself when no link is on its way, else where it leads
 * then, so that a link swapped later moves nothing. DT_ERR_IO (logged)
 * when it cannot be followed. */
dt_status_t dt_ckpt_dir_resolve(const char *dir, char **path);

/* Warn when other users could change the checkpoint directory (existing)
 * given as dir, resolved to path (dt_ckpt_dir_resolve; dir when no link
 * was on the way): another user's, writable by every user, under a
 * directory every user, or a group with another user in it, may write
 * without the sticky bit, or reached through a link another user owns or
 * may replace (ckpt_dir_trust.c): each said naming dir (and path), why
 * and what to do. DT_ERR_IO when it cannot be looked at. */
dt_status_t dt_ckpt_dir_trusted(const char *dir, const char *path);

/* Rank 0, for the job's life: an exclusive flock on dir/.dt-lock
 * (ckpt_lock.c), which also records this process's pid, host and start
 * time. DT_ERR_CONFIG when another live process holds it, logged naming
 * dir, that holder and what to do; DT_ERR_IO when the file cannot be
 * opened or locked. A holder that lets go within wait_s seconds (> 0: a
 * restart, whose previous rank 0 may still be ending) is waited for,
 * said once. *fd: the lock, for dt_ckpt_unlock (-1 on failure). */
dt_status_t dt_ckpt_lock(const char *dir, double wait_s, int *fd);
/* Release it (the process's end does too); sets *fd to -1. */
void dt_ckpt_unlock(int *fd);

/* One file of the ckpt-<step> series, by its name (not read). */
typedef struct dt_ckpt_entry {
    uint64_t step;
    char name[40];
} dt_ckpt_entry_t;

/* The series in dir: regular files named ckpt-<digits>.dtckpt, newest
 * first; *out malloc'd (free() it; NULL when *n is 0). DT_ERR_NOT_FOUND:
 * dir does not exist; DT_ERR_IO: it cannot be read (logged, naming it and
 * errno: anything but a missing directory is an error, never "none"). */
dt_status_t dt_ckpt_list(const char *dir, dt_ckpt_entry_t **out, size_t *n);

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
 * is logged naming it and what is wrong; returns DT_ERR_INVALID. An
 * intact file of a later format version (a newer dt's) is logged as such;
 * returns DT_ERR_UNSUPPORTED. One this user may not open (EACCES, EPERM)
 * is logged with what to do; returns DT_ERR_CONFIG. */
dt_status_t dt_ckpt_read(const char *path, dt_ckpt_t *out);

/* The newest valid checkpoint in dir: newer ones that fail verification
 * are named in a warning and skipped. DT_ERR_NOT_FOUND when dir holds no
 * checkpoint or does not exist; DT_ERR_INVALID when it holds some but
 * none verifies (each named); DT_ERR_IO when dir cannot be read;
 * DT_ERR_UNSUPPORTED when the newest intact one is a newer dt's, and
 * DT_ERR_CONFIG when this user may not read the newest (none older is
 * taken in its place). */
dt_status_t dt_ckpt_load_latest(const char *dir, dt_ckpt_t *out);
/* The same among the checkpoints of steps below `before` (by file name). */
dt_status_t dt_ckpt_load_before(const char *dir, uint64_t before,
                                dt_ckpt_t *out);

/* One section of the file at path without reading the others
 * (ckpt_peek.c): its first min(len, cap) bytes into buf, its length in
 * *len, the file's step in *step. Only the structure is checked (magic,
 * version, that the sections fill the file exactly), not the checksum,
 * which covers the whole file: a file chosen this way must still be read
 * with dt_ckpt_read. DT_ERR_NOT_FOUND (quiet): no such section; a file
 * that cannot be opened or read is DT_ERR_IO (a gone one too); otherwise
 * the errors of dt_ckpt_read, logged alike. */
dt_status_t dt_ckpt_peek(const char *path, uint32_t tag, void *buf,
                         size_t cap, size_t *len, uint64_t *step);

/* The section with this tag, or NULL. */
const dt_ckpt_section_t *dt_ckpt_find(const dt_ckpt_t *c, uint32_t tag);
void dt_ckpt_free(dt_ckpt_t *c);

#endif /* DT_CKPT_H */
