/* nccl_comm.c — the communicator: rank 0's ncclUniqueId through the store,
 * non-blocking ncclCommInitRankConfig, and the bounded waits every other
 * call ends in.
 *
 * NCCL itself never says which peer is gone: a collective with a dead peer
 * just never finishes. So a wait that sees nothing finish for the timeout
 * aborts the communicator and asks the store: every stuck rank writes
 * "nccl/E/stuck/R", and the ranks that do not write it within a short
 * grace period are the dead or hung ones, named in the error. */
#include <poll.h>
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "nccl_tp.h"

/* Between polls: yield a few times (small collectives finish in
 * microseconds), then sleep, growing to 1 ms. Never a hot spin. */
void nccl_nap(int *round)
{
    if (*round < 8) {
        sched_yield();
    } else {
        int us = *round < 64 ? 50 : 1000;
        struct timespec ts = {0, us * 1000L};
        nanosleep(&ts, NULL);
    }
    (*round)++;
}

dt_status_t nccl_enter(nccl_ctx_t *c)
{
    if (c->failed != DT_OK)
        return c->failed;
    return nccl_cuda_check(c, cudaSetDevice(c->device), "cudaSetDevice");
}

/* Geometric growth: a buffer is replaced O(log size) times over a job,
 * not on every call that is a little larger. */
static size_t grown(size_t have, size_t need)
{
    size_t cap = have > 0 ? have : (size_t)1 << 20;
    while (cap < need)
        cap *= 2;
    return cap;
}

dt_status_t nccl_grow_device(nccl_ctx_t *c, void **buf, size_t *len,
                             size_t need, const char *what)
{
    if (need <= *len && *buf)
        return DT_OK;
    size_t cap = grown(*len, need);
    if (*buf)
        cudaFree(*buf);
    *buf = NULL;
    *len = 0;
    DT_CHECK(nccl_cuda_check(c, cudaMalloc(buf, cap), what));
    *len = cap;
    return DT_OK;
}

dt_status_t nccl_grow_pinned(nccl_ctx_t *c, void **buf, size_t *len,
                             size_t need, const char *what)
{
    if (need <= *len && *buf)
        return DT_OK;
    size_t cap = grown(*len, need);
    if (*buf)
        cudaFreeHost(*buf);
    *buf = NULL;
    *len = 0;
    DT_CHECK(nccl_cuda_check(c, cudaMallocHost(buf, cap), what));
    *len = cap;
    return DT_OK;
}

dt_status_t nccl_cuda_check(nccl_ctx_t *c, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return DT_OK;
    dt_error("nccl: rank %d: %s failed on GPU %d: %s", c->rank, what,
             c->device, cudaGetErrorString(e));
    if (c->failed == DT_OK)
        c->failed = DT_ERR_IO;
    return DT_ERR_IO;
}

/* Which ranks did not report being stuck: they are the culprits. 0 when
 * the store did not take this rank's own report within
 * DT_STORE_FAILURE_WAIT_S (a stopped dtctl, this host cut off from
 * dtctl's): then nothing more is asked of it. Each request once waited
 * the store client's 60 s, the reads another 5 s of slack each: a rank
 * cut off from dtctl lingered minutes after its timeout, holding its GPU.
 * The reads share one bound, DT_STORE_FAILURE_WAIT_S past the grace (and
 * the server's slack for the first, which waits): a store that stops
 * after it took the report costs that, not 60 s per rank; 0 then too. */
static int name_missing(nccl_ctx_t *c, const char *phase, char *out,
                        size_t len)
{
    char key[96];
    size_t off = 0;
    out[0] = '\0';
    if (!c->store)
        return 0;
    snprintf(key, sizeof key, "nccl/%lld/%s/%d", c->epoch, phase, c->rank);
    dt_status_t st = dt_store_set_bounded(c->store, key, "1", 1,
                                          DT_STORE_FAILURE_WAIT_S);
    if (st != DT_OK) {
        dt_warn("nccl: rank %d: the rendezvous store did not answer within "
                "%.0f s (%s): is dtctl stopped or its host unreachable? "
                "Reporting this rank's own view of the failure",
                c->rank, DT_STORE_FAILURE_WAIT_S, dt_status_str(st));
        return 0;
    }
    double grace = c->timeout / 4 < 5 ? c->timeout / 4 : 5;
    double until = dt_clock_now() + grace;
    double give_up = until + DT_STORE_FAILURE_WAIT_S;
    for (int r = 0; r < c->size && off + 16 < len; r++) {
        void *v = NULL;
        size_t vl = 0;
        double now = dt_clock_now();
        double wait = until > now ? until - now : 0; /* then a look */
        double io = give_up - now - wait;
        snprintf(key, sizeof key, "nccl/%lld/%s/%d", c->epoch, phase, r);
        st = io > 0 ? dt_store_get_bounded(c->store, key, wait, io, &v, &vl)
                    : DT_ERR_TIMEOUT;
        if (st == DT_OK) {
            free(v);
            continue;
        }
        if (st != DT_ERR_TIMEOUT || !(io > 0) ||
            dt_clock_now() >= give_up) {
            dt_warn("nccl: rank %d: the rendezvous store stopped answering "
                    "(%s): is dtctl stopped or its host unreachable? "
                    "Reporting this rank's own view of the failure",
                    c->rank, dt_status_str(st));
            return 0;
        }
        off += (size_t)snprintf(out + off, len - off, " %d", r);
    }
    return 1;
}

