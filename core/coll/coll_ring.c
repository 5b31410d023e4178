/* coll_ring.c — the pipelined ring (reduce-scatter and/or allgather).
 *
 * Every rank sends to r+1 and receives from r-1. Over the whole call the
 * messages form one stream per direction: message m is chunk m % nch of
 * step m / nch. The chunk received at step s is the chunk sent at step
 * s+1, so it is forwarded as soon as it is reduced, while the next chunks
 * are still arriving: sends, receives and the reduction overlap.
 *
 * Reduce-scatter step s sends block r-s-1 and receives block r-s-2 (into a
 * scratch slot, then work[b] = src[b] op slot), so after n-1 steps rank r
 * holds block r. Allgather step s sends block r-s and receives block r-s-1
 * straight into work: no copy of large data anywhere.
 *
 * Compressed (a->wire 16-bit: float32 sum/avg allreduce, [collectives]
 * compression): every message carries 16-bit values, so the ring moves
 * half the bytes. Step 0 sends the rounding of src; each received chunk is
 * widened and added to src in float32 (work), and rounded again only to be
 * forwarded (into w16, a 16-bit image of the vector that the next step's
 * send reads). The owner of a block scales it (avg), rounds it into g16 and
 * keeps the widened value, which is what the allgather hands round (in
 * g16, widened into work as each chunk arrives): every rank ends with the
 * same bits. w16 and g16 are separate so that no receive lands where a
 * send may still be reading. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_internal.h"
#include "transport_call.h"

/* Receives in flight (and scratch slots for the reduce-scatter phase). */
#define RING_DEPTH 4

typedef struct ring {
    dt_comm_t *c;
    const dt_ring_args_t *a;
    size_t esize, nch, total;
    int rs_steps, n, r;
    size_t wes;      /* bytes per element on the wire                     */
    char *w16, *g16; /* compressed: the rs and ag images (count elements) */
} ring_t;

typedef struct chunk {
    int block, reduce, last_rs; /* reduce: rs phase; last_rs: final step */
    size_t off, len;            /* elements, absolute in work/src         */
    int from_src;               /* send reads src (rs step 0)             */
} chunk_t;

/* Chunk k of block b: same cut on every rank, computed from b alone. */
static void chunk_span(const ring_t *g, int b, size_t k, size_t *off,
                       size_t *len)
{
    size_t blen = dt_block_len(g->a->count, g->n, b);
    size_t per = (blen + g->nch - 1) / g->nch;
    size_t lo = k * per < blen ? k * per : blen;
    size_t hi = lo + per < blen ? lo + per : blen;
    *off = dt_block_off(g->a->count, g->n, b) + lo;
    *len = hi - lo;
}

/* What message m carries, seen by the sender (send = 1) or the receiver. */
static void describe(const ring_t *g, size_t m, int send, chunk_t *ch)
{
    int s = (int)(m / g->nch), r = g->r, n = g->n;
    memset(ch, 0, sizeof *ch);
    if (s < g->rs_steps) {
        ch->block = dt_mod(send ? r - s - 1 : r - s - 2, n);
        ch->reduce = 1;
        ch->last_rs = s == g->rs_steps - 1;
        ch->from_src = send && s == 0;
    } else {
        int a = s - g->rs_steps;
        ch->block = dt_mod(send ? r - a : r - a - 1, n);
    }
    chunk_span(g, ch->block, m % g->nch, &ch->off, &ch->len);
}

static dt_status_t post_send(ring_t *g, size_t m, dt_request_t **req)
{
    chunk_t ch;
    describe(g, m, 1, &ch);
    if (g->w16) {
        char *img = (ch.reduce ? g->w16 : g->g16) + ch.off * g->wes;
        if (ch.from_src)
            dt_wire_from_f32(img, (const float *)g->a->src + ch.off, ch.len,
                             g->a->wire);
        return dt_coll_isend(g->c, dt_mod(g->r + 1, g->n), img,
                             ch.len * g->wes, g->a->tag, req);
    }
    const char *base = ch.from_src ? g->a->src : g->a->work;
    return dt_coll_isend(g->c, dt_mod(g->r + 1, g->n),
                         base + ch.off * g->esize, ch.len * g->esize,
                         g->a->tag, req);
}

static dt_status_t post_recv(ring_t *g, size_t m, char *slots,
                             size_t slot_bytes, dt_request_t **req)
{
    chunk_t ch;
    describe(g, m, 0, &ch);
    char *dst = ch.reduce ? slots + (m % RING_DEPTH) * slot_bytes
                : g->w16  ? g->g16 + ch.off * g->wes
                          : (char *)g->a->work + ch.off * g->esize;
    return dt_coll_irecv(g->c, dt_mod(g->r - 1, g->n), dst,
                         ch.len * g->wes, g->a->tag, req);
}

/* Compressed: reduce a received 16-bit chunk (or widen an allgathered
 * one), and round what is forwarded next. */
