/* coll_halving.c — Rabenseifner's allreduce: a reduce-scatter by recursive
 * halving, then an allgather by recursive doubling.
 *
 * Like the ring it moves 2(p-1)/p of the vector per rank, but in 2 log2(p)
 * rounds instead of 2(p-1): with ranks outnumbering cores every round
 * costs a chain of wake-ups, so fewer rounds win for mid sizes. When n is
 * not a power of two p, the first 2(n-p) ranks fold in pairs first (the
 * even one hands its vector to the odd one and gets the result back at the
 * end), which costs an extra transfer of the whole vector: the ring stays
 * better for large vectors there.
 *
 * Blocks: the vector is cut into p blocks (dt_block_off over p); virtual
 * rank v ends the reduce-scatter holding block v. In each halving step a
 * rank sends the half of its window it gives away, chunk by chunk, and
 * reduces each received chunk of the half it keeps while later chunks are
 * still on the wire. */
#include <stdlib.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_internal.h"

/* Receives in flight (and scratch slots) per exchange. */
#define HALVING_DEPTH 4

typedef struct halving {
    dt_comm_t *c;
    size_t count, es;
    dt_dtype_t t;
    dt_redop_t op;
    int p2, rem;
} halving_t;

/* Rank of virtual rank v: the folded pairs keep their odd member. */
static int real_rank(const halving_t *h, int v)
{
    return v < h->rem ? 2 * v + 1 : v + h->rem;
}

static size_t boff(const halving_t *h, int b)
{
    return dt_block_off(h->count, h->p2, b);
}

/* Send scount elements of sbuf to `to` (none if to < 0) while receiving
 * rcount elements from `from` (none if from < 0) chunk by chunk:
 * dst = mine op chunk as each chunk arrives. Both sides cut at the same
 * chunk size, so sender and receiver agree on every message's length. */
static dt_status_t send_recv_reduce(const halving_t *h, int to,
                                    const char *sbuf, size_t scount,
                                    int from, char *dst, const char *mine,
                                    size_t rcount)
{
    dt_comm_t *c = h->c;
    const size_t es = h->es;
    size_t per = dt_coll_chunk_bytes(c) / es;
    if (per == 0)
        per = 1;
    size_t nsend = to >= 0 ? (scount + per - 1) / per : 0;
    size_t nrecv = from >= 0 ? (rcount + per - 1) / per : 0;
    char *slots = NULL;
    dt_request_t *recvs[HALVING_DEPTH], **sends = NULL;
    size_t posted = 0, done = 0, reaped = 0;
    dt_status_t st = DT_OK;
    if (nrecv)
        DT_CHECK(dt_coll_scratch(c, HALVING_DEPTH * per * es,
                                 (void **)&slots));
    if (nsend && !(sends = calloc(nsend, sizeof *sends)))
        return DT_ERR_NOMEM;
    /* Receives first: data that arrives early lands in a slot directly. */
    for (; posted < nrecv && posted < HALVING_DEPTH; posted++) {
        size_t k = posted, len = k + 1 < nrecv ? per : rcount - k * per;
        if ((st = dt_coll_irecv(c, from, slots + (k % HALVING_DEPTH) * per * es,
                                len * es, DT_TAG_ALLREDUCE, &recvs[k % HALVING_DEPTH])))
            goto out;
    }
    for (size_t k = 0; k < nsend; k++) {
        size_t len = k + 1 < nsend ? per : scount - k * per;
        if ((st = dt_coll_isend(c, to, sbuf + k * per * es, len * es,
                                DT_TAG_ALLREDUCE, &sends[k])))
            goto out;
    }
    while (done < nrecv) {
        size_t k = done, len = k + 1 < nrecv ? per : rcount - k * per;
        char *slot = slots + (k % HALVING_DEPTH) * per * es;
        if ((st = dt_coll_wait(c, &recvs[k % HALVING_DEPTH], 1)))
            goto out;
        if ((st = dt_coll_reduce3(dst + k * per * es, mine + k * per * es,
                                  slot, len, h->t, h->op)))
            goto out;
        done++;
        if (posted < nrecv) {
            size_t q = posted, qlen = q + 1 < nrecv ? per : rcount - q * per;
            if ((st = dt_coll_irecv(c, from,
                                    slots + (q % HALVING_DEPTH) * per * es,
                                    qlen * es, DT_TAG_ALLREDUCE,
                                    &recvs[q % HALVING_DEPTH])))
                goto out;
            posted++;
        }
        /* Free finished sends as we go (test also drives progress). */
        while (reaped < nsend) {
            int fin = 0;
            if ((st = c->ops->test(c->ctx, sends[reaped], &fin)))
                goto out;
            if (!fin)
                break;
            reaped++;
        }
    }
    st = dt_coll_wait(c, sends + reaped, nsend - reaped);
out:
    /* On error the transport has failed the job; what is still listed is
     * void and freed by its fini. */
    free(sends);
    return st;
}

