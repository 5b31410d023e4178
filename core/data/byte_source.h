/* byte_source.h — sequential reads from a plain or gzip file (internal to
 * the data readers). With zlib, gzip files are decompressed on the fly and
 * plain files read as they are; without it, a gzip file is refused with a
 * message saying how to fix that. */
#ifndef DT_DATA_BYTE_SOURCE_H
#define DT_DATA_BYTE_SOURCE_H

#include <stddef.h>
#include <sys/types.h>
#include <dt/status.h>

typedef struct dt_byte_source dt_byte_source_t;

/* Opens path read-only when it is a regular file (or a link to one) and
 * returns the descriptor, *size its length. Anything else is refused at
 * once, unread (opening a named pipe for reading would wait for a writer,
 * forever): -1, with why[] saying what is wrong ("is a directory, not a
 * file", "is a named pipe (FIFO), not a regular file", "cannot open: ...")
 * and *st the status (DT_ERR_INVALID: not a regular file;
 * DT_ERR_NOT_FOUND: missing; DT_ERR_IO: the system refused). Logs nothing;
 * thread-safe. */
int dt_open_regular(const char *path, off_t *size, char *why, size_t whylen,
                    dt_status_t *st);

/* Logged with the path: a missing or unreadable file, or one that is not a
 * regular file (dt_open_regular). */
dt_status_t dt_byte_source_open(const char *path, dt_byte_source_t **out);
/* Read up to len bytes; *got < len only at end of file. Errors are
 * logged with the path: DT_ERR_IO when the system failed the read (it may
 * pass), DT_ERR_INVALID when the compressed data is damaged or cut short
 * (every reading meets it again). */
dt_status_t dt_byte_source_read(dt_byte_source_t *s, void *buf, size_t len,
                                size_t *got);
void dt_byte_source_close(dt_byte_source_t *s);

#endif /* DT_DATA_BYTE_SOURCE_H */
