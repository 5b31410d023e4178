/* inproc_transport.h — a real dt_transport_ops_t between threads of one
 * process (message queues under one mutex), so the collective algorithms
 * can be checked with many ranks and no sockets. Sends are eager: the
 * data is copied at isend, so they complete at once. */
#ifndef DT_TEST_INPROC_TRANSPORT_H
#define DT_TEST_INPROC_TRANSPORT_H

#include <dt/plugin.h>

typedef struct inproc_world inproc_world_t;

extern const dt_transport_ops_t inproc_ops;

dt_status_t inproc_world_new(int size, inproc_world_t **out);
void inproc_world_free(inproc_world_t *w);
/* The transport instance of one rank (pass as ctx to inproc_ops). */
void *inproc_rank_ctx(inproc_world_t *w, int rank);
/* Messages sent but never received (0 after a clean collective). */
size_t inproc_unreceived(inproc_world_t *w);

#endif
