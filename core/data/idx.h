/* idx.h — the IDX file format of MNIST and Fashion-MNIST (internal).
 *
 * An IDX file is a 4-byte magic (0, 0, type code, number of dimensions),
 * that many big-endian uint32 dimension sizes, then the elements in
 * row-major order, big-endian. Files may be gzip-compressed (read through
 * zlib when dt was built with it). */
#ifndef DT_DATA_IDX_H
#define DT_DATA_IDX_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>

#define DT_IDX_MAX_DIMS 4

/* IDX element type codes (the third magic byte). */
typedef enum dt_idx_type {
    DT_IDX_U8 = 0x08,
    DT_IDX_I8 = 0x09,
    DT_IDX_I16 = 0x0B,
    DT_IDX_I32 = 0x0C,
    DT_IDX_F32 = 0x0D,
    DT_IDX_F64 = 0x0E
} dt_idx_type_t;

typedef struct dt_idx {
    dt_idx_type_t type;
    int ndims;
    uint32_t dims[DT_IDX_MAX_DIMS];
    size_t count;   /* product of dims                               */
    void *data;     /* count elements, converted to host byte order */
} dt_idx_t;

/* Read a whole IDX file (plain or gzip). Every problem — missing file,
 * bad magic, unknown type, too many dimensions, truncated data, trailing
 * bytes, corrupt compression — is logged naming the file and returns
 * DT_ERR_IO (cannot read) or DT_ERR_INVALID (bad contents). */
dt_status_t dt_idx_read(const char *path, dt_idx_t *out);
void dt_idx_free(dt_idx_t *idx);

/* Bytes per element of a type code, 0 for an unknown code. */
size_t dt_idx_type_size(int type);

#endif /* DT_DATA_IDX_H */
