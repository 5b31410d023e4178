/* idx.c — IDX reader with full header and size validation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "byte_source.h"
#include "idx.h"

size_t dt_idx_type_size(int type)
{
    switch (type) {
    case DT_IDX_U8:
    case DT_IDX_I8: return 1;
    case DT_IDX_I16: return 2;
    case DT_IDX_I32:
    case DT_IDX_F32: return 4;
    case DT_IDX_F64: return 8;
    default: return 0;
    }
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

/* IDX stores big-endian elements; turn them into host order in place. */
static void to_host_order(unsigned char *p, size_t count, size_t esize)
{
    const union { uint16_t u; unsigned char c[2]; } probe = {1};
    if (esize == 1 || probe.c[0] == 0)
        return; /* bytes, or a big-endian host */
    for (size_t i = 0; i < count; i++, p += esize)
        for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

static dt_status_t read_header(dt_byte_source_t *src, const char *path,
                               dt_idx_t *out)
{
    unsigned char magic[4], dims[4 * DT_IDX_MAX_DIMS];
    size_t got;
    DT_CHECK(dt_byte_source_read(src, magic, 4, &got));
    if (got < 4) {
        dt_error("%s: not an IDX file: only %zu bytes, shorter than the "
                 "4-byte header", path, got);
        return DT_ERR_INVALID;
    }
    if (magic[0] != 0 || magic[1] != 0) {
        dt_error("%s: not an IDX file: magic starts with 0x%02x%02x, "
                 "expected 0x0000", path, magic[0], magic[1]);
        return DT_ERR_INVALID;
    }
    if (dt_idx_type_size(magic[2]) == 0) {
        dt_error("%s: unknown IDX element type 0x%02x (expected 08, 09, 0B, "
                 "0C, 0D or 0E)", path, magic[2]);
        return DT_ERR_INVALID;
    }
    if (magic[3] < 1 || magic[3] > DT_IDX_MAX_DIMS) {
        dt_error("%s: IDX header has %d dimensions; dt reads 1 to %d",
                 path, magic[3], DT_IDX_MAX_DIMS);
        return DT_ERR_INVALID;
    }
    out->type = (dt_idx_type_t)magic[2];
    out->ndims = magic[3];
    size_t need = 4 * (size_t)out->ndims;
    DT_CHECK(dt_byte_source_read(src, dims, need, &got));
    if (got < need) {
        dt_error("%s: truncated IDX header: %d dimension sizes announced, "
                 "file ends after %zu bytes of them", path, out->ndims, got);
        return DT_ERR_INVALID;
    }
    out->count = 1;
    for (int i = 0; i < out->ndims; i++) {
        out->dims[i] = be32(dims + 4 * i);
        if (out->dims[i] == 0) {
            dt_error("%s: IDX dimension %d is 0: the file holds no data",
                     path, i);
            return DT_ERR_INVALID;
        }
        /* Refuse sizes that cannot be real before allocating them. */
        if (out->count > ((size_t)1 << 40) / out->dims[i]) {
            dt_error("%s: IDX dimensions are implausibly large (over 2^40 "
                     "elements): the header is corrupt", path);
            return DT_ERR_INVALID;
        }
        out->count *= out->dims[i];
    }
    return DT_OK;
}

static void dims_text(const dt_idx_t *x, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < x->ndims && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "x" : "",
                                x->dims[i]);
}

/* Read the `bytes` the header announces into a buffer that grows with
 * what actually arrives (first IDX_FIRST_CHUNK, then doubling): a header
 * that claims more than the file holds costs at most twice the file's
 * data, never the claimed size (a 13-byte file once asked for 2 GiB).
 * The source may be gzip, whose uncompressed size is not known up front,
 * so the file's size is not asked; the reading itself is the check.
 * *got < bytes: the file ended early (the caller says so). */
#define IDX_FIRST_CHUNK ((size_t)1 << 20)

static dt_status_t read_data(dt_byte_source_t *src, const char *path,
                             size_t bytes, void **data, size_t *got)
{
    size_t cap = bytes < IDX_FIRST_CHUNK ? bytes : IDX_FIRST_CHUNK;
    *got = 0;
    *data = malloc(cap ? cap : 1); /* freed by the caller, also on errors */
    for (;;) {
        if (!*data) {
            dt_error("%s: cannot allocate %zu bytes for its data", path, cap);
            return DT_ERR_NOMEM;
        }
        size_t n;
        DT_CHECK(dt_byte_source_read(src, (char *)*data + *got, cap - *got,
                                     &n));
        *got += n;
        if (*got < cap || cap == bytes)
            return DT_OK; /* the file ended, or all announced data is in */
        cap = bytes - cap < cap ? bytes : 2 * cap;
        void *grown = realloc(*data, cap);
        if (!grown)
            free(*data);
        *data = grown;
    }
}

dt_status_t dt_idx_read(const char *path, dt_idx_t *out)
{
    dt_byte_source_t *src = NULL;
    dt_status_t st;
    memset(out, 0, sizeof *out);
    if ((st = dt_byte_source_open(path, &src)) != DT_OK)
        return st;
    if ((st = read_header(src, path, out)) != DT_OK)
        goto out;
    size_t esize = dt_idx_type_size(out->type);
    size_t bytes = out->count * esize, got;
    if ((st = read_data(src, path, bytes, &out->data, &got)) != DT_OK)
        goto out;
    char dims[96];
    dims_text(out, dims, sizeof dims);
    if (got < bytes) {
        dt_error("%s: truncated: the header announces %s elements (%zu "
                 "bytes of data) but the file ends after %zu; download it "
                 "again", path, dims, bytes, got);
        st = DT_ERR_INVALID;
        goto out;
    }
    unsigned char extra;
    if ((st = dt_byte_source_read(src, &extra, 1, &got)) != DT_OK)
        goto out;
    if (got != 0) {
        dt_error("%s: has bytes after the %s elements its header announces: "
                 "the header does not match the data", path, dims);
        st = DT_ERR_INVALID;
        goto out;
    }
    to_host_order(out->data, out->count, esize);
out:
    dt_byte_source_close(src);
    if (st != DT_OK)
        dt_idx_free(out);
    return st;
}

void dt_idx_free(dt_idx_t *idx)
{
    if (!idx)
        return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}
