/* worker.c — the worker API (dt/dt.h): one job per process. dt_init reads
 * the environment, connects to the rendezvous store, loads the transport
 * plugin and hands it the store; collectives go through core/coll*.c. A job
 * of one needs none of that: its collectives are copies. */
#include <openssl/crypto.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/config.h>
#include <dt/device.h>
#include <dt/dt.h>
#include <dt/log.h>
#include <dt/store.h>
#include "coll/coll.h"
#include "coll/coll_internal.h"
#include "finalize_barrier.h"
#include "net/cpu_bind.h"
#include <dt/netif.h>
#include "plugin/plugin_loader.h"
#include "plugin/plugin_crash.h"
#include "plugin/plugin_isolate.h"
#include "rendezvous/store_client.h"
#include "worker_env.h"

extern char **environ;

static struct worker {
    int up;
    dt_worker_env_t id;
    dt_config_t *cfg;
    dt_store_t *store;
    const dt_plugin_t *plugin;
    const dt_transport_ops_t *ops;
    void *ctx;
    dt_comm_t comm;
    double timeout;
    dt_status_t lost;   /* a collective failed: the job is over (noted) */
    int store_silent;   /* the store did not take a failure record */
    uint8_t token[DT_TOKEN_BYTES];
} W;

dt_comm_t *dt_worker_comm(void)
{
    return W.up && W.ops ? &W.comm : NULL;
}

/* Bounded: a store that does not answer (a stopped dtctl, this host cut
 * off from dtctl's) must not hold a failing rank for minutes; it is then
 * asked nothing more (dt_finalize). */
void dt_worker_record_failure(int rank, const char *how)
{
    if (!W.up || !W.store || W.id.size < 2 || W.store_silent)
        return;
    dt_status_t st = dt_store_culprit_record_bounded(
        W.store, rank, W.id.rank, how, DT_STORE_FAILURE_WAIT_S);
    if (st == DT_ERR_TIMEOUT)
        W.store_silent = 1;
    else if (st != DT_OK)
        dt_debug("rank %d: could not record rank %d's failure in the store",
                 W.id.rank, rank);
}

const char *dt_collectives_path(void)
{
    if (!W.up)
        return NULL;
    if (!W.ops)
        return "none: a job of one worker moves no data";
    return W.comm.path[0] ? W.comm.path : "the transport";
}

int dt_rank(void) { return W.up ? W.id.rank : -1; }
int dt_size(void) { return W.up ? W.id.size : -1; }
int dt_local_rank(void) { return W.up ? W.id.local_rank : -1; }
int dt_local_size(void) { return W.up ? W.id.local_size : -1; }

/* DT_LOG_LEVEL: a name or 0-4. Unset: the default (info). */
static void apply_log_level(void)
{
    static const char *const names[] = {"error", "warn", "info", "debug",
                                        "trace"};
    const char *v = getenv("DT_LOG_LEVEL");
    if (!v || !*v)
        return;
    for (int i = 0; i < 5; i++)
        if (strcmp(v, names[i]) == 0 || (v[0] == '0' + i && !v[1])) {
            dt_log_set_level((dt_log_level_t)i);
            return;
        }
    dt_warn("DT_LOG_LEVEL='%s' is not one of error, warn, info, debug, "
            "trace (or 0-4); keeping info",
            v);
}

/* This machine's name without its domain ("?" when unknown). */
static void short_hostname(char *host, size_t len)
{
    if (gethostname(host, len) != 0) {
        snprintf(host, len, "?");
        return;
    }
    host[len - 1] = '\0';
    host[strcspn(host, ".")] = '\0';
}

static void set_log_tag(void)
{
    char host[256], tag[300];
    short_hostname(host, sizeof host);
    snprintf(tag, sizeof tag, "[%d %s]", W.id.rank, host);
    dt_log_set_tag(tag);
    /* A crash in a plugin op says which, tagged as this rank's lines. */
    dt_plugin_crash_report_install(tag);
    dt_isolation_disable(); /* a crash in a probe is said by that report */
}

/* Where this rank runs, for dtctl's failure line ("dt/host/RANK"): a
 * scheduler (slurm, sge, yarn) places ranks where dtctl's host list does
 * not say. Best effort: dtctl falls back to its own placement. */
static void publish_host(void)
{
    char host[256], key[32];
    short_hostname(host, sizeof host);
    if (strcmp(host, "?") == 0)
        return;
    snprintf(key, sizeof key, "dt/host/%d", W.id.rank);
    if (dt_store_set(W.store, key, host, strlen(host)) != DT_OK)
        dt_debug("rank %d: could not record its host in the store",
                 W.id.rank);
}

