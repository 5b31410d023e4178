/* shm_coll.c — collectives as rounds over the shared segment.
 *
 * A round moves at most one chunk per rank. Rank r's slot for round k
 * holds, in its input half, the k-th piece of every block but its own
 * (block p at p * piece), and in its output half the k-th piece of its
 * block's result. So a reduction reads each piece of input once from
 * another core's cache, in rank order, and every rank ends with the bits
 * rank p computed for block p: all ranks agree exactly.
 *
 *   allreduce:      copy in, post; reduce own piece, post; copy others out
 *   reduce-scatter: copy in, post; reduce own piece straight into recv
 *   allgather:      own piece to the output half, post; copy others out
 *   broadcast:      root's piece to its output half, post; others copy
 *
 * A slot is reused DT_SHM_SLOTS rounds later, once every rank has said
 * (done) that it finished reading the round that used it, so up to that
 * many rounds are in flight: a fast rank copies in ahead while a slow one
 * still reduces. Every round takes each of a rank's three counters to the
 * round's number, whatever the collective, so all ranks count alike.
 *
 * Calls that differ across ranks (the user's bug: another count, type, op,
 * root or collective) must fail on every rank, not hand out garbage or
 * wait for the timeout. So the round that starts a collective posts what
 * the rank called with its flags, and no rank reads another's data before
 * it has compared every peer's call with its own (check_peer). Equal
 * calls run the same number of rounds, so the next collective starts in
 * the same round everywhere and only a first round needs the check; a
 * call with no data still runs one round, to meet the others. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include "coll/coll.h"
#include "coll/coll_internal.h"
#include "shm_internal.h"

#define POSTED offsetof(shm_rank_ctl_t, posted)
#define REDUCED offsetof(shm_rank_ctl_t, reduced)
#define DONE offsetof(shm_rank_ctl_t, done)

/* The collective in a shm_call_t. */
enum {
    CALL_ALLREDUCE = 1,
    CALL_REDUCE_SCATTER,
    CALL_ALLGATHER,
    CALL_BROADCAST,
    CALL_BARRIER,
    CALL_REDUCE_BLOCKS, /* a hierarchical allreduce's first half */
    CALL_GATHER_BLOCKS  /* and its last */
};

static shm_call_t call_of(int kind, size_t count, dt_dtype_t t,
                          dt_redop_t op, int root)
{
    return (shm_call_t){.what = (uint32_t)kind | ((uint32_t)t & 0xf) << 4 |
                                ((uint32_t)op & 0xf) << 8 |
                                (uint32_t)root << 12,
                        .count_lo = (uint32_t)count,
                        .count_hi = (uint32_t)((uint64_t)count >> 32)};
}

static const char *op_name(unsigned op)
{
    static const char *const names[] = {"sum", "avg", "max", "min"};
    return op < sizeof names / sizeof *names ? names[op] : "unknown op";
}

/* A call as the user wrote it: "allreduce of 100 float32 (sum)". */
static void describe(const dt_shm_t *s, const shm_call_t *c, char *buf,
                     size_t len)
{
    unsigned kind = c->what & 0xf, op = (c->what >> 8) & 0xf;
    const char *t = dt_dtype_name((dt_dtype_t)((c->what >> 4) & 0xf));
    unsigned long long n = (unsigned long long)c->count_hi << 32 |
                           c->count_lo;
    switch (kind) {
    case CALL_ALLREDUCE:
        snprintf(buf, len, "allreduce of %llu %s (%s)", n, t, op_name(op));
        break;
    case CALL_REDUCE_SCATTER:
        snprintf(buf, len, "reduce-scatter of %llu %s per rank (%s)", n, t,
                 op_name(op));
        break;
    case CALL_ALLGATHER:
        snprintf(buf, len, "allgather of %llu %s per rank", n, t);
        break;
    case CALL_BROADCAST:
        snprintf(buf, len, "broadcast of %llu %s from rank %d", n, t,
                 shm_global(s, (int)(c->what >> 12)));
        break;
    case CALL_BARRIER:
        snprintf(buf, len, "barrier");
        break;
    case CALL_REDUCE_BLOCKS:
        snprintf(buf, len, "allreduce of %llu %s (%s; its reduction within "
                 "the host)", n, t, op_name(op));
        break;
    case CALL_GATHER_BLOCKS:
        snprintf(buf, len, "allreduce of %llu %s (its gather within the "
                 "host)", n, t);
        break;
    default:
        snprintf(buf, len, "an unknown collective (%u)", kind);
    }
}

