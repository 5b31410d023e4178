/* nccl_plugin.c — the nccl transport plugin: keys, the availability check
 * `dtctl plugins` shows, init, caps and fini. NCCL moves CUDA memory
 * (DT_CAP_CUDA_MEM) and brings its own collectives; host buffers are
 * staged through the GPU. Without libnccl the loader already reports the
 * missing library; without a GPU `available` says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "nccl_tp.h"

#define SECTION "transport.nccl"

static const dt_key_spec_t nccl_keys[] = {
    {"socket_ifname", DT_KEY_STRING, "",
     "NCCL_SOCKET_IFNAME: interfaces for NCCL's bootstrap and socket "
     "transport; empty: the one [cluster] interface selects, when set"},
    {"ib_hca", DT_KEY_STRING, "",
     "NCCL_IB_HCA: InfiniBand adapters to use (e.g. 'mlx5_0:1')"},
    {"debug", DT_KEY_STRING, "",
     "NCCL_DEBUG: NCCL's own log level (WARN, INFO, TRACE)"},
    {"timeout", DT_KEY_DURATION, "60s",
     "a collective or communicator setup with no progress this long is an "
     "error naming the ranks that stopped; default: [cluster] timeout"},
    {NULL, 0, NULL, NULL}};

static dt_status_t nccl_available(char *why, size_t len)
{
    int n = 0, driver = 0, runtime = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0)
        return DT_OK;
    /* Say what is missing in the words of the host, not of the runtime:
     * without a driver CUDA answers "CUDA driver version is insufficient
     * for CUDA runtime version", which reads like an old driver. */
    cudaDriverGetVersion(&driver); /* 0: no driver (libcuda) at all */
    cudaRuntimeGetVersion(&runtime);
    if (driver == 0)
        snprintf(why, len, "no NVIDIA driver on this host (libcuda.so.1 "
                           "not found: no GPU, or its driver is not "
                           "installed); NCCL needs an NVIDIA GPU");
    else if (e == cudaErrorInsufficientDriver)
        snprintf(why, len, "the NVIDIA driver on this host supports CUDA "
                           "%d.%d, older than the CUDA %d.%d runtime dt was "
                           "built with; update the driver",
                 driver / 1000, driver % 1000 / 10, runtime / 1000,
                 runtime % 1000 / 10);
    else if (e == cudaSuccess || e == cudaErrorNoDevice)
        snprintf(why, len, "no NVIDIA GPU on this host (the driver is "
                           "there, but it sees no GPU%s)",
                 getenv("CUDA_VISIBLE_DEVICES")
                     ? "; check CUDA_VISIBLE_DEVICES"
                     : "");
    else
        snprintf(why, len, "no usable NVIDIA GPU on this host "
                           "(cudaGetDeviceCount: %s)",
                 cudaGetErrorString(e));
    return DT_ERR_UNSUPPORTED;
}

static void nccl_fini(void *ctx)
{
    nccl_ctx_t *c = ctx;
    if (!c)
        return;
    if (c->stream) /* only once a device was chosen */
        cudaSetDevice(c->device);
    nccl_free_posted(c);
    nccl_comm_close(c);
    nccl_free_bufs(c);
    if (c->dhalf)
        cudaFree(c->dhalf);
    if (c->hhalf)
        cudaFreeHost(c->hhalf);
    if (c->hstage)
        cudaFreeHost(c->hstage);
    if (c->stage)
        cudaFree(c->stage);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

static dt_status_t nccl_init(const dt_config_t *cfg,
                             const dt_transport_args_t *a, void **out)
{
    char why[256];
    if (a->size < 1 || a->rank < 0 || a->rank >= a->size || !a->store) {
        dt_error("nccl: init needs a rank in 0..size-1 and the rendezvous "
                 "store (start the job with dtctl run)");
        return DT_ERR_INVALID;
    }
    if (nccl_available(why, sizeof why) != DT_OK) {
        dt_error("nccl: rank %d: %s; use --transport=ucx or tcp on hosts "
                 "without GPUs",
                 a->rank, why);
        return DT_ERR_UNSUPPORTED;
    }
    nccl_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return DT_ERR_NOMEM;
    c->rank = a->rank;
    c->size = a->size;
    c->store = a->store;
    c->posted_tail = &c->posted;
    c->timeout = a->timeout > 0 ? a->timeout : 60.0;
    dt_status_t st = DT_OK;
    dt_config_source_t src = DT_SRC_DEFAULT;
    const char *where = NULL;
    if (cfg && dt_config_origin(cfg, SECTION, "timeout", &src, &where) ==
                   DT_OK &&
        src != DT_SRC_DEFAULT)
        st = dt_config_get_duration(cfg, SECTION, "timeout", &c->timeout);
    /* [collectives] compression (a core section: every config has it). */
    const char *comp = NULL;
    if (st == DT_OK && cfg &&
        dt_config_get_string(cfg, "collectives", "compression", &comp) ==
            DT_OK &&
        comp) {
        c->bf16 = !strcmp(comp, "bf16") || !strcmp(comp, "bfloat16");
        c->warned_fp16 = !(!strcmp(comp, "fp16") || !strcmp(comp, "float16") ||
                           !strcmp(comp, "half"));
    } else {
        c->warned_fp16 = 1;
    }
    if (!c->warned_fp16 && c->rank == 0)
        dt_warn("nccl: [collectives] compression = fp16 is not native to "
                "the nccl transport (fp16 sums in NCCL overflow to inf): "
                "float32 allreduce; use bf16");
    if (st == DT_OK)
        st = nccl_apply_env(cfg, a);
    if (st == DT_OK)
        st = nccl_comm_open(c, a);
    if (st != DT_OK) {
        nccl_fini(c);
        return st;
    }
    *out = c;
    return DT_OK;
}

static uint32_t nccl_caps(void *ctx)
{
    (void)ctx;
    return DT_CAP_CUDA_MEM;
}

static const dt_transport_ops_t nccl_ops = {
    .size = sizeof(dt_transport_ops_t),
    .init = nccl_init,
    .caps = nccl_caps,
    .isend = nccl_isend,
    .irecv = nccl_irecv,
    .test = nccl_test,
    .wait = nccl_wait,
    .allreduce = nccl_allreduce,
    .broadcast = nccl_broadcast,
    .allgather = nccl_allgather,
    .reduce_scatter = nccl_reduce_scatter,
    .barrier = nccl_barrier,
    .fini = nccl_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    DT_PLUGIN_ABI,
    DT_KIND_TRANSPORT,
    "nccl",
    "1.0",
    "NCCL on CUDA GPUs (native allreduce, broadcast, allgather, "
    "reduce-scatter; host buffers staged)",
    nccl_keys,
    nccl_available,
    &nccl_ops,
};