dt_status_t nccl_give_up(nccl_ctx_t *c, const char *what, const char *phase,
                           ncclResult_t r)
{
    char who[256];
    c->failed = DT_ERR_PEER;
    if (r != ncclSuccess && r != ncclInProgress) {
        dt_error("nccl: rank %d: %s failed: %s (%s); the job cannot "
                 "continue",
                 c->rank, what, ncclGetErrorString(r),
                 ncclGetLastError(c->comm));
    } else if (!name_missing(c, phase, who, sizeof who)) {
        dt_error("nccl: rank %d: %s made no progress for %.0f s: some rank "
                 "stopped answering (exited, crashed or hung), or the ranks "
                 "called different collectives; which one is unknown "
                 "without the store; the job cannot continue",
                 c->rank, what, c->timeout);
        c->failed = DT_ERR_TIMEOUT;
    } else {
        if (who[0])
            dt_error("nccl: rank %d: %s made no progress for %.0f s: rank(s)"
                     "%s stopped answering (exited, crashed or hung); the "
                     "job cannot continue",
                     c->rank, what, c->timeout, who);
        else
            dt_error("nccl: rank %d: %s made no progress for %.0f s although "
                     "every rank is waiting: the ranks called different "
                     "collectives, or the network between them is down "
                     "(NCCL_DEBUG=INFO, [transport.nccl] debug, tells more)",
                     c->rank, what, c->timeout);
        c->failed = DT_ERR_TIMEOUT;
    }
    if (c->comm) {
        ncclCommAbort(c->comm); /* frees the GPU from the hung kernels */
        c->comm = NULL;
    }
    return c->failed;
}

/* Wait for the communicator's pending call (ncclInProgress) to settle. */
static dt_status_t settle(nccl_ctx_t *c, const char *what, const char *phase)
{
    double deadline = dt_clock_now() + c->timeout;
    int round = 0;
    ncclResult_t r = ncclInProgress;
    while (c->comm && ncclCommGetAsyncError(c->comm, &r) == ncclSuccess &&
           r == ncclInProgress) {
        if (dt_clock_now() > deadline)
            return nccl_give_up(c, what, phase, r);
        nccl_nap(&round);
    }
    return r == ncclSuccess ? DT_OK : nccl_give_up(c, what, phase, r);
}

dt_status_t nccl_check(nccl_ctx_t *c, ncclResult_t r, const char *what)
{
    if (r == ncclSuccess)
        return DT_OK;
    if (r == ncclInProgress)
        return settle(c, what, "stuck");
    return nccl_give_up(c, what, "stuck", r);
}

dt_status_t nccl_sync(nccl_ctx_t *c, cudaStream_t s, const char *what)
{
    if (c->failed != DT_OK)
        return c->failed;
    double deadline = dt_clock_now() + c->timeout;
    int round = 0;
    for (;;) {
        cudaError_t e = cudaStreamQuery(s);
        if (e == cudaSuccess)
            return DT_OK;
        if (e != cudaErrorNotReady)
            return nccl_cuda_check(c, e, what);
        ncclResult_t r = ncclSuccess;
        ncclCommGetAsyncError(c->comm, &r);
        if (r != ncclSuccess && r != ncclInProgress)
            return nccl_give_up(c, what, "stuck", r);
        if (dt_clock_now() > deadline)
            return nccl_give_up(c, what, "stuck", r);
        nccl_nap(&round);
    }
}

