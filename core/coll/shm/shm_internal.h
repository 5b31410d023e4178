/* shm_internal.h — the shared segment's layout and the flags ranks wait on
 * (shm_segment.c maps it, shm_sync.c waits, shm_coll.c runs rounds). */
#ifndef DT_SHM_INTERNAL_H
#define DT_SHM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm_coll.h"

#define DT_SHM_MAGIC 0x64747368u /* "dtsh" */

/* What a rank called (shm_coll.c fills and compares it): kind | dtype << 4
 * | op << 8 | root << 12 in what (a root below 2^20: no host maps a
 * segment for more ranks), and the count. Three words, so that one per
 * slot fits in a flag's cache line. */
typedef struct shm_call {
    uint32_t what;
    uint32_t count_lo, count_hi;
} shm_call_t;

/* A round counter one rank advances and the others wait on; its own cache
 * line, so that polling it does not disturb the neighbour's. sleepers
 * counts ranks in futex_wait on seq: the poster wakes only when there are
 * any (a system call saved per round while everyone polls). call (posted
 * and reduced): what the rank called, by slot, written before seq in the
 * round that starts a collective; a peer reads it from the line it
 * polled, so the check costs no extra cache miss. */
typedef struct shm_flag {
    uint32_t seq;
    uint32_t sleepers;
    shm_call_t call[DT_SHM_SLOTS];
    char pad[64 - 8 - DT_SHM_SLOTS * sizeof(shm_call_t)];
} shm_flag_t;
_Static_assert(sizeof(shm_flag_t) == 64, "a flag is one cache line");

/* Per rank, in the segment. Every round moves each flag to its number:
 *   posted  — my input for the round is in my slot;
 *   reduced — my share of the result is in my slot;
 *   done    — I have read what I needed from everyone's slots. */
typedef struct shm_rank_ctl {
    shm_flag_t posted, reduced, done;
    int32_t pid;     /* for telling a dead peer from a slow one */
    int32_t attached;
    /* While this rank sleeps in a wait: the rank it waits on (-1: none)
     * and when it last woke (ms, monotonic), so that a rank that times out
     * can follow the chain of waits to the rank that went silent first. */
    int32_t waiting_on;
    int32_t pad0;
    uint64_t beat_ms;
    char pad[40];
} shm_rank_ctl_t;

typedef struct shm_header {
    uint32_t magic;
    int32_t size;
    uint64_t chunk;
    int32_t failed;  /* 1 + rank of a peer found dead, 0: none */
    int32_t failed_by;
    char pad[40];
} shm_header_t;

struct dt_shm {
    int rank, size;
    size_t chunk;         /* bytes of one slot half */
    double timeout, spin;
    int yield;            /* ranks outnumber CPUs: polls yield the CPU */
    char name[16];        /* the transport, for messages ("ucx") */
    void *base;
    size_t len;
    shm_header_t *hdr;
    shm_rank_ctl_t *ctl;  /* size entries */
    char *data;           /* size * DT_SHM_SLOTS slots of 2 * chunk */
    uint32_t seq;         /* rounds run so far */
    dt_status_t failed;   /* sticky */
    dt_store_t *store;    /* the job's: the failure record (dt/store.h) */
    int *global;          /* the job's rank of each segment rank */
};

/* The job's rank of segment rank r (messages and the failure record). */
static inline int shm_global(const dt_shm_t *s, int r)
{
    return r >= 0 && r < s->size ? s->global[r] : r;
}

/* Slot s of rank r: the input half, then the output half. */
static inline char *shm_in(const dt_shm_t *s, int r, uint32_t seq)
{
    return s->data +
           ((size_t)r * DT_SHM_SLOTS + seq % DT_SHM_SLOTS) * 2 * s->chunk;
}
static inline char *shm_out(const dt_shm_t *s, int r, uint32_t seq)
{
    return shm_in(s, r, seq) + s->chunk;
}

/* shm_sync.c: post a flag (wakes sleepers), wait for a peer's flag to
 * reach seq. what names the collective for the error message. */
void dt_shm_post(dt_shm_t *s, shm_flag_t *f, uint32_t seq);
dt_status_t dt_shm_wait(dt_shm_t *s, int peer, shm_flag_t *f, uint32_t seq,
                        const char *what);
/* Wait until every peer's flag (posted, reduced or done: the offset of
 * the flag in shm_rank_ctl_t) reached seq. */
dt_status_t dt_shm_wait_all(dt_shm_t *s, size_t flag_off, uint32_t seq,
                            const char *what);
/* Mark the job's segment failed and wake everyone (a peer is dead). */
void dt_shm_fail(dt_shm_t *s, int dead_rank);

#endif /* DT_SHM_INTERNAL_H */
