/* coll_config.c — the collectives' tunables, section [collectives]: they
 * hold for every transport that uses the core's algorithms.
 *
 *   [collectives]
 *   allreduce_small = 256K  allreduce (and broadcast) below this many bytes
 *                           use recursive doubling / a binomial tree, at or
 *                           above it halving/doubling or the ring / chain
 *   allreduce_ring = 0      allreduce from this size on: the ring; between
 *                           allreduce_small and it: recursive halving and
 *                           doubling; 0: by size and number of ranks
 *   ring_chunk = 512K       pipelining unit of the ring, the halving
 *                           exchanges and the chain
 *   shm = auto              ranks of one host through shared memory
 *   shm_chunk = 256K        (coll_hosts.c); off: always the transport
 *   shm_spin = 200us
 *   hier_min = 512K         across hosts: hierarchical allreduce from this
 *                           size on, flat below
 *   compression = none      bf16 | fp16: float32 sum/avg allreduce goes
 *                           over the transport in 16 bits, reduced in 32
 *                           (coll_half.c; docs/COLLECTIVES.md#compression)
 *   compression_feedback = no  yes: error feedback per buffer
 *
 * Environment: DT_COLLECTIVES_<KEY> (e.g. DT_COLLECTIVES_ALLREDUCE_SMALL).
 * Defaults measured on loopback TCP (docs/PERFORMANCE.md#allreduce_small,
 * #allreduce_ring, #ring_chunk). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <dt/config.h>
#include <dt/log.h>
#include "coll.h"
#include "coll_host.h"
#include "coll_internal.h"

const dt_key_spec_t dt_coll_keys[] = {
    {"allreduce_small", DT_KEY_SIZE, "256K",
     "allreduce/broadcast below this size: latency-optimal algorithms "
     "(recursive doubling, binomial tree); from it on: pipelined ring/chain"},
    {"allreduce_ring", DT_KEY_SIZE, "0",
     "allreduce from this size on: the pipelined ring; between "
     "allreduce_small and it: recursive halving/doubling (Rabenseifner); "
     "0: chosen by size and number of ranks (measured)"},
    {"ring_chunk", DT_KEY_SIZE, "512K",
     "pipelining chunk of the ring allreduce and the chain broadcast"},
    {"shm", DT_KEY_STRING, "auto",
     "auto: the collectives of ranks on one host go through a shared-"
     "memory segment (the whole job on one host: every collective; hosts "
     "of equal rank counts: a hierarchical allreduce); off: always the "
     "transport"},
    {"hier_min", DT_KEY_SIZE, "512K",
     "a job across hosts runs allreduce hierarchically (shm = auto) from "
     "this size on; below it, the flat algorithms over the transport "
     "(measured: docs/PERFORMANCE.md#hierarchy)"},
    {"shm_chunk", DT_KEY_SIZE, "256K",
     "bytes per rank and round through the shared segment (4K-64M; the "
     "segment holds 2 x 4 x shm_chunk per rank)"},
    {"shm_spin", DT_KEY_DURATION, "200us",
     "how long a rank waiting on the shared segment polls before it "
     "sleeps on a futex"},
    {"compression", DT_KEY_STRING, "none",
     "none | bf16 | fp16: float32 sum/avg allreduce over the transport "
     "(ring, halving, recursive doubling, the hierarchy's cross-host "
     "step) sends 16-bit values and reduces in float32; within a host "
     "through shared memory it stays float32. fp16 saturates at +-65504"},
    {"compression_feedback", DT_KEY_BOOL, "no",
     "with compression: error feedback, the rounding error of this rank's "
     "contribution added to the next allreduce of the same buffer "
     "(address and count); costs 4 bytes per element of each buffer"},
    {NULL, 0, NULL, NULL}};

/* "none" | "bf16" | "fp16" (also bfloat16, float16, half, off). */
dt_status_t dt_coll_parse_compression(const char *s, dt_dtype_t *out)
{
    if (!strcmp(s, "none") || !strcmp(s, "off") || !strcmp(s, "no") ||
        !*s)
        *out = DT_FLOAT32;
    else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16"))
        *out = DT_BFLOAT16;
    else if (!strcmp(s, "fp16") || !strcmp(s, "float16") ||
             !strcmp(s, "half"))
        *out = DT_FLOAT16;
    else {
        dt_error("[collectives] compression = %s: expected none, bf16 or "
                 "fp16 (also bfloat16, float16, half, off)", s);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

/* Rank 0 says what compression does in this job. It applies where a
 * float32 allreduce crosses the transport: with [collectives] shm = auto
 * the ranks of one host reduce host memory through shared memory in
 * float32 (coll_hosts.c), so a job on one host compresses nothing unless
 * the transport reduces natively (nccl). Hosts are not known yet here:
 * one host is the launcher's DT_LOCAL_SIZE equal to the world. */
static void say_compression(const dt_comm_t *c, const dt_config_t *cfg)
{
    /* [train] mode = async sends gradients to the parameter servers, not
     * through allreduce: dtctl already said compression does not apply
     * (and the world counts the servers). */
    const char *mode = dt_config_get(cfg, "train", "mode");
    if (c->rank != 0 || (mode && strcasecmp(mode, "async") == 0))
        return;
    const char *name = c->wire == DT_BFLOAT16 ? "bf16" : "fp16";
    const char *fb = c->feedback ? " with error feedback" : "";
    const char *shm = "auto", *local = getenv("DT_LOCAL_SIZE");
    if (dt_config_get_string(cfg, "collectives", "shm", &shm) != DT_OK)
        shm = "auto";
    bool off = strcasecmp(shm, "off") == 0;
    bool native = DT_OPS_HAS(c->ops, dt_transport_ops_t, allreduce);
    bool one_host = local && atoi(local) == c->size;
    if (!off && one_host && !native)
        dt_warn("collectives: compression %s has no effect in this job: "
                "its %d ranks are on one host, where [collectives] shm = "
                "auto reduces through shared memory in float32 (unless the "
                "transport refuses shared memory); shm = off sends the "
                "allreduce over the transport in 16 bits", name, c->size);
    else
        dt_info("collectives: compression %s%s: float32 sum/avg allreduce "
                "over the transport in 16 bits, reduced in float32%s", name,
                fb, off || native ? "" : " (between hosts; within a host "
                "through shared memory it stays float32)");
}

typedef struct coll_keys {
    uint64_t small, ring, chunk, hier;
    dt_dtype_t wire;
    bool feedback;
} coll_keys_t;

/* The keys dt_comm_configure applies, each error with its origin. */
static dt_status_t read_keys(const dt_config_t *cfg, coll_keys_t *k)
{
    DT_CHECK(dt_config_get_size(cfg, "collectives", "allreduce_small",
                                &k->small));
    DT_CHECK(dt_config_get_size(cfg, "collectives", "allreduce_ring",
                                &k->ring));
    DT_CHECK(dt_config_get_size(cfg, "collectives", "ring_chunk",
                                &k->chunk));
    DT_CHECK(dt_config_get_size(cfg, "collectives", "hier_min", &k->hier));
    const char *where = "default";
    if (k->chunk == 0) {
        dt_config_origin(cfg, "collectives", "ring_chunk", NULL, &where);
        dt_error("%s: [collectives] ring_chunk must be at least 1 byte "
                 "(default 512K)",
                 where);
        return DT_ERR_CONFIG;
    }
    const char *comp = NULL;
    DT_CHECK(dt_config_get_string(cfg, "collectives", "compression", &comp));
    if (dt_coll_parse_compression(comp ? comp : "none", &k->wire) != DT_OK) {
        dt_config_origin(cfg, "collectives", "compression", NULL, &where);
        dt_error("[collectives] compression is set by %s", where);
        return DT_ERR_CONFIG;
    }
    return dt_config_get_bool(cfg, "collectives", "compression_feedback",
                              &k->feedback);
}

dt_status_t dt_coll_check_config(const dt_config_t *cfg)
{
    coll_keys_t k;
    int on;
    dt_shm_args_t sa;
    DT_CHECK(read_keys(cfg, &k));
    return dt_coll_shm_keys(cfg, &on, &sa);
}

dt_status_t dt_comm_configure(dt_comm_t *c, const dt_config_t *cfg)
{
    coll_keys_t k;
    DT_CHECK(read_keys(cfg, &k));
    /* 0 in the comm means "default": keep "always the ring" expressible. */
    c->small_bytes = k.small ? (size_t)k.small : 1;
    c->ring_bytes = (size_t)k.ring;
    c->chunk_bytes = (size_t)k.chunk;
    c->hier_bytes = (size_t)k.hier;
    c->wire = k.wire;
    c->feedback = k.feedback && c->wire != DT_FLOAT32;
    if (c->wire != DT_FLOAT32)
        say_compression(c, cfg);
    return DT_OK;
}
