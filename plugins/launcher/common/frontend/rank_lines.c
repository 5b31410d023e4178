/* rank_lines.c — see rank_lines.h. */
#include <stdlib.h>
#include <string.h>

#include "rank_lines.h"

typedef struct line_buf {
    char data[RANK_LINES_MAX];
    size_t len;
} line_buf_t;

struct rank_lines {
    int np;
    rank_line_fn fn;
    void *arg;
    line_buf_t **bufs; /* (np + 1) * 2, allocated on first use */
};

dt_status_t rank_lines_new(int np, rank_line_fn fn, void *arg,
                           rank_lines_t **out)
{
    rank_lines_t *l = calloc(1, sizeof *l);
    if (!l || !(l->bufs = calloc((size_t)(np + 1) * 2, sizeof *l->bufs))) {
        free(l);
        return DT_ERR_NOMEM;
    }
    l->np = np;
    l->fn = fn;
    l->arg = arg;
    *out = l;
    return DT_OK;
}

static line_buf_t *buf_of(rank_lines_t *l, int rank, int fd)
{
    size_t k = (size_t)(rank + 1) * 2 + (fd == 2);
    if (!l->bufs[k])
        l->bufs[k] = calloc(1, sizeof(line_buf_t));
    return l->bufs[k];
}

void rank_lines_feed(rank_lines_t *l, int rank, int fd, const char *data,
                     size_t len)
{
    if (rank < -1 || rank >= l->np)
        rank = -1;
    line_buf_t *b = buf_of(l, rank, fd);
    if (!b) { /* out of memory: pass the bytes on as they are */
        l->fn(l->arg, rank, fd, data, len, 0);
        return;
    }
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (b->len + take > RANK_LINES_MAX)
            take = RANK_LINES_MAX - b->len;
        memcpy(b->data + b->len, data, take);
        b->len += take;
        data += take;
        len -= take;
        if (len > 0 && *data == '\n') {
            l->fn(l->arg, rank, fd, b->data, b->len, 1);
            b->len = 0;
            data++;
            len--;
        } else if (b->len == RANK_LINES_MAX) {
            l->fn(l->arg, rank, fd, b->data, b->len, 0);
            b->len = 0;
        }
    }
}

void rank_lines_flush(rank_lines_t *l)
{
    for (int r = -1; r < l->np; r++)
        for (int fd = 1; fd <= 2; fd++) {
            size_t k = (size_t)(r + 1) * 2 + (fd == 2);
            line_buf_t *b = l->bufs[k];
            if (b && b->len) {
                l->fn(l->arg, r, fd, b->data, b->len, 0);
                b->len = 0;
            }
        }
}

void rank_lines_free(rank_lines_t *l)
{
    if (!l)
        return;
    for (size_t k = 0; k < (size_t)(l->np + 1) * 2; k++)
        free(l->bufs[k]);
    free(l->bufs);
    free(l);
}
