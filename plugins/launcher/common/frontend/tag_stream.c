/* tag_stream.c — see tag_stream.h.
 *
 * mpirun --tag-output puts "[jobid,rank]<stdout>:" before every chunk it
 * forwards, and a chunk may end in the middle of a line: then the next
 * tag follows right after the partial line ("PM[1,0]<stdout>:IX_ID=..."),
 * so for Open MPI a tag is recognised anywhere. srun --label writes whole
 * lines, each starting "  rank: ". */
#include <stdlib.h>
#include <string.h>

#include "tag_stream.h"

#define MAX_DIGITS 9

/* Digits at p[*i..n): 1 and *v when some were there and a non-digit
 * follows, -1 when the buffer ends inside them, 0 when there are none. */
static int digits(const char *p, size_t n, size_t *i, int *v)
{
    size_t start = *i;
    long x = 0;
    while (*i < n && p[*i] >= '0' && p[*i] <= '9') {
        if (*i - start >= MAX_DIGITS)
            return 0;
        x = x * 10 + (p[*i] - '0');
        (*i)++;
    }
    if (*i == n)
        return -1;
    if (*i == start)
        return 0;
    *v = (int)x;
    return 1;
}

/* p[*i..) starts with word? 1 yes (consumed), -1 buffer ends inside it. */
static int literal(const char *p, size_t n, size_t *i, const char *word)
{
    size_t k = 0, w = strlen(word);
    while (k < w && *i + k < n) {
        if (p[*i + k] != word[k])
            return 0;
        k++;
    }
    if (k < w)
        return -1;
    *i += w;
    return 1;
}

static int match_ompi(const char *p, size_t n, int *rank, int *fd,
                      size_t *tag_len)
{
    size_t i = 0;
    int job, r, m;
    if ((m = literal(p, n, &i, "[")) <= 0 || (m = digits(p, n, &i, &job)) <= 0 ||
        (m = literal(p, n, &i, ",")) <= 0 || (m = digits(p, n, &i, &r)) <= 0 ||
        (m = literal(p, n, &i, "]<std")) <= 0)
        return m;
    static const char *const kinds[] = {"out>:", "err>:", "diag>:"};
    int partial = 0;
    for (int k = 0; k < 3; k++) {
        size_t j = i;
        m = literal(p, n, &j, kinds[k]);
        if (m > 0) {
            *rank = r;
            *fd = k == 0 ? 1 : 2;
            *tag_len = j;
            return 1;
        }
        if (m < 0)
            partial = 1;
    }
    return partial ? -1 : 0;
}

static int match_slurm(const char *p, size_t n, int *rank, int *fd,
                       size_t *tag_len)
{
    size_t i = 0;
    int r, m;
    while (i < n && p[i] == ' ')
        i++;
    if (i == n)
        return -1;
    if ((m = digits(p, n, &i, &r)) <= 0 || (m = literal(p, n, &i, ": ")) <= 0)
        return m;
    *rank = r;
    *fd = 0; /* the pipe's own stream */
    *tag_len = i;
    return 1;
}

int tag_match(frontend_tags_t style, const char *p, size_t n, int *rank,
              int *fd, size_t *tag_len)
{
    if (n == 0)
        return -1;
    return style == FRONTEND_TAGS_OMPI ? match_ompi(p, n, rank, fd, tag_len)
                                       : match_slurm(p, n, rank, fd, tag_len);
}

void tag_stream_init(tag_stream_t *s, frontend_tags_t style, int pipe_fd)
{
    memset(s, 0, sizeof *s);
    s->style = style;
    s->pipe_fd = pipe_fd;
    s->at_start = 1;
    s->rank = -1;
    s->fd = pipe_fd;
}

static dt_status_t append(tag_stream_t *s, const char *data, size_t len)
{
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + len)
            cap *= 2;
        char *p = realloc(s->pend, cap);
        if (!p)
            return DT_ERR_NOMEM;
        s->pend = p;
        s->cap = cap;
    }
    memcpy(s->pend + s->len, data, len);
    s->len += len;
    return DT_OK;
}

/* Set the current owner from a matched tag. */
static void take_tag(tag_stream_t *s, int rank, int fd)
{
    s->rank = rank;
    s->fd = fd ? fd : s->pipe_fd;
    s->at_start = 0;
}

dt_status_t tag_stream_feed(tag_stream_t *s, const char *data, size_t len,
                            int eof, tag_sink_fn sink, void *arg)
{
    if (len && append(s, data, len) != DT_OK)
        return DT_ERR_NOMEM;
    size_t i = 0;
    const char *p = s->pend;
    int rank, fd;
    size_t tl;
    while (i < s->len) {
        if (s->at_start) {
            int m = tag_match(s->style, p + i, s->len - i, &rank, &fd, &tl);
            if (m < 0 && !eof)
                break; /* wait for the rest of a possible tag */
            if (m > 0) {
                take_tag(s, rank, fd);
                i += tl;
                continue;
            }
            take_tag(s, -1, 0); /* the front-end's own line */
        }
        /* The piece runs to a newline or, for Open MPI, the next tag. */
        size_t j = i;
        int held = 0, next_tag = 0;
        for (; j < s->len && p[j] != '\n'; j++) {
            if (s->style != FRONTEND_TAGS_OMPI || p[j] != '[')
                continue;
            int m = tag_match(s->style, p + j, s->len - j, &rank, &fd, &tl);
            if (m > 0) {
                next_tag = 1;
                break;
            }
            if (m < 0 && !eof) {
                held = 1;
                break;
            }
        }
        int newline = j < s->len && p[j] == '\n' && !next_tag && !held;
        size_t end = newline ? j + 1 : j;
        if (end > i)
            sink(arg, s->rank, s->fd, p + i, end - i);
        i = end;
        if (newline || next_tag)
            s->at_start = 1; /* a next tag is matched on the next round */
        else if (held)
            break;
    }
    if (i > 0) /* pend is NULL until the first bytes came */
        memmove(s->pend, s->pend + i, s->len - i);
    s->len -= i;
    if (eof)
        s->len = 0;
    return DT_OK;
}

void tag_stream_free(tag_stream_t *s)
{
    free(s->pend);
    s->pend = NULL;
    s->len = s->cap = 0;
}