static int same_call(const shm_call_t *a, const shm_call_t *b)
{
    return a->what == b->what && a->count_lo == b->count_lo &&
           a->count_hi == b->count_hi;
}

/* Flag flag_off (POSTED, REDUCED) of rank r. */
static shm_flag_t *flag(const dt_shm_t *s, int r, size_t flag_off)
{
    return (shm_flag_t *)((char *)&s->ctl[r] + flag_off);
}

static const shm_call_t *call_in(const dt_shm_t *s, int r, size_t flag_off,
                                 uint32_t seq)
{
    return &flag(s, r, flag_off)->call[seq % DT_SHM_SLOTS];
}

/* This rank's call for round seq, into the line of one of its flags
 * before that flag is posted: a peer that waits on the flag reads it from
 * the line it polled, at no extra cache miss. The round that starts a
 * collective puts it with both posted and reduced, whichever a peer's
 * collective waits on. */
static void set_call(dt_shm_t *s, size_t flag_off, uint32_t seq,
                     const shm_call_t *call)
{
    flag(s, s->rank, flag_off)->call[seq % DT_SHM_SLOTS] = *call;
}

static void end_round(dt_shm_t *s, uint32_t seq);

/* The calls differ. Every rank posts posted with its call before it waits
 * on anything in a round, so once all have, every rank names the same two:
 * rank 0's and that of the first rank whose call is not rank 0's. The
 * round is then ended, so that a peer waiting on this rank gets to its own
 * check. Out of line: the check on the small-message path stays a few
 * compares. */
static __attribute__((cold, noinline)) dt_status_t
mismatch(dt_shm_t *s, uint32_t seq, const char *what)
{
    DT_CHECK(dt_shm_wait_all(s, POSTED, seq, what));
    const shm_call_t *c0 = call_in(s, 0, POSTED, seq);
    int p = 1;
    while (p < s->size - 1 && same_call(call_in(s, p, POSTED, seq), c0))
        p++;
    char a[128], b[128];
    describe(s, c0, a, sizeof a);
    describe(s, call_in(s, p, POSTED, seq), b, sizeof b);
    dt_error("%s: rank %d: %s: rank %d called %s, rank %d %s: every rank "
             "must call the same collectives in the same order with the "
             "same count, type, op and root (look for a call only some "
             "ranks make, or a count computed from a rank's own data); the "
             "job cannot continue",
             s->name, shm_global(s, s->rank), what, shm_global(s, 0), a,
             shm_global(s, p), b);
    end_round(s, seq);
    return s->failed = DT_ERR_INVALID;
}

/* In the round that starts a collective, before reading any peer's data:
 * wait for peer p's flag flag_off and compare the call posted with it with
 * this rank's. Every rank checks every peer, and a rank that differs from
 * one rank differs from all that agree with it, so when calls differ
 * every rank fails; sticky, as the ranks' rounds no longer line up. (The
 * call comes from the caller, not from this rank's own line: the peer
 * that polled that line took it away, and reading it back cost the 8 B
 * allreduce 20 ns of 250.) */
static inline dt_status_t check_peer(dt_shm_t *s, int p, size_t flag_off,
                                     uint32_t seq, const shm_call_t *call,
                                     const char *what)
{
    DT_CHECK(dt_shm_wait(s, p, flag(s, p, flag_off), seq, what));
    if (!same_call(call_in(s, p, flag_off, seq), call))
        return mismatch(s, seq, what);
    return DT_OK;
}

/* check_peer for every peer, on the same flag. */
static dt_status_t check_all(dt_shm_t *s, size_t flag_off, uint32_t seq,
                             const shm_call_t *call, const char *what)
{
    for (int p = 0; p < s->size; p++)
        if (p != s->rank)
            DT_CHECK(check_peer(s, p, flag_off, seq, call, what));
    return DT_OK;
}

/* Post posted with the call (NULL: not a collective's first round), and
 * leave the call with reduced for peers that wait on that. */
static void post_call(dt_shm_t *s, uint32_t seq, const shm_call_t *call)
{
    if (call)
        set_call(s, POSTED, seq, call);
    dt_shm_post(s, &s->ctl[s->rank].posted, seq);
    if (call)
        set_call(s, REDUCED, seq, call);
}

/* The same, data first: post reduced (the peers' data flag), then posted
 * (the flag that the peers in a collective other than this one may wait
 * on). */
