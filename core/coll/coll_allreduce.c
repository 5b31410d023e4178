/* coll_allreduce.c — allreduce: the transport's own when it has one, else
 * through this host's shared segment (coll_host.h: the whole job here, or
 * hierarchically across hosts), else recursive doubling below small_bytes (log2(n) exchanges of the whole
 * vector: least latency) and the pipelined ring above (2(n-1)/n of the
 * data per rank on the wire: best bandwidth). */
#include <string.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_host.h"
#include "coll_internal.h"
#include "transport_call.h"

/* Recursive doubling with the usual fold for n not a power of two: the
 * first 2*rem ranks pair up (even sends to odd), p2 ranks exchange, then
 * the odd ones hand the result back. a op b and b op a give the same bits,
 * so every rank ends with identical values. buf holds the input already.
 *
 * Compressed (wire 16-bit, float32 sum/avg): every message is the 16-bit
 * rounding of the sender's float32 vector. In the exchanges each rank adds
 * the rounding of its own vector to the peer's (round(a) + round(b) is
 * symmetric, so both ends still agree); the fold adds the even rank's
 * rounded vector to the odd rank's float32 one. At the end every rank
 * scales (avg) and rounds the result, so the ranks that get it back through
 * the unfold hold the same bits as the others. */
static dt_status_t recursive_doubling_16(dt_comm_t *c, float *buf,
                                         size_t count, dt_redop_t op,
                                         dt_dtype_t wire, float *res);
static dt_status_t recursive_doubling(dt_comm_t *c, void *buf, size_t count,
                                      dt_dtype_t t, dt_redop_t op,
                                      dt_dtype_t wire, float *res)
{
    const int tag = DT_TAG_ALLREDUCE, r = c->rank, n = c->size;
    if (wire != DT_FLOAT32)
        return recursive_doubling_16(c, buf, count, op, wire, res);
    size_t bytes = count * dt_dtype_size(t);
    int p2 = 1;
    while (p2 * 2 <= n)
        p2 *= 2;
    int rem = n - p2, vr;
    void *tmp;
    DT_CHECK(dt_coll_scratch(c, bytes, &tmp));
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            dt_request_t *q;
            DT_CHECK(dt_coll_isend(c, r + 1, buf, bytes, tag, &q));
            DT_CHECK(dt_coll_wait(c, &q, 1));
            vr = -1;
        } else {
            dt_request_t *q;
            DT_CHECK(dt_coll_irecv(c, r - 1, tmp, bytes, tag, &q));
            DT_CHECK(dt_coll_wait(c, &q, 1));
            DT_CHECK(dt_coll_reduce3(buf, buf, tmp, count, t, op));
            vr = r / 2;
        }
    } else {
        vr = r - rem;
    }
    if (vr >= 0) {
        for (int mask = 1; mask < p2; mask <<= 1) {
            int vp = vr ^ mask, peer = vp < rem ? vp * 2 + 1 : vp + rem;
            DT_CHECK(dt_coll_sendrecv(c, peer, buf, bytes, peer, tmp, bytes,
                                      tag));
            DT_CHECK(dt_coll_reduce3(buf, buf, tmp, count, t, op));
        }
    }
    if (r < 2 * rem) {
        dt_request_t *q;
        if (r % 2)
            DT_CHECK(dt_coll_isend(c, r - 1, buf, bytes, tag, &q));
        else
            DT_CHECK(dt_coll_irecv(c, r + 1, buf, bytes, tag, &q));
        DT_CHECK(dt_coll_wait(c, &q, 1));
    }
    if (op == DT_AVG)
        DT_CHECK(dt_reduce_scale(buf, count, t, 1.0 / n));
    return DT_OK;
}