static dt_status_t finish_recv16(ring_t *g, const chunk_t *ch,
                                 const char *slot)
{
    const dt_ring_args_t *a = g->a;
    float *dst = (float *)a->work + ch->off;
    if (!ch->reduce) {
        dt_wire_to_f32(dst, g->g16 + ch->off * g->wes, ch->len, a->wire);
        return DT_OK;
    }
    dt_wire_add(dst, (const float *)a->src + ch->off, slot, ch->len,
                a->wire);
    if (!ch->last_rs) {
        char *fw = g->w16 + ch->off * g->wes;
        dt_wire_from_f32(fw, dst, ch->len, a->wire);
        if (a->res)
            dt_wire_residual(a->res + ch->off, dst, fw, ch->len, a->wire, 1);
        return DT_OK;
    }
    if (a->op == DT_AVG)
        DT_CHECK(dt_reduce_scale(dst, ch->len, a->t, 1.0 / g->n));
    char *img = g->g16 + ch->off * g->wes;
    dt_wire_from_f32(img, dst, ch->len, a->wire);
    if (a->res) /* the block's final rounding, made up by its owner */
        dt_wire_residual(a->res + ch->off, dst, img, ch->len, a->wire,
                         a->op == DT_AVG ? (float)g->n : 1.0f);
    dt_wire_to_f32(dst, img, ch->len, a->wire);
    return DT_OK;
}

static dt_status_t finish_recv(ring_t *g, size_t m, const char *slots,
                               size_t slot_bytes)
{
    chunk_t ch;
    describe(g, m, 0, &ch);
    const dt_ring_args_t *a = g->a;
    if (g->w16)
        return finish_recv16(g, &ch, slots + (m % RING_DEPTH) * slot_bytes);
    if (!ch.reduce)
        return DT_OK;
    char *dst = (char *)a->work + ch.off * g->esize;
    const char *mine = (const char *)a->src + ch.off * g->esize;
    DT_CHECK(dt_coll_reduce3(dst, mine, slots + (m % RING_DEPTH) * slot_bytes,
                             ch.len, a->t, a->op));
    if (ch.last_rs && a->op == DT_AVG)
        DT_CHECK(dt_reduce_scale(dst, ch.len, a->t, 1.0 / g->n));
    return DT_OK;
}

/* Largest chunk in elements (for the scratch slots). */
static size_t max_chunk(const ring_t *g)
{
    size_t blen = dt_block_len(g->a->count, g->n, 0);
    return (blen + g->nch - 1) / g->nch;
}

dt_status_t dt_coll_ring(dt_comm_t *c, const dt_ring_args_t *a)
{
    ring_t g = {.c = c, .a = a, .n = c->size, .r = c->rank};
    g.esize = dt_dtype_size(a->t);
    int wire = a->wire != DT_FLOAT32 && a->t == DT_FLOAT32 && a->rs && a->ag;
    g.wes = wire ? dt_wire_size(a->wire) : g.esize;
    g.rs_steps = a->rs ? g.n - 1 : 0;
    int steps = g.rs_steps + (a->ag ? g.n - 1 : 0);
    if (steps == 0 || g.esize == 0)
        return DT_OK;
    /* The chunk is counted in wire bytes. */
    size_t block_bytes = dt_block_len(a->count, g.n, 0) * g.wes;
    size_t chunk = dt_coll_chunk_bytes(c);
    g.nch = block_bytes / chunk + (block_bytes % chunk != 0);
    if (g.nch == 0)
        g.nch = 1;
    g.total = (size_t)steps * g.nch;

    size_t slot_bytes = max_chunk(&g) * g.wes;
    size_t slots_len = RING_DEPTH * (slot_bytes ? slot_bytes : 1);
    size_t img_len = wire ? (a->count * g.wes + 31) / 32 * 32 : 0;
    char *slots = NULL;
    if (a->rs)
        DT_CHECK(dt_coll_scratch(c, slots_len + 2 * img_len,
                                 (void **)&slots));
    if (wire) {
        g.w16 = slots + slots_len;
        g.g16 = g.w16 + img_len;
    }
    dt_request_t **sends = calloc(g.total, sizeof *sends);
    if (!sends)
        return DT_ERR_NOMEM;
    dt_request_t *recvs[RING_DEPTH];
    size_t sent = 0, reaped = 0, posted = 0, done = 0;
    dt_status_t st = DT_OK;
    while (done < g.total) {
        /* Message m may leave once message m - nch (its data) is in. */
        while (sent < g.total && (sent < g.nch || sent - g.nch < done)) {
            if ((st = post_send(&g, sent, &sends[sent])) != DT_OK)
                goto out;
            sent++;
        }
        while (posted < g.total && posted < done + RING_DEPTH) {
            if ((st = post_recv(&g, posted, slots, slot_bytes,
                                &recvs[posted % RING_DEPTH])) != DT_OK)
                goto out;
            posted++;
        }
        if ((st = dt_coll_wait(c, &recvs[done % RING_DEPTH], 1)) != DT_OK)
            goto out;
        if ((st = finish_recv(&g, done, slots, slot_bytes)) != DT_OK)
            goto out;
        done++;
        /* Free finished sends as we go (test also drives progress). */
        while (reaped < sent) {
            int fin = 0;
            if ((st = dt_transport_test(c, sends[reaped], &fin)) != DT_OK)
                goto out;
            if (!fin)
                break;
            reaped++;
        }
    }
    st = dt_coll_wait(c, sends + reaped, sent - reaped);
out:
    /* On error the transport has failed the whole job (it names the rank);
     * requests still listed are void and freed by its fini. */
    free(sends);
    return st;
}
