/* tag_stream.h — split one front-end pipe into (rank, stream, bytes)
 * pieces by the tags the front-end puts on worker output. Bytes not under
 * a tag (the front-end's own messages) come out with rank -1. */
#ifndef DT_LAUNCHER_TAG_STREAM_H
#define DT_LAUNCHER_TAG_STREAM_H

#include <stddef.h>
#include <dt/status.h>
#include "frontend.h"

typedef void (*tag_sink_fn)(void *arg, int rank, int fd, const char *data,
                            size_t len);

typedef struct tag_stream {
    frontend_tags_t style;
    int pipe_fd;     /* 1 or 2: the stream untagged bytes belong to      */
    int at_start;    /* the next byte starts a line                       */
    int rank, fd;    /* the current piece's owner                         */
    char *pend;      /* bytes held back: a tag that may be incomplete     */
    size_t len, cap;
} tag_stream_t;

void tag_stream_init(tag_stream_t *s, frontend_tags_t style, int pipe_fd);
/* Feed bytes as read; eof: no more will come (held bytes go out). */
dt_status_t tag_stream_feed(tag_stream_t *s, const char *data, size_t len,
                            int eof, tag_sink_fn sink, void *arg);
void tag_stream_free(tag_stream_t *s);

/* A tag at p? 1: yes (*rank, *fd, *tag_len set); 0: no; -1: p[0..n) is a
 * proper prefix of a tag (more bytes decide). Public for the tests. */
int tag_match(frontend_tags_t style, const char *p, size_t n, int *rank,
              int *fd, size_t *tag_len);

#endif /* DT_LAUNCHER_TAG_STREAM_H */
