/* coll_internal.h — helpers shared by the coll_*.c files: point-to-point
 * wrappers over the transport, block layout, scratch space, the ring. */
#ifndef DT_COLL_INTERNAL_H
#define DT_COLL_INTERNAL_H

#include <stddef.h>
#include "coll.h"

/* One tag per collective (DT_TAG_ALLREDUCE ...: dt/plugin.h, where a
 * transport learns what they promise): messages of different collectives
 * never match each other even if a rank runs ahead into the next call. */

/* Defaults when the comm's fields are 0 (measured: docs/PERFORMANCE.md,
 * #allreduce_small, #allreduce_ring, #ring_chunk). */
#define DT_COLL_DEFAULT_SMALL_BYTES ((size_t)256 * 1024)
#define DT_COLL_DEFAULT_CHUNK_BYTES ((size_t)512 * 1024)
/* Allreduce from this size on: the ring (below: halving); see
 * dt_coll_ring_bytes for the choice by number of ranks. */
#define DT_COLL_DEFAULT_RING_BYTES ((size_t)32 << 20)
#define DT_COLL_DEFAULT_RING_BYTES_3 ((size_t)128 << 20)
#define DT_COLL_DEFAULT_RING_BYTES_ODD ((size_t)1 << 20)

/* 1 when the type/op pair has a reduction kernel. */
int dt_coll_reducible(dt_dtype_t t, dt_redop_t op);
/* dst[i] = a[i] op b[i]; dst may equal a. DT_AVG sums. */
dt_status_t dt_coll_reduce3(void *dst, const void *a, const void *b, size_t n,
                            dt_dtype_t t, dt_redop_t op);

/* A collective starts: its type, op and root (0 where it has none) go
 * into the tags of its messages (dt/plugin.h, DT_COLL_TAG_DETAIL). */
void dt_coll_begin(dt_comm_t *c, dt_dtype_t t, dt_redop_t op, int root);

/* Point-to-point on host memory; wait uses the comm's timeout. The core's
 * kind tags get the running call's detail (dt_coll_begin). */
dt_status_t dt_coll_isend(dt_comm_t *c, int peer, const void *buf,
                          size_t len, int tag, dt_request_t **req);
dt_status_t dt_coll_irecv(dt_comm_t *c, int peer, void *buf, size_t len,
                          int tag, dt_request_t **req);
dt_status_t dt_coll_wait(dt_comm_t *c, dt_request_t **reqs, size_t n);
/* Send to one peer and receive from another at the same time. */
dt_status_t dt_coll_sendrecv(dt_comm_t *c, int to, const void *sbuf,
                             size_t slen, int from, void *rbuf, size_t rlen,
                             int tag);

/* A scratch buffer of at least len bytes, kept in the comm for reuse. */
dt_status_t dt_coll_scratch(dt_comm_t *c, size_t len, void **out);
size_t dt_coll_small_bytes(const dt_comm_t *c);
size_t dt_coll_chunk_bytes(const dt_comm_t *c);

/* Block b of count elements split over n ranks: sizes differ by at most 1. */
static inline size_t dt_block_off(size_t count, int n, int b)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n;
    return (size_t)b * base + ((size_t)b < rem ? (size_t)b : rem);
}
static inline size_t dt_block_len(size_t count, int n, int b)
{
    return count / (size_t)n + ((size_t)b < count % (size_t)n ? 1 : 0);
}
static inline int dt_mod(int a, int n) { return ((a % n) + n) % n; }

/* The pipelined ring over n blocks of `work` (layout dt_block_off):
 * - reduce-scatter phase (rs): afterwards rank r holds the reduction of
 *   block r in work (scaled by 1/size for DT_AVG); step 0 reads src.
 * - allgather phase (ag): block r of work goes round; afterwards work holds
 *   every block.
 * Each block is cut into chunks; a received chunk is reduced and forwarded
 * while later chunks are still on the wire. src may equal work. */
typedef struct dt_ring_args {
    const void *src;
    void *work;
    size_t count;
    dt_dtype_t t;
    dt_redop_t op;
    int rs, ag;
    int tag;
    dt_dtype_t wire; /* DT_FLOAT32, or the 16-bit wire type (rs and ag,
                        float32 sum/avg only): coll_ring.c */
    float *res;      /* compressed with feedback: the residual (count)  */
} dt_ring_args_t;
dt_status_t dt_coll_ring(dt_comm_t *c, const dt_ring_args_t *a);

/* Rabenseifner's allreduce (coll_halving.c) for n >= 2 ranks, count >= 1:
 * reduce-scatter by recursive halving, allgather by recursive doubling.
 * send may equal recv. */
dt_status_t dt_coll_halving(dt_comm_t *c, const void *send, void *recv,
                            size_t count, dt_dtype_t t, dt_redop_t op,
                            dt_dtype_t wire, float *res);
/* The size from which allreduce uses the ring (below: halving, down to
 * small_bytes); 0 when the ring is used from small_bytes on. */
size_t dt_coll_ring_bytes(const dt_comm_t *c);

/* Compressed float32 allreduce ([collectives] compression; coll_half.c).
 * The wire type of an allreduce: DT_BFLOAT16 or DT_FLOAT16 when the comm
 * compresses and the call is float32 sum/avg, else DT_FLOAT32 (as is). */
static inline dt_dtype_t dt_coll_wire(const dt_comm_t *c, dt_dtype_t t,
                                      dt_redop_t op)
{
    return t == DT_FLOAT32 && (op == DT_SUM || op == DT_AVG) ? c->wire
                                                             : DT_FLOAT32;
}
/* Bytes per element on the wire: 2 for the 16-bit types, else 4. */
size_t dt_wire_size(dt_dtype_t wire);
/* Round n floats to the wire type (nearest even; fp16 saturates at
 * ±65504) / widen them back / dst = a + widen(b) (dst may equal a). */
void dt_wire_from_f32(void *dst, const float *src, size_t n, dt_dtype_t wire);
void dt_wire_to_f32(float *dst, const void *src, size_t n, dt_dtype_t wire);
void dt_wire_add(float *dst, const float *a, const void *b, size_t n,
                 dt_dtype_t wire);
/* Tests: 1 makes fp16 use the portable loops even where F16C exists. */
void dt_wire_set_portable(int on);
/* x = widen(round(x)) in place. */
void dt_wire_round_f32(float *x, size_t n, dt_dtype_t wire);
/* Error feedback: buf += the residual kept for (buf, count), then buf is
 * rounded to the wire type and the new residual (what rounding lost) is
 * kept for the next call on the same buffer; *res (count floats, indexed
 * like buf) is where the algorithm adds the error of every other rounding
 * this rank does (partial sums it forwards, the final value of a block it
 * owns), so that the next call's contribution makes up for all of it.
 * *res is NULL when the table is full (no feedback for this buffer). */
dt_status_t dt_coll_feedback(dt_comm_t *c, float *buf, size_t count,
                             dt_dtype_t wire, float **res);
/* res[i] += (x[i] - widen(h[i])) * f: the error of rounding x to h, in the
 * units of this rank's next contribution (f = n for an average). */
void dt_wire_residual(float *res, const float *x, const void *h, size_t n,
                      dt_dtype_t wire, float f);
void dt_coll_feedback_free(dt_comm_t *c);

#endif /* DT_COLL_INTERNAL_H */