static void post_data_call(dt_shm_t *s, uint32_t seq, const shm_call_t *call)
{
    if (call)
        set_call(s, REDUCED, seq, call);
    dt_shm_post(s, &s->ctl[s->rank].reduced, seq);
    if (call) {
        set_call(s, POSTED, seq, call);
        dt_shm_post(s, &s->ctl[s->rank].posted, seq);
    }
}

/* Start a round: its number, once the slot it uses is free everywhere. */
static dt_status_t begin_round(dt_shm_t *s, const char *what, uint32_t *seq)
{
    if (s->failed != DT_OK)
        return s->failed;
    *seq = ++s->seq;
    /* Modular: before round DT_SHM_SLOTS + 1 this is already reached. */
    return dt_shm_wait_all(s, DONE, *seq - DT_SHM_SLOTS, what);
}

static void end_round(dt_shm_t *s, uint32_t seq)
{
    shm_rank_ctl_t *me = &s->ctl[s->rank];
    dt_shm_post(s, &me->posted, seq);
    dt_shm_post(s, &me->reduced, seq);
    dt_shm_post(s, &me->done, seq);
}

/* A collective of one round without data (a barrier, a count of 0): it
 * still meets the others, or a rank that skipped it would have its next
 * call compared with theirs. */
static dt_status_t empty_round(dt_shm_t *s, const shm_call_t *call,
                               const char *what)
{
    uint32_t seq;
    DT_CHECK(begin_round(s, what, &seq));
    post_call(s, seq, call);
    DT_CHECK(check_all(s, POSTED, seq, call, what));
    end_round(s, seq);
    return DT_OK;
}

/* Piece k of a block of len elements, piece elements long: its offset and
 * length (0 past the block's end). */
static size_t piece_len(size_t len, size_t piece, size_t k)
{
    size_t off = k * piece;
    return off >= len ? 0 : (len - off < piece ? len - off : piece);
}

typedef struct reduce_job {
    const char *what;
    shm_call_t call;  /* what this rank called */
    const char *src;  /* the whole input: block p at off[p]              */
    char *dst;        /* allreduce: whole output; reduce-scatter: my block */
    const size_t *off, *len; /* blocks, in elements                      */
    size_t maxlen;
    dt_dtype_t t;
    dt_redop_t op;
    int gather;       /* allreduce: everyone copies every result out      */
} reduce_job_t;

static dt_status_t reduce_rounds(dt_shm_t *s, const reduce_job_t *j)
{
    const int n = s->size, r = s->rank;
    const size_t es = dt_dtype_size(j->t);
    /* Whole cache lines per piece: pieces of neighbouring blocks never
     * share one. */
    const size_t piece = s->chunk / (size_t)n / 64 * 64 / es;
    for (size_t k = 0; k * piece < j->maxlen; k++) {
        uint32_t seq;
        DT_CHECK(begin_round(s, j->what, &seq));
        char *in = shm_in(s, r, seq);
        for (int p = 0; p < n; p++) {
            size_t l = piece_len(j->len[p], piece, k);
            if (p != r && l)
                memcpy(in + (size_t)p * piece * es,
                       j->src + (j->off[p] + k * piece) * es, l * es);
        }
        post_call(s, seq, k == 0 ? &j->call : NULL);
        if (k == 0)
            DT_CHECK(check_all(s, POSTED, seq, &j->call, j->what));
        else
            DT_CHECK(dt_shm_wait_all(s, POSTED, seq, j->what));

        size_t l = piece_len(j->len[r], piece, k);
        if (l) {
            /* Into the slot's output half first: in place, the
             * destination is this rank's own input, still to be read by
             * the fold when r > 1. */
            char *res = shm_out(s, r, seq);
            const char *mine = j->src + (j->off[r] + k * piece) * es;
            const char *op0 = r == 0 ? mine
                                     : shm_in(s, 0, seq) + (size_t)r * piece * es;
            for (int q = 1; q < n; q++) {
                const char *x = q == r ? mine
                                       : shm_in(s, q, seq) +
                                             (size_t)r * piece * es;
                DT_CHECK(dt_coll_reduce3(res, q == 1 ? op0 : res, x, l, j->t,
                                         j->op));
            }
            if (j->op == DT_AVG)
                DT_CHECK(dt_reduce_scale(res, l, j->t, 1.0 / n));
            memcpy(j->dst + ((j->gather ? j->off[r] : 0) + k * piece) * es,
                   res, l * es);
        }
        dt_shm_post(s, &s->ctl[r].reduced, seq);

        for (int q = 0; j->gather && q < n; q++) {
            size_t lq = piece_len(j->len[q], piece, k);
            if (q == r || !lq)
                continue;
            DT_CHECK(dt_shm_wait(s, q, &s->ctl[q].reduced, seq, j->what));
            memcpy(j->dst + (j->off[q] + k * piece) * es, shm_out(s, q, seq),
                   lq * es);
        }
        end_round(s, seq);
    }
    return DT_OK;
}