/* The part of DT_RENDEZVOUS before the port, without IPv6 brackets. */
static void rendezvous_host(const char *hp, char *host, size_t len)
{
    const char *colon = strrchr(hp, ':');
    size_t n = colon ? (size_t)(colon - hp) : strlen(hp);
    if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']') {
        hp++;
        n -= 2;
    }
    snprintf(host, len, "%.*s", (int)n, hp);
}

/* The address this worker's transport listens on: [cluster] interface
 * (DT_INTERFACE), else the route towards the rendezvous host. */
static dt_status_t pick_bind_addr(const char *rdv, char *addr, size_t len)
{
    char host[256], **items = NULL;
    size_t n = 0;
    const char *where = "cluster.interface";
    rendezvous_host(rdv, host, sizeof host);
    /* Unset is the usual case: ask first, so no lookup failure is logged. */
    dt_status_t st = DT_ERR_NOT_FOUND;
    if (dt_config_get(W.cfg, "cluster", "interface"))
        st = dt_config_get_list(W.cfg, "cluster", "interface", &items, &n);
    if (st == DT_ERR_NOT_FOUND)
        n = 0;
    else if (st != DT_OK)
        return st;
    dt_config_source_t src;
    if (n)
        dt_config_origin(W.cfg, "cluster", "interface", &src, &where);
    st = dt_netif_select(items, n, host, where, addr, len);
    dt_strv_free(items);
    return st;
}

static dt_status_t load_transport(void)
{
    const char *name = "tcp";
    char why[256] = "";
    DT_CHECK(dt_config_get_string(W.cfg, "cluster", "transport", &name));
    DT_CHECK(dt_plugin_load(DT_KIND_TRANSPORT, name, &W.plugin, NULL));
    if (W.plugin->available && W.plugin->available(why, sizeof why) != DT_OK) {
        dt_error("transport '%s' cannot run here: %s; choose another with "
                 "--transport or [cluster] transport",
                 name, why);
        return DT_ERR_PLUGIN;
    }
    /* The loader refused a transport without init, isend, irecv, test,
     * wait or fini: the core calls them without asking. */
    W.ops = W.plugin->ops;
    /* Its [transport.NAME] keys may come from DT_TRANSPORT_NAME_* too. */
    char section[128];
    snprintf(section, sizeof section, "transport.%s", name);
    if (W.plugin->keys) {
        DT_CHECK(dt_config_add_schema(W.cfg, section, W.plugin->keys));
        DT_CHECK(dt_config_load_env(W.cfg, environ));
    }
    dt_config_check_env(W.cfg, environ);
    return DT_OK;
}

