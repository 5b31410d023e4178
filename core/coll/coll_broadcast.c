/* coll_broadcast.c — broadcast: a binomial tree for small buffers (log2(n)
 * hops), a pipelined chain for large ones (each rank forwards chunk k
 * while chunk k+1 arrives, so the time approaches one buffer's transfer
 * however many ranks there are). Data lands directly in buf. */
#include <stdlib.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_host.h"
#include "coll_internal.h"
#include "transport_call.h"

#define CHAIN_DEPTH 4 /* receives in flight per rank */

static int real_rank(int vr, int root, int n) { return (vr + root) % n; }

static dt_status_t binomial(dt_comm_t *c, void *buf, size_t bytes, int root)
{
    const int n = c->size, vr = dt_mod(c->rank - root, n);
    int mask = 1;
    while (mask < n) {
        if (vr & mask) {
            dt_request_t *q;
            DT_CHECK(dt_coll_irecv(c, real_rank(vr - mask, root, n), buf,
                                   bytes, DT_TAG_BROADCAST, &q));
            DT_CHECK(dt_coll_wait(c, &q, 1));
            break;
        }
        mask <<= 1;
    }
    dt_request_t *reqs[32];
    size_t nreq = 0;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < n)
            DT_CHECK(dt_coll_isend(c, real_rank(vr + mask, root, n), buf,
                                   bytes, DT_TAG_BROADCAST, &reqs[nreq++]));
    return dt_coll_wait(c, reqs, nreq);
}

static dt_status_t chain(dt_comm_t *c, char *buf, size_t bytes, int root)
{
    const int n = c->size, vr = dt_mod(c->rank - root, n);
    const int prev = real_rank(vr - 1 + n, root, n);
    const int next = real_rank(vr + 1, root, n);
    const int has_next = vr + 1 < n, has_prev = vr > 0;
    size_t chunk = dt_coll_chunk_bytes(c);
    size_t nch = bytes / chunk + (bytes % chunk != 0);
    dt_request_t **sends = calloc(nch ? nch : 1, sizeof *sends);
    dt_request_t *recvs[CHAIN_DEPTH];
    if (!sends)
        return DT_ERR_NOMEM;
    dt_status_t st = DT_OK;
    size_t posted = 0, done = 0, sent = 0;
    while (sent < nch) {
        while (has_prev && posted < nch && posted < done + CHAIN_DEPTH) {
            size_t off = posted * chunk, len = bytes - off;
            if (len > chunk)
                len = chunk;
            st = dt_coll_irecv(c, prev, buf + off, len, DT_TAG_BROADCAST,
                               &recvs[posted % CHAIN_DEPTH]);
            if (st != DT_OK)
                goto out;
            posted++;
        }
        if (has_prev) {
            st = dt_coll_wait(c, &recvs[done % CHAIN_DEPTH], 1);
            if (st != DT_OK)
                goto out;
            done++;
        } else {
            done = nch;
        }
        for (; sent < done; sent++) {
            size_t off = sent * chunk, len = bytes - off;
            if (len > chunk)
                len = chunk;
            if (has_next &&
                (st = dt_coll_isend(c, next, buf + off, len,
                                    DT_TAG_BROADCAST, &sends[sent])) != DT_OK)
                goto out;
        }
    }
    if (has_next)
        st = dt_coll_wait(c, sends, nch);
out:
    free(sends);
    return st;
}

dt_status_t dt_coll_broadcast(dt_comm_t *c, void *buf, size_t count,
                              dt_dtype_t t, int root)
{
    dt_coll_begin(c, t, DT_SUM, root);
    if (root < 0 || root >= c->size) {
        dt_error("broadcast: rank %d: root %d is not a rank (0..%d)",
                 c->rank, root, c->size - 1);
        return DT_ERR_INVALID;
    }
    if (dt_dtype_size(t) == 0) {
        dt_error("broadcast: rank %d: invalid element type %d", c->rank,
                 (int)t);
        return DT_ERR_INVALID;
    }
    if (DT_OPS_HAS(c->ops, dt_transport_ops_t, broadcast)) {
        dt_status_t st = dt_transport_broadcast(c, buf, count, t, root);
        if (st != DT_DECLINED)
            return st;
    }
    /* Through the segment even when empty: the ranks compare their calls
     * there (coll/shm/shm_coll.h). */
    if (dt_coll_host_whole(c))
        return dt_shm_broadcast(c->host->shm, buf, count, t, root);
    size_t bytes = count * dt_dtype_size(t);
    if (c->size == 1 || bytes == 0)
        return DT_OK;
    if (bytes < dt_coll_small_bytes(c))
        return binomial(c, buf, bytes, root);
    return chain(c, buf, bytes, root);
}