dt_status_t dt_coll_halving(dt_comm_t *c, const void *send, void *recv,
                            size_t count, dt_dtype_t t, dt_redop_t op)
{
    halving_t h = {.c = c, .count = count, .es = dt_dtype_size(t), .t = t,
                   .op = op, .p2 = 1};
    const int r = c->rank, n = c->size;
    while (h.p2 * 2 <= n)
        h.p2 *= 2;
    h.rem = n - h.p2;
    const char *src = send;
    char *work = recv;
    const size_t es = h.es;
    int vr = r < 2 * h.rem ? (r % 2 ? r / 2 : -1) : r - h.rem;

    /* Fold: even ranks of the first pairs hand their vector over. */
    if (r < 2 * h.rem) {
        if (vr < 0)
            DT_CHECK(send_recv_reduce(&h, r + 1, src, count, -1, NULL, NULL,
                                      0));
        else
            DT_CHECK(send_recv_reduce(&h, -1, NULL, 0, r - 1, work, src,
                                      count));
    }
    if (vr >= 0) {
        /* Reduce-scatter: halve the window [lo, hi) of blocks each step.
         * Until this rank reduced anything, its data is still in src. */
        const char *mine = r < 2 * h.rem ? work : src;
        int lo = 0, hi = h.p2;
        for (int mask = h.p2 / 2; mask >= 1; mask /= 2) {
            int mid = lo + (hi - lo) / 2, peer = real_rank(&h, vr ^ mask);
            int klo = vr & mask ? mid : lo, khi = vr & mask ? hi : mid;
            int glo = vr & mask ? lo : mid, ghi = vr & mask ? mid : hi;
            size_t ko = boff(&h, klo), go = boff(&h, glo);
            DT_CHECK(send_recv_reduce(&h, peer, mine + go * es,
                                      boff(&h, ghi) - go, peer,
                                      work + ko * es, mine + ko * es,
                                      boff(&h, khi) - ko));
            mine = work;
            lo = klo;
            hi = khi;
        }
        size_t mo = boff(&h, vr), ml = boff(&h, vr + 1) - mo;
        if (op == DT_AVG)
            DT_CHECK(dt_reduce_scale(work + mo * es, ml, t, 1.0 / n));
        /* Allgather: double the window each step. */
        for (int mask = 1; mask < h.p2; mask *= 2) {
            int peer = real_rank(&h, vr ^ mask), plo = lo ^ mask;
            size_t o = boff(&h, lo), po = boff(&h, plo);
            DT_CHECK(dt_coll_sendrecv(c, peer, work + o * es,
                                      (boff(&h, hi) - o) * es, peer,
                                      work + po * es,
                                      (boff(&h, plo + mask) - po) * es,
                                      DT_TAG_ALLREDUCE));
            lo = lo < plo ? lo : plo;
            hi = lo + 2 * mask;
        }
    }
    /* Unfold: the odd member of each pair hands the result back. */
    if (r < 2 * h.rem) {
        dt_request_t *q;
        if (vr >= 0)
            DT_CHECK(dt_coll_isend(c, r - 1, work, count * es,
                                   DT_TAG_ALLREDUCE, &q));
        else
            DT_CHECK(dt_coll_irecv(c, r + 1, work, count * es,
                                   DT_TAG_ALLREDUCE, &q));
        DT_CHECK(dt_coll_wait(c, &q, 1));
    }
    return DT_OK;
}
