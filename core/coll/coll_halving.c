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
 * still on the wire.
 *
 * Compressed (wire 16-bit, [collectives] compression): the half given away
 * is rounded to 16 bits before it leaves, each received chunk is widened
 * and added in float32 to the half kept. The owner of a block scales
 * (avg) and rounds it into a 16-bit image of the vector that the
 * allgather and the unfold move, widened into recv at the end: every rank
 * holds the same bits. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_internal.h"
#include "transport_call.h"

/* Receives in flight (and scratch slots) per exchange. */
#define HALVING_DEPTH 4

typedef struct halving {
    dt_comm_t *c;
    size_t count, es;
    dt_dtype_t t;
    dt_redop_t op;
    int p2, rem;
    dt_dtype_t wire; /* DT_FLOAT32 or the 16-bit wire type */
    size_t ws;       /* bytes per element on the wire      */
    float *res;      /* feedback: the residual, or NULL    */
    const char *base; /* compressed: the vector res indexes (mine, work) */
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
    const size_t es = h->ws; /* on the wire; mine and dst: h->es */
    const size_t les = h->es;
    size_t per = dt_coll_chunk_bytes(c) / es;
    /* No slot larger than the longest message (a ring_chunk of 1G asked
     * for 4 GiB of scratch for any halving allreduce). */
    size_t longest = scount > rcount ? scount : rcount;
    if (per > longest)
        per = longest;
    if (per == 0)
        per = 1;
    size_t nsend = to >= 0 ? (scount + per - 1) / per : 0;
    size_t nrecv = from >= 0 ? (rcount + per - 1) / per : 0;
    char *slots = NULL;
    dt_request_t *recvs[HALVING_DEPTH], **sends = NULL;
    size_t posted = 0, done = 0, reaped = 0;
    dt_status_t st = DT_OK;
    size_t slots_len = nrecv ? HALVING_DEPTH * per * es : 0;
    if (h->wire != DT_FLOAT32 && nsend) {
        /* The rounded half goes out of scratch, after the slots. */
        char *scr;
        DT_CHECK(dt_coll_scratch(c, slots_len + scount * es, (void **)&scr));
        slots = scr;
        dt_wire_from_f32(scr + slots_len, (const float *)sbuf, scount,
                         h->wire);
        if (h->res) /* what rounding the half given away lost */
            dt_wire_residual(h->res + (sbuf - h->base) / (ptrdiff_t)h->es,
                             (const float *)sbuf, scr + slots_len, scount,
                             h->wire, 1);
        sbuf = scr + slots_len;
    } else if (nrecv) {
        DT_CHECK(dt_coll_scratch(c, slots_len, (void **)&slots));
    }
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
        if (h->wire != DT_FLOAT32)
            dt_wire_add((float *)(dst + k * per * les),
                        (const float *)(mine + k * per * les), slot, len,
                        h->wire);
        else if ((st = dt_coll_reduce3(dst + k * per * es,
                                       mine + k * per * es, slot, len, h->t,
                                       h->op)))
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
            if ((st = dt_transport_test(c, sends[reaped], &fin)))
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

/* The compressed form of dt_coll_halving below (float32, h->wire 16-bit):
 * the same fold, halving and doubling; the allgather and the unfold move
 * g16, the 16-bit image of the result, taken from scratch once the
 * reduce-scatter (which uses scratch itself) is over. */
static dt_status_t halving16(halving_t *h, const void *send, void *recv)
{
    dt_comm_t *c = h->c;
    const int r = c->rank, n = c->size;
    while (h->p2 * 2 <= n)
        h->p2 *= 2;
    h->rem = n - h->p2;
    const size_t count = h->count, es = h->es, ws = h->ws;
    const char *src = send;
    char *work = recv, *g16;
    int vr = r < 2 * h->rem ? (r % 2 ? r / 2 : -1) : r - h->rem;
    int lo = 0, hi = h->p2;
    h->base = src;
    if (r < 2 * h->rem) {
        if (vr < 0)
            DT_CHECK(send_recv_reduce(h, r + 1, src, count, -1, NULL, NULL,
                                      0));
        else
            DT_CHECK(send_recv_reduce(h, -1, NULL, 0, r - 1, work, src,
                                      count));
    }
    if (vr >= 0) {
        const char *mine = r < 2 * h->rem ? work : src;
        for (int mask = h->p2 / 2; mask >= 1; mask /= 2) {
            int mid = lo + (hi - lo) / 2, peer = real_rank(h, vr ^ mask);
            int klo = vr & mask ? mid : lo, khi = vr & mask ? hi : mid;
            int glo = vr & mask ? lo : mid, ghi = vr & mask ? mid : hi;
            size_t ko = boff(h, klo), go = boff(h, glo);
            h->base = mine;
            DT_CHECK(send_recv_reduce(h, peer, mine + go * es,
                                      boff(h, ghi) - go, peer,
                                      work + ko * es, mine + ko * es,
                                      boff(h, khi) - ko));
            mine = work;
            lo = klo;
            hi = khi;
        }
        if (h->p2 == 1 && src != work) /* n == 1: nothing reduced */
            memcpy(work, src, count * es);
    }
    DT_CHECK(dt_coll_scratch(c, count ? count * ws : 1, (void **)&g16));
    if (vr >= 0) {
        size_t mo = boff(h, vr), ml = boff(h, vr + 1) - mo;
        float *own = (float *)work + mo;
        if (h->op == DT_AVG)
            DT_CHECK(dt_reduce_scale(own, ml, DT_FLOAT32, 1.0 / n));
        dt_wire_from_f32(g16 + mo * ws, own, ml, h->wire);
        if (h->res) /* the block's final rounding, made up by its owner */
            dt_wire_residual(h->res + mo, own, g16 + mo * ws, ml, h->wire,
                             h->op == DT_AVG ? (float)n : 1.0f);
        for (int mask = 1; mask < h->p2; mask *= 2) {
            int peer = real_rank(h, vr ^ mask), plo = lo ^ mask;
            size_t o = boff(h, lo), po = boff(h, plo);
            DT_CHECK(dt_coll_sendrecv(c, peer, g16 + o * ws,
                                      (boff(h, hi) - o) * ws, peer,
                                      g16 + po * ws,
                                      (boff(h, plo + mask) - po) * ws,
                                      DT_TAG_ALLREDUCE));
            lo = lo < plo ? lo : plo;
            hi = lo + 2 * mask;
        }
    }
    if (r < 2 * h->rem) {
        dt_request_t *q;
        if (vr >= 0)
            DT_CHECK(dt_coll_isend(c, r - 1, g16, count * ws,
                                   DT_TAG_ALLREDUCE, &q));
        else
            DT_CHECK(dt_coll_irecv(c, r + 1, g16, count * ws,
                                   DT_TAG_ALLREDUCE, &q));
        DT_CHECK(dt_coll_wait(c, &q, 1));
    }
    dt_wire_to_f32((float *)work, g16, count, h->wire);
    return DT_OK;
}

dt_status_t dt_coll_halving(dt_comm_t *c, const void *send, void *recv,
                            size_t count, dt_dtype_t t, dt_redop_t op,
                            dt_dtype_t wire, float *res)
{
    halving_t h = {.c = c, .count = count, .es = dt_dtype_size(t), .t = t,
                   .op = op, .p2 = 1};
    h.wire = t == DT_FLOAT32 ? wire : DT_FLOAT32;
    h.ws = h.wire != DT_FLOAT32 ? dt_wire_size(h.wire) : h.es;
    h.res = res;
    if (h.wire != DT_FLOAT32)
        return halving16(&h, send, recv);
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
