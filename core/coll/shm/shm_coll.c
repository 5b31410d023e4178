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
 * round's number, whatever the collective, so all ranks count alike. */
#include <stddef.h>
#include <string.h>

#include <dt/log.h>
#include "coll/coll.h"
#include "coll/coll_internal.h"
#include "shm_internal.h"

#define POSTED offsetof(shm_rank_ctl_t, posted)
#define REDUCED offsetof(shm_rank_ctl_t, reduced)
#define DONE offsetof(shm_rank_ctl_t, done)

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

/* Piece k of a block of len elements, piece elements long: its offset and
 * length (0 past the block's end). */
static size_t piece_len(size_t len, size_t piece, size_t k)
{
    size_t off = k * piece;
    return off >= len ? 0 : (len - off < piece ? len - off : piece);
}

typedef struct reduce_job {
    const char *what;
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
        dt_shm_post(s, &s->ctl[r].posted, seq);
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
                                    const void *send, void *recv,
                                    size_t count, dt_dtype_t t,
                                    dt_redop_t op, int gather)
{
    if (count == 0)
        return DT_OK;
    size_t off[s->size], len[s->size];
    blocks(count, s->size, off, len);
    char *dst = recv;
    if (!gather)
        dst += off[s->rank] * dt_dtype_size(t);
    reduce_job_t j = {.what = what, .src = send, .dst = dst, .off = off,
                      .len = len, .maxlen = len[0], .t = t, .op = op,
                      .gather = gather};
    return reduce_rounds(s, &j);
}

dt_status_t dt_shm_allreduce(dt_shm_t *s, const void *send, void *recv,
                             size_t count, dt_dtype_t t, dt_redop_t op)
{
    return reduce_in_blocks(s, "allreduce (shared memory)", send, recv,
                            count, t, op, 1);
}

dt_status_t dt_shm_reduce_scatter(dt_shm_t *s, const void *send, void *recv,
                                  size_t count_per_rank, dt_dtype_t t,
                                  dt_redop_t op)
{
    if (count_per_rank == 0)
        return DT_OK;
    size_t off[s->size], len[s->size];
    for (int p = 0; p < s->size; p++) {
        off[p] = (size_t)p * count_per_rank;
        len[p] = count_per_rank;
    }
    /* In place (send == recv), the result goes to the start of recv: the
     * piece it overwrites (block 0's) was copied in earlier in the same
     * round, or, on rank 0, was read by the reduction before. */
    reduce_job_t j = {.what = "reduce-scatter (shared memory)",
                      .src = send, .dst = recv, .off = off, .len = len,
                      .maxlen = count_per_rank, .t = t, .op = op,
                      .gather = 0};
    return reduce_rounds(s, &j);
}

/* Every rank's block (bytes off[p], len[p] of recv; this rank's comes
 * from src) to every rank, a chunk of each per round. */
static dt_status_t gather_blocks(dt_shm_t *s, const char *what,
                                 const char *src, char *recv,
                                 const size_t *off, const size_t *len)
{
    const int n = s->size, r = s->rank;
    size_t maxlen = 0;
    for (int p = 0; p < n; p++)
        maxlen = len[p] > maxlen ? len[p] : maxlen;
    for (size_t o = 0; o < maxlen; o += s->chunk) {
        uint32_t seq;
        DT_CHECK(begin_round(s, what, &seq));
        size_t l = piece_len(len[r], s->chunk, o / s->chunk);
        memcpy(shm_out(s, r, seq), src + o, l);
        if (src != recv + off[r])
            memcpy(recv + off[r] + o, src + o, l);
        dt_shm_post(s, &s->ctl[r].reduced, seq);
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
                             size_t bytes)
{
    size_t off[s->size], len[s->size];
    for (int p = 0; p < s->size; p++) {
        off[p] = (size_t)p * bytes;
        len[p] = bytes;
    }
    char *mine = (char *)recv + off[s->rank];
    /* In place (send == recv, as in MPI): this rank's block is at mine. */
    return gather_blocks(s, "allgather (shared memory)",
                         send == recv ? mine : send, recv, off, len);
}

dt_status_t dt_shm_reduce_blocks(dt_shm_t *s, const void *send, void *recv,
                                 size_t count, dt_dtype_t t, dt_redop_t op)
{
    return reduce_in_blocks(s, "allreduce, within the host (shared memory)",
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
    return gather_blocks(s, "allreduce, within the host (shared memory)",
                         (char *)buf + off[s->rank], buf, off, len);
}

dt_status_t dt_shm_broadcast(dt_shm_t *s, void *buf, size_t bytes, int root)
{
    const char *what = "broadcast (shared memory)";
    for (size_t o = 0; o < bytes; o += s->chunk) {
        size_t l = bytes - o < s->chunk ? bytes - o : s->chunk;
        uint32_t seq;
        DT_CHECK(begin_round(s, what, &seq));
        if (s->rank == root) {
            memcpy(shm_out(s, root, seq), (char *)buf + o, l);
        } else {
            DT_CHECK(dt_shm_wait(s, root, &s->ctl[root].reduced, seq, what));
            memcpy((char *)buf + o, shm_out(s, root, seq), l);
        }
        end_round(s, seq);
    }
    return DT_OK;
}

dt_status_t dt_shm_barrier(dt_shm_t *s)
{
    const char *what = "barrier (shared memory)";
    uint32_t seq;
    DT_CHECK(begin_round(s, what, &seq));
    dt_shm_post(s, &s->ctl[s->rank].posted, seq);
    DT_CHECK(dt_shm_wait_all(s, POSTED, seq, what));
    end_round(s, seq);
    return DT_OK;
}