static dt_status_t recursive_doubling_16(dt_comm_t *c, float *buf,
                                         size_t count, dt_redop_t op,
                                         dt_dtype_t wire, float *res)
{
    const int tag = DT_TAG_ALLREDUCE, r = c->rank, n = c->size;
    size_t wbytes = count * dt_wire_size(wire);
    int p2 = 1;
    while (p2 * 2 <= n)
        p2 *= 2;
    int rem = n - p2, vr;
    char *mine, *peer16;
    DT_CHECK(dt_coll_scratch(c, 2 * wbytes, (void **)&mine));
    peer16 = mine + wbytes;
    if (r < 2 * rem) {
        dt_request_t *q;
        if (r % 2 == 0) {
            dt_wire_from_f32(mine, buf, count, wire);
            DT_CHECK(dt_coll_isend(c, r + 1, mine, wbytes, tag, &q));
            DT_CHECK(dt_coll_wait(c, &q, 1));
            vr = -1;
        } else {
            DT_CHECK(dt_coll_irecv(c, r - 1, peer16, wbytes, tag, &q));
            DT_CHECK(dt_coll_wait(c, &q, 1));
            dt_wire_add(buf, buf, peer16, count, wire);
            vr = r / 2;
        }
    } else {
        vr = r - rem;
    }
    if (vr >= 0) {
        for (int mask = 1; mask < p2; mask <<= 1) {
            int vp = vr ^ mask, peer = vp < rem ? vp * 2 + 1 : vp + rem;
            dt_wire_from_f32(mine, buf, count, wire);
            /* After the exchanges with masks below this one, the mask
             * ranks of an aligned group hold the same vector: the lowest
             * of them makes up for its rounding, once. */
            if (res && (vr & (mask - 1)) == 0)
                dt_wire_residual(res, buf, mine, count, wire, 1);
            DT_CHECK(dt_coll_sendrecv(c, peer, mine, wbytes, peer, peer16,
                                      wbytes, tag));
            dt_wire_to_f32(buf, mine, count, wire);
            dt_wire_add(buf, buf, peer16, count, wire);
        }
        if (op == DT_AVG)
            DT_CHECK(dt_reduce_scale(buf, count, DT_FLOAT32, 1.0 / n));
        dt_wire_from_f32(mine, buf, count, wire);
        if (res && vr == 0) /* the final rounding, the same on every rank:
                               made up once, by virtual rank 0 */
            dt_wire_residual(res, buf, mine, count, wire,
                             op == DT_AVG ? (float)n : 1.0f);
        dt_wire_to_f32(buf, mine, count, wire);
    }
    if (r < 2 * rem) {
        dt_request_t *q;
        if (r % 2)
            DT_CHECK(dt_coll_isend(c, r - 1, mine, wbytes, tag, &q));
        else
            DT_CHECK(dt_coll_irecv(c, r + 1, peer16, wbytes, tag, &q));
        DT_CHECK(dt_coll_wait(c, &q, 1));
        if (r % 2 == 0)
            dt_wire_to_f32(buf, peer16, count, wire);
    }
    return DT_OK;
}

dt_status_t dt_coll_allreduce(dt_comm_t *c, const void *send, void *recv,
                              size_t count, dt_dtype_t t, dt_redop_t op)
{
    dt_coll_begin(c, t, op, 0);
    if (DT_OPS_HAS(c->ops, dt_transport_ops_t, allreduce)) {
        dt_status_t st = dt_transport_allreduce(c, send, recv, count, t, op,
                                                DT_MEM_HOST, NULL);
        if (st != DT_DECLINED)
            return st;
    }
    size_t bytes = count * dt_dtype_size(t);
    if (c->host && dt_coll_reducible(t, op)) {
        if (c->host->whole_job)
            return dt_shm_allreduce(c->host->shm, send, recv, count, t, op);
        /* Below hier_min the two extra rounds through the segment cost
         * more than the network saves (docs/PERFORMANCE.md#hierarchy). */
        if (bytes >= c->hier_bytes)
            return dt_coll_hier_allreduce(c, send, recv, count, t, op);
    }
    if (!dt_coll_reducible(t, op)) {
        dt_error("allreduce: rank %d: %s with op %d is not supported "
                 "(float32, float64, int32; sum, avg, max, min)",
                 c->rank, dt_dtype_name(t), (int)op);
        return DT_ERR_UNSUPPORTED;
    }
    /* One rank: nothing goes on a wire, nothing is compressed. */
    dt_dtype_t wire = c->size > 1 ? dt_coll_wire(c, t, op) : DT_FLOAT32;
    float *res = NULL; /* error feedback's residual for this buffer */
    if (wire != DT_FLOAT32 && c->feedback && count) {
        /* This rank's contribution becomes recv, rounded, with the
         * residual of the last call on recv carried in. The thresholds
         * below stay those of the uncompressed size (the byte count the
         * caller passed), as on every rank. */
        if (send != recv)
            memcpy(recv, send, bytes);
        DT_CHECK(dt_coll_feedback(c, recv, count, wire, &res));
        send = recv;
    }
    if (c->size == 1 || bytes < dt_coll_small_bytes(c)) {
        if (send != recv && bytes)
            memcpy(recv, send, bytes);
        if (c->size == 1 || count == 0)
            return DT_OK; /* the average of one rank is its value */
        return recursive_doubling(c, recv, count, t, op, wire, res);
    }
    if (bytes < dt_coll_ring_bytes(c))
        return dt_coll_halving(c, send, recv, count, t, op, wire, res);
    dt_ring_args_t a = {.src = send, .work = recv, .count = count, .t = t,
                        .op = op, .rs = 1, .ag = 1,
                        .tag = DT_TAG_ALLREDUCE, .wire = wire,
                        .res = res};
    return dt_coll_ring(c, &a);
}