/* Blocks as the core's ring lays them out (dt_block_off). */
static void blocks(size_t count, int n, size_t *off, size_t *len)
{
    for (int p = 0; p < n; p++) {
        off[p] = dt_block_off(count, n, p);
        len[p] = dt_block_len(count, n, p);
    }
}

/* Reduce a vector laid out in blocks; gather: everyone gets every block
 * at recv, else this rank's block goes to its place in recv. */
static dt_status_t reduce_in_blocks(dt_shm_t *s, const char *what,
                                    shm_call_t call, const void *send,
                                    void *recv, size_t count, dt_dtype_t t,
                                    dt_redop_t op, int gather)
{
    if (count == 0)
        return empty_round(s, &call, what);
    size_t off[s->size], len[s->size];
    blocks(count, s->size, off, len);
    char *dst = recv;
    if (!gather)
        dst += off[s->rank] * dt_dtype_size(t);
    reduce_job_t j = {.what = what, .call = call, .src = send, .dst = dst,
                      .off = off, .len = len, .maxlen = len[0], .t = t,
                      .op = op, .gather = gather};
    return reduce_rounds(s, &j);
}

dt_status_t dt_shm_allreduce(dt_shm_t *s, const void *send, void *recv,
                             size_t count, dt_dtype_t t, dt_redop_t op)
{
    return reduce_in_blocks(s, "allreduce (shared memory)",
                            call_of(CALL_ALLREDUCE, count, t, op, 0), send,
                            recv, count, t, op, 1);
}

dt_status_t dt_shm_reduce_scatter(dt_shm_t *s, const void *send, void *recv,
                                  size_t count_per_rank, dt_dtype_t t,
                                  dt_redop_t op)
{
    const char *what = "reduce-scatter (shared memory)";
    shm_call_t call = call_of(CALL_REDUCE_SCATTER, count_per_rank, t, op, 0);
    if (count_per_rank == 0)
        return empty_round(s, &call, what);
    size_t off[s->size], len[s->size];
    for (int p = 0; p < s->size; p++) {
        off[p] = (size_t)p * count_per_rank;
        len[p] = count_per_rank;
    }
    /* In place (send == recv), the result goes to the start of recv: the
     * piece it overwrites (block 0's) was copied in earlier in the same
     * round, or, on rank 0, was read by the reduction before. */
    reduce_job_t j = {.what = what, .call = call, .src = send, .dst = recv,
                      .off = off, .len = len, .maxlen = count_per_rank,
                      .t = t, .op = op, .gather = 0};
    return reduce_rounds(s, &j);
}

/* Every rank's block (bytes off[p], len[p] of recv; this rank's comes
 * from src) to every rank, a chunk of each per round. The first round
 * checks every peer (a rank reads only the blocks that are not empty). */
static dt_status_t gather_blocks(dt_shm_t *s, const char *what,
                                 const shm_call_t *call, const char *src,
                                 char *recv, const size_t *off,
                                 const size_t *len)
{
    const int n = s->size, r = s->rank;
    size_t maxlen = 0;
    for (int p = 0; p < n; p++)
        maxlen = len[p] > maxlen ? len[p] : maxlen;
    if (maxlen == 0)
        return empty_round(s, call, what);
    for (size_t o = 0; o < maxlen; o += s->chunk) {
        uint32_t seq;
        DT_CHECK(begin_round(s, what, &seq));
        size_t l = piece_len(len[r], s->chunk, o / s->chunk);
        memcpy(shm_out(s, r, seq), src + o, l);
        if (src != recv + off[r])
            memcpy(recv + off[r] + o, src + o, l);
        post_data_call(s, seq, o == 0 ? call : NULL);
        if (o == 0)
            DT_CHECK(check_all(s, REDUCED, seq, call, what));
        for (int q = 0; q < n; q++) {
            size_t lq = piece_len(len[q], s->chunk, o / s->chunk);
            if (q == r || !lq)
                continue;
            DT_CHECK(dt_shm_wait(s, q, &s->ctl[q].reduced, seq, what));
            memcpy(recv + off[q] + o, shm_out(s, q, seq), lq);
        }
        end_round(s, seq);
    }
    return DT_OK;
}