/* Store, transport, communicator: everything a job of several needs. */
static dt_status_t join_job(void)
{
    const char *rdv = getenv("DT_RENDEZVOUS");
    const char *hex = getenv("DT_JOB_TOKEN");
    char bind[DT_NETIF_ADDR_LEN];
    if (!rdv || !*rdv || !hex || !*hex) {
        dt_error("%s says this is one of %d workers, but DT_RENDEZVOUS or "
                 "DT_JOB_TOKEN is not set: start the job with dtctl run",
                 W.id.source, W.id.size);
        return DT_ERR_CONFIG;
    }
    if (dt_token_from_hex(hex, W.token) != DT_OK) {
        dt_error("DT_JOB_TOKEN is malformed (want %d hex digits); it must "
                 "come unchanged from dtctl run",
                 2 * DT_TOKEN_BYTES);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(dt_config_get_duration(W.cfg, "cluster", "timeout", &W.timeout));
    DT_CHECK(load_transport());
    DT_CHECK(pick_bind_addr(rdv, bind, sizeof bind));
    DT_CHECK(dt_store_connect(rdv, W.token, W.timeout, &W.store));
    publish_host();
    dt_transport_args_t args = {
        .rank = W.id.rank,
        .size = W.id.size,
        .local_rank = W.id.local_rank,
        .local_size = W.id.local_size,
        .store = W.store,
        .token = W.token,
        .token_len = DT_TOKEN_BYTES,
        .bind_addr = bind,
        .timeout = W.timeout,
    };
    dt_plugin_call_t was = dt_plugin_call_begin(W.plugin, "init");
    dt_status_t st = W.ops->init(W.cfg, &args, &W.ctx);
    dt_plugin_call_end(was);
    if (st != DT_OK) {
        dt_error("transport '%s' could not connect rank %d of %d (%s); see "
                 "the messages above",
                 W.plugin->name, W.id.rank, W.id.size, dt_status_str(st));
        W.ctx = NULL;
        return st;
    }
    W.comm = (dt_comm_t){.ops = W.ops,
                         .ctx = W.ctx,
                         .plugin = W.plugin,
                         .rank = W.id.rank,
                         .size = W.id.size,
                         .timeout_ms = -1};
    DT_CHECK(dt_comm_configure(&W.comm, W.cfg));
    /* Once: which memory the transport reads, for dt_allreduce_mem. */
    dt_comm_query_caps(&W.comm, W.plugin->name);
    dt_comm_hosts_args_t ha = {.store = W.store,
                               .bind_addr = bind,
                               .local_size = W.id.local_size,
                               .timeout = W.timeout,
                               .transport = W.plugin->name};
    DT_CHECK(dt_comm_setup_hosts(&W.comm, W.cfg, &ha));
    dt_debug("joined the job: rank %d of %d (local %d of %d, from %s), "
             "transport %s on %s",
             W.id.rank, W.id.size, W.id.local_rank, W.id.local_size,
             W.id.source, W.plugin->name, bind);
    return DT_OK;
}

static void teardown(void)
{
    if (W.ctx && W.ops->fini) {
        dt_plugin_call_t was = dt_plugin_call_begin(W.plugin, "fini");
        W.ops->fini(W.ctx);
        dt_plugin_call_end(was);
    }
    dt_comm_release(&W.comm);
    dt_store_close(W.store);
    dt_config_free(W.cfg);
    OPENSSL_cleanse(W.token, sizeof W.token);
    memset(&W, 0, sizeof W);
}

dt_status_t dt_init(void)
{
    if (W.up) {
        dt_error("dt_init: already initialized; call dt_finalize first");
        return DT_ERR_INVALID;
    }
    memset(&W, 0, sizeof W);
    apply_log_level();
    dt_status_t st = dt_worker_env_read(environ, &W.id);
    if (st != DT_OK)
        return st;
    set_log_tag();
    if ((st = dt_config_new(&W.cfg)) == DT_OK)
        st = dt_config_load_env(W.cfg, environ);
    if (st == DT_OK)
        st = dt_cpu_bind(W.cfg, W.id.local_rank, W.id.local_size);
    if (st == DT_OK && W.id.size > 1)
        st = join_job();
    if (st != DT_OK) {
        dt_error("dt_init failed for rank %d of %d: %s", W.id.rank, W.id.size,
                 dt_status_str(st));
        teardown();
        return st;
    }
    W.up = 1;
    return DT_OK;
}

/* Nobody closes connections a peer may still be reading from: every rank
 * waits (up to the timeout) in a store barrier for the others. That is
 * all dt_finalize needs of the store, and a store that does not answer
 * (dtctl stopped, this host cut off from dtctl's) cannot give it: the
 * rank's arrival, marked first, is bounded, and the barrier's answer
 * gets DT_STORE_FAILURE_WAIT_S beyond the timeout, not the client's 60 s
 * (a finished rank lingered timeout + 65 s, holding its GPU). A rank that
 * never arrives is named (finalize_barrier.c). */
dt_status_t dt_finalize(void)
{
    if (!W.up) { /* dt.h: every failure is said */
        dt_error("dt_finalize: not in a job (dt_init was not called, or "
                 "dt_finalize already was): call it once after dt_init");
        return DT_ERR_INVALID;
    }
    dt_status_t st = W.lost;
    /* After a collective failed, some rank may never arrive: do not wait
     * for it; nor for a store that did not take a failure record. */
    if (W.store && st == DT_OK && !W.store_silent)
        st = dt_finalize_barrier(W.store, W.id.rank, W.id.size, W.timeout);
    teardown();
    dt_log_set_tag(NULL);
    return st;
}

/* ---- collectives --------------------------------------------------------- */

static dt_status_t check_call(const char *what, dt_dtype_t t, size_t count,
                              size_t blocks, const void *a, const void *b)
{
    if (!W.up) {
        dt_error("%s: call dt_init first", what);
        return DT_ERR_INVALID;
    }
    if (count && (!a || !b)) { /* a status, as dt.h promises: no crash */
        dt_error("%s on rank %d: a NULL buffer for %zu elements", what,
                 W.id.rank, count);
        return DT_ERR_INVALID;
    }
    size_t es = dt_dtype_size(t);
    if (es == 0) {
        dt_error("%s on rank %d: unknown element type %d", what, W.id.rank,
                 (int)t);
        return DT_ERR_INVALID;
    }
    if (count > SIZE_MAX / es / blocks) {
        dt_error("%s on rank %d: %zu elements is too many", what, W.id.rank,
                 count);
        return DT_ERR_INVALID;
    }
    return DT_OK;
}

static dt_status_t check_op(const char *what, dt_redop_t op)
{
    if ((unsigned)op >= DT_REDOP_COUNT) {
        dt_error("%s on rank %d: unknown reduction %d", what, W.id.rank,
                 (int)op);
        return DT_ERR_INVALID;
    }
    return DT_OK;
}

/* A collective that fails past the argument checks above ends the job: a
 * peer died or went silent, the ranks' calls did not match, the transport
 * broke, or this rank left its peers mid-call. Remember the first such
 * error, so that dt_finalize returns it at once rather than wait in its
 * barrier for ranks that may never come. DT_ERR_UNSUPPORTED (a type, op
 * or memory kind without a path) is the exception: every rank gets it
 * alike, before anything moves. */
static dt_status_t noted(dt_status_t st)
{
    if (st != DT_OK && st != DT_ERR_UNSUPPORTED && W.lost == DT_OK)
        W.lost = st;
    return st;
}

/* One worker: the result is the input. */
static void copy(void *dst, const void *src, size_t count, dt_dtype_t t)
{
    if (dst != src && count)
        memmove(dst, src, count * dt_dtype_size(t));
}

/* What the host reductions take, refused alike with one worker (a job
 * that ran as one process would fail at the first run with two). */
static dt_status_t check_host_reduce(const char *what, dt_dtype_t t,
                                     dt_redop_t op)
{
    if (dt_coll_reducible(t, op))
        return DT_OK;
    dt_error("%s on rank %d: %s with op %d is not supported in host memory "
             "(float32, float64, int32; sum, avg, max, min)", what,
             W.id.rank, dt_dtype_name(t), (int)op);
    return DT_ERR_UNSUPPORTED;
}

dt_status_t dt_allreduce(const void *send, void *recv, size_t count,
                         dt_dtype_t type, dt_redop_t op)
{
    DT_CHECK(check_call("dt_allreduce", type, count, 1, send, recv));
    DT_CHECK(check_op("dt_allreduce", op));
    if (W.id.size == 1) {
        DT_CHECK(check_host_reduce("dt_allreduce", type, op));
        copy(recv, send, count, type);
        return DT_OK;
    }
    return noted(dt_coll_allreduce(&W.comm, send, recv, count, type, op));
}

dt_status_t dt_allreduce_mem(const void *send, void *recv, size_t count,
                             dt_dtype_t type, dt_redop_t op, dt_mem_t mem,
                             void *stream)
{
    DT_CHECK(check_call("dt_allreduce_mem", type, count, 1, send, recv));
    DT_CHECK(check_op("dt_allreduce_mem", op));
    if (mem != DT_MEM_HOST && mem != DT_MEM_CUDA) {
        dt_error("dt_allreduce_mem on rank %d: unknown memory kind %d",
                 W.id.rank, (int)mem);
        return DT_ERR_INVALID;
    }
    if (W.id.size == 1) {
        if (mem == DT_MEM_HOST) {
            copy(recv, send, count, type);
            return DT_OK;
        }
        if (send == recv || count == 0)
            return DT_OK;
        return dt_gpu_copy(recv, mem, send, mem, count * dt_dtype_size(type),
                           stream);
    }
    return noted(dt_coll_allreduce_mem(&W.comm, send, recv, count, type, op,
                                       mem, stream));
}

dt_status_t dt_broadcast(void *buf, size_t count, dt_dtype_t type, int root)
{
    DT_CHECK(check_call("dt_broadcast", type, count, 1, buf, buf));
    if (root < 0 || root >= W.id.size) {
        dt_error("dt_broadcast on rank %d: root %d is not a rank (0..%d)",
                 W.id.rank, root, W.id.size - 1);
        return DT_ERR_INVALID;
    }
    if (W.id.size == 1)
        return DT_OK;
    return noted(dt_coll_broadcast(&W.comm, buf, count, type, root));
}

dt_status_t dt_allgather(const void *send, void *recv, size_t count,
                         dt_dtype_t type)
{
    DT_CHECK(check_call("dt_allgather", type, count, (size_t)W.id.size,
                        send, recv));
    if (W.id.size == 1) {
        copy(recv, send, count, type);
        return DT_OK;
    }
    return noted(dt_coll_allgather(&W.comm, send, recv, count, type));
}

dt_status_t dt_reduce_scatter(const void *send, void *recv, size_t count,
                              dt_dtype_t type, dt_redop_t op)
{
    DT_CHECK(check_call("dt_reduce_scatter", type, count, (size_t)W.id.size,
                        send, recv));
    DT_CHECK(check_op("dt_reduce_scatter", op));
    if (W.id.size == 1) {
        DT_CHECK(check_host_reduce("dt_reduce_scatter", type, op));
        copy(recv, send, count, type);
        return DT_OK;
    }
    return noted(
        dt_coll_reduce_scatter(&W.comm, send, recv, count, type, op));
}

dt_status_t dt_barrier(void)
{
    if (!W.up) {
        dt_error("dt_barrier: call dt_init first");
        return DT_ERR_INVALID;
    }
    return W.id.size == 1 ? DT_OK : noted(dt_coll_barrier(&W.comm));
}
