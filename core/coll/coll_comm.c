/* coll_comm.c — the communicator's plumbing: point-to-point wrappers,
 * scratch space and the tunables' defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "coll.h"
#include "coll_internal.h"
#include "transport_call.h"

const char *dt_coll_tag_text(int tag, char *buf, size_t len)
{
    static const char *const ops[] = {"sum", "avg", "max", "min"};
    const char *name = dt_coll_tag_name(tag);
    unsigned rel = (unsigned)tag - (unsigned)DT_TAG_ALLREDUCE;
    unsigned kind = rel % DT_COLL_TAG_KINDS, d = rel / DT_COLL_TAG_KINDS;
    const char *type = dt_dtype_name((dt_dtype_t)(d & 7u));
    unsigned op = (d >> 3) & 7u;
    if (!buf || !len)
        return buf;
    if (!name)
        snprintf(buf, len, "%s", "");
    else if (kind == DT_TAG_BARRIER - DT_TAG_ALLREDUCE)
        snprintf(buf, len, "%s", name);
    else if (kind == DT_TAG_BROADCAST - DT_TAG_ALLREDUCE)
        snprintf(buf, len, "%s (%s, root %u)", name, type, d >> 6);
    else if (kind == DT_TAG_ALLGATHER - DT_TAG_ALLREDUCE)
        snprintf(buf, len, "%s (%s)", name, type);
    else
        snprintf(buf, len, "%s (%s, %s)", name, type, op < 4 ? ops[op] : "?");
    return buf;
}

void dt_coll_begin(dt_comm_t *c, dt_dtype_t t, dt_redop_t op, int root)
{
    c->call = DT_COLL_TAG_DETAIL(t, op, root);
}

/* A kind tag of the core's (DT_TAG_ALLREDUCE ...) with what the running
 * call said (dt_coll_begin): a peer in another call is seen, not mixed
 * in. Other tags (the parameter servers') as they are. */
static int call_tag(const dt_comm_t *c, int tag)
{
    unsigned kind = (unsigned)tag - (unsigned)DT_TAG_ALLREDUCE;
    return kind < DT_COLL_TAG_KINDS
               ? (int)((unsigned)tag + DT_COLL_TAG_KINDS * c->call)
               : tag;
}

dt_status_t dt_coll_isend(dt_comm_t *c, int peer, const void *buf,
                          size_t len, int tag, dt_request_t **req)
{
    return dt_transport_isend(c, peer, buf, len, DT_MEM_HOST,
                              call_tag(c, tag), req);
}

dt_status_t dt_coll_irecv(dt_comm_t *c, int peer, void *buf, size_t len,
                          int tag, dt_request_t **req)
{
    return dt_transport_irecv(c, peer, buf, len, DT_MEM_HOST,
                              call_tag(c, tag), req);
}

dt_status_t dt_coll_wait(dt_comm_t *c, dt_request_t **reqs, size_t n)
{
    if (n == 0)
        return DT_OK;
    return dt_transport_wait(c, reqs, n, c->timeout_ms);
}

dt_status_t dt_coll_sendrecv(dt_comm_t *c, int to, const void *sbuf,
                             size_t slen, int from, void *rbuf, size_t rlen,
                             int tag)
{
    dt_request_t *r[2];
    /* Receive first: a transport may then land the data in place at once. */
    DT_CHECK(dt_coll_irecv(c, from, rbuf, rlen, tag, &r[0]));
    DT_CHECK(dt_coll_isend(c, to, sbuf, slen, tag, &r[1]));
    return dt_coll_wait(c, r, 2);
}

dt_status_t dt_coll_scratch(dt_comm_t *c, size_t len, void **out)
{
    if (len > c->scratch_len || !c->scratch) {
        void *p = realloc(c->scratch, len ? len : 1);
        if (!p) {
            dt_error("collectives: rank %d: cannot allocate %zu bytes of "
                     "scratch memory",
                     c->rank, len);
            return DT_ERR_NOMEM;
        }
        c->scratch = p;
        c->scratch_len = len;
    }
    *out = c->scratch;
    return DT_OK;
}

size_t dt_coll_small_bytes(const dt_comm_t *c)
{
    return c->small_bytes ? c->small_bytes : DT_COLL_DEFAULT_SMALL_BYTES;
}

/* Unset: by the number of ranks (measured on loopback TCP with ranks
 * outnumbering cores, docs/PERFORMANCE.md#allreduce_ring). With 2 ranks
 * both algorithms take 2 rounds and the ring pipelines across them: always
 * the ring. With 3 and 4, halving's 2 log2 rounds beat the ring's 2(n-1) up to tens of
 * MiB (3: up to at least 64 MiB, where the folded rank idles and leaves
 * the 2 cores to the other two). Powers of two beyond 4 (not measured
 * here) keep the 4-rank threshold; other counts pay for the fold with a
 * whole extra vector: the ring from 1 MiB. */
size_t dt_coll_ring_bytes(const dt_comm_t *c)
{
    if (c->ring_bytes)
        return c->ring_bytes;
    int pow2 = (c->size & (c->size - 1)) == 0;
    if (c->size <= 2)
        return 0;
    if (c->size == 3)
        return DT_COLL_DEFAULT_RING_BYTES_3;
    if (pow2)
        return DT_COLL_DEFAULT_RING_BYTES;
    return DT_COLL_DEFAULT_RING_BYTES_ODD;
}

size_t dt_coll_chunk_bytes(const dt_comm_t *c)
{
    return c->chunk_bytes ? c->chunk_bytes : DT_COLL_DEFAULT_CHUNK_BYTES;
}

void dt_comm_query_caps(dt_comm_t *c, const char *transport)
{
    c->caps = DT_OPS_HAS(c->ops, dt_transport_ops_t, caps)
                  ? dt_transport_caps(c)
                  : 0;
    c->caps_asked = 1;
    char native[96] = "";
#define NATIVE(f)                                                             \
    if (DT_OPS_HAS(c->ops, dt_transport_ops_t, f))                           \
        snprintf(native + strlen(native), sizeof native - strlen(native),     \
                 "%s%s", *native ? ", " : "", #f);
    NATIVE(allreduce) NATIVE(broadcast) NATIVE(allgather)
    NATIVE(reduce_scatter) NATIVE(barrier)
#undef NATIVE
    dt_debug("transport %s: caps 0x%x (%s); native collectives: %s",
             transport ? transport : "?", (unsigned)c->caps,
             c->caps & DT_CAP_CUDA_MEM ? "host and CUDA memory"
                                       : "host memory only",
             *native ? native : "none");
}

void dt_comm_release(dt_comm_t *c)
{
    if (!c)
        return;
    dt_comm_release_hosts(c);
    dt_coll_feedback_free(c);
    free(c->scratch);
    c->scratch = NULL;
    c->scratch_len = 0;
    free(c->stage);
    c->stage = NULL;
    c->stage_len = 0;
}