static dt_status_t share_id(nccl_ctx_t *c, ncclUniqueId *id, double deadline)
{
    char key[64];
    snprintf(key, sizeof key, "nccl/%lld/id", c->epoch);
    if (c->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(id);
        if (r != ncclSuccess) {
            dt_error("nccl: rank 0: ncclGetUniqueId failed: %s; check "
                     "[transport.nccl] socket_ifname",
                     ncclGetErrorString(r));
            return DT_ERR_IO;
        }
        return dt_store_set(c->store, key, id, sizeof *id);
    }
    void *v = NULL;
    size_t len = 0;
    dt_status_t st = dt_store_get(c->store, key, deadline - dt_clock_now(), &v,
                                  &len);
    if (st != DT_OK || len != sizeof *id) {
        dt_error("nccl: rank %d: rank 0 did not publish the NCCL unique id "
                 "in the store (%s); did rank 0 start with transport nccl?",
                 c->rank, st != DT_OK ? dt_status_str(st) : "wrong size");
        free(v);
        return st == DT_OK || st == DT_ERR_TIMEOUT ? DT_ERR_PEER : st;
    }
    memcpy(id, v, sizeof *id);
    free(v);
    return DT_OK;
}

dt_status_t nccl_comm_open(nccl_ctx_t *c, const dt_transport_args_t *a)
{
    int ndev = 0;
    char key[64];
    int64_t n = 0;
    double deadline = dt_clock_now() + c->timeout;
    DT_CHECK(nccl_cuda_check(c, cudaGetDeviceCount(&ndev), "counting GPUs"));
    /* One GPU per rank: NCCL rejects a communicator with two ranks on one
     * GPU ("invalid usage"), so say what is wrong before it does. */
    if (a->local_size > ndev) {
        char host[256] = "this host";
        if (gethostname(host, sizeof host - 1) != 0)
            snprintf(host, sizeof host, "this host");
        host[sizeof host - 1] = '\0';
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        dt_error("nccl: rank %d: %d ranks run on host %s but it has only %d "
                 "GPU%s%s%s%s: NCCL needs a GPU of its own for every rank; "
                 "start at most %d rank%s per host (dtctl run -n, or more "
                 "hosts), or use --transport=tcp or ucx",
                 c->rank, a->local_size, host, ndev, ndev == 1 ? "" : "s",
                 vis ? " visible (CUDA_VISIBLE_DEVICES=" : "",
                 vis ? vis : "", vis ? ")" : "", ndev, ndev == 1 ? "" : "s");
        c->failed = DT_ERR_CONFIG;
        return DT_ERR_CONFIG;
    }
    c->device = a->local_rank % (ndev > 0 ? ndev : 1);
    DT_CHECK(nccl_cuda_check(c, cudaSetDevice(c->device), "cudaSetDevice"));
    DT_CHECK(nccl_cuda_check(
        c, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
        "creating the communication stream"));
    snprintf(key, sizeof key, "nccl/inits/%d", c->rank);
    DT_CHECK(dt_store_add(a->store, key, 1, &n));
    c->epoch = (long long)n;
    ncclUniqueId id;
    DT_CHECK(share_id(c, &id, deadline));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0; /* returns at once; settle() bounds the wait */
    ncclResult_t r = ncclCommInitRankConfig(&c->comm, c->size, id, c->rank,
                                            &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        dt_error("nccl: rank %d: ncclCommInitRankConfig failed: %s",
                 c->rank, ncclGetErrorString(r));
        c->failed = DT_ERR_IO; /* fini aborts what init left, if anything */
        if (c->comm) {
            ncclCommAbort(c->comm);
            c->comm = NULL;
        }
        return DT_ERR_IO;
    }
    DT_CHECK(settle(c, "creating the NCCL communicator", "init-stuck"));
    dt_debug("nccl: rank %d of %d on GPU %d (%d present), NCCL %d", c->rank,
             c->size, c->device, ndev, NCCL_VERSION_CODE);
    return DT_OK;
}

void nccl_comm_close(nccl_ctx_t *c)
{
    if (!c->comm)
        return;
    cudaSetDevice(c->device);
    if (c->failed == DT_OK) {
        /* Finalize flushes the communicator's outstanding work; on the
         * non-blocking communicator it returns at once, so poll it under
         * the deadline: a dead peer must not hang the rank here. */
        ncclResult_t r = ncclCommFinalize(c->comm);
        double deadline = dt_clock_now() + c->timeout;
        int round = 0;
        while (r == ncclInProgress) {
            if (ncclCommGetAsyncError(c->comm, &r) != ncclSuccess)
                break;
            if (r != ncclInProgress)
                break;
            if (dt_clock_now() > deadline) {
                dt_warn("nccl: rank %d: finalizing the communicator made no "
                        "progress for %.0f s: aborting it", c->rank,
                        c->timeout);
                break;
            }
            nccl_nap(&round);
        }
        if (r == ncclSuccess) {
            ncclCommDestroy(c->comm);
            c->comm = NULL;
            return;
        }
        if (r != ncclInProgress)
            dt_warn("nccl: rank %d: finalizing the communicator failed: %s; "
                    "aborting it", c->rank, ncclGetErrorString(r));
    }
    /* A failed job (or a failed finalize) must not hang here. */
    ncclCommAbort(c->comm);
    c->comm = NULL;
}