dt_status_t dt_shm_allgather(dt_shm_t *s, const void *send, void *recv,
                             size_t count_per_rank, dt_dtype_t t)
{
    shm_call_t call = call_of(CALL_ALLGATHER, count_per_rank, t, 0, 0);
    size_t bytes = count_per_rank * dt_dtype_size(t);
    size_t off[s->size], len[s->size];
    for (int p = 0; p < s->size; p++) {
        off[p] = (size_t)p * bytes;
        len[p] = bytes;
    }
    char *mine = (char *)recv + off[s->rank];
    /* In place (send == recv, as in MPI): this rank's block is at mine. */
    return gather_blocks(s, "allgather (shared memory)", &call,
                         send == recv ? mine : send, recv, off, len);
}

dt_status_t dt_shm_reduce_blocks(dt_shm_t *s, const void *send, void *recv,
                                 size_t count, dt_dtype_t t, dt_redop_t op)
{
    /* The call keeps the op as given: avg and sum both sum here, but a
     * rank that averages and one that sums do not agree. */
    return reduce_in_blocks(s, "allreduce, within the host (shared memory)",
                            call_of(CALL_REDUCE_BLOCKS, count, t, op, 0),
                            send, recv, count, t,
                            op == DT_AVG ? DT_SUM : op, 0);
}

dt_status_t dt_shm_allgather_blocks(dt_shm_t *s, void *buf, size_t count,
                                    dt_dtype_t t)
{
    size_t es = dt_dtype_size(t), off[s->size], len[s->size];
    blocks(count, s->size, off, len);
    for (int p = 0; p < s->size; p++) {
        off[p] *= es;
        len[p] *= es;
    }
    shm_call_t call = call_of(CALL_GATHER_BLOCKS, count, t, 0, 0);
    return gather_blocks(s, "allreduce, within the host (shared memory)",
                         &call, (char *)buf + off[s->rank], buf, off, len);
}

/* The first round of a broadcast: the root publishes its piece before it
 * checks the others (its own slot: nobody reads it before checking), so
 * that the data waits on no one; the others check the root on its data
 * flag, each other on posted. */
static dt_status_t broadcast_check(dt_shm_t *s, uint32_t seq, int root,
                                   const shm_call_t *call, const char *what)
{
    if (s->rank == root)
        return check_all(s, POSTED, seq, call, what);
    for (int p = 0; p < s->size; p++)
        if (p != s->rank)
            DT_CHECK(check_peer(s, p, p == root ? REDUCED : POSTED, seq,
                                call, what));
    return DT_OK;
}

dt_status_t dt_shm_broadcast(dt_shm_t *s, void *buf, size_t count,
                             dt_dtype_t t, int root)
{
    const char *what = "broadcast (shared memory)";
    shm_call_t call = call_of(CALL_BROADCAST, count, t, 0, root);
    size_t bytes = count * dt_dtype_size(t);
    if (bytes == 0)
        return empty_round(s, &call, what);
    for (size_t o = 0; o < bytes; o += s->chunk) {
        size_t l = bytes - o < s->chunk ? bytes - o : s->chunk;
        uint32_t seq;
        DT_CHECK(begin_round(s, what, &seq));
        if (s->rank == root) {
            memcpy(shm_out(s, root, seq), (char *)buf + o, l);
            post_data_call(s, seq, o == 0 ? &call : NULL);
        } else if (o == 0) {
            post_call(s, seq, &call);
        }
        if (o == 0)
            DT_CHECK(broadcast_check(s, seq, root, &call, what));
        if (s->rank != root) {
            DT_CHECK(dt_shm_wait(s, root, &s->ctl[root].reduced, seq, what));
            memcpy((char *)buf + o, shm_out(s, root, seq), l);
        }
        end_round(s, seq);
    }
    return DT_OK;
}

dt_status_t dt_shm_barrier(dt_shm_t *s)
{
    shm_call_t call = call_of(CALL_BARRIER, 0, 0, 0, 0);
    return empty_round(s, &call, "barrier (shared memory)");
}
