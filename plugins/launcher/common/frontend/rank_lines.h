/* rank_lines.h — whole lines per (rank, stream) from the pieces a
 * tag_stream gives, so that exit markers are seen as lines even when the
 * front-end split them. Rank -1 is the front-end itself. */
#ifndef DT_LAUNCHER_RANK_LINES_H
#define DT_LAUNCHER_RANK_LINES_H

#include <stddef.h>
#include <dt/status.h>

/* A longer line is passed on in pieces of this size (complete = 0). */
#define RANK_LINES_MAX 16384

/* line[0..len) excludes the newline; complete = 0 for a piece of an
 * overlong line or a last line without newline. */
typedef void (*rank_line_fn)(void *arg, int rank, int fd, const char *line,
                             size_t len, int complete);

typedef struct rank_lines rank_lines_t;

dt_status_t rank_lines_new(int np, rank_line_fn fn, void *arg,
                           rank_lines_t **out);
/* Ranks outside 0..np-1 count as -1. */
void rank_lines_feed(rank_lines_t *l, int rank, int fd, const char *data,
                     size_t len);
/* Pass on every unfinished line. */
void rank_lines_flush(rank_lines_t *l);
void rank_lines_free(rank_lines_t *l);

#endif /* DT_LAUNCHER_RANK_LINES_H */
