/* byte_source.h — sequential reads from a plain or gzip file (internal to
 * the data readers). With zlib, gzip files are decompressed on the fly and
 * plain files read as they are; without it, a gzip file is refused with a
 * message saying how to fix that. */
#ifndef DT_DATA_BYTE_SOURCE_H
#define DT_DATA_BYTE_SOURCE_H

#include <stddef.h>
#include <dt/status.h>

typedef struct dt_byte_source dt_byte_source_t;

dt_status_t dt_byte_source_open(const char *path, dt_byte_source_t **out);
/* Read up to len bytes; *got < len only at end of file. A read or
 * decompression error is logged with the path and returns DT_ERR_IO. */
dt_status_t dt_byte_source_read(dt_byte_source_t *s, void *buf, size_t len,
                                size_t *got);
void dt_byte_source_close(dt_byte_source_t *s);

#endif /* DT_DATA_BYTE_SOURCE_H */
