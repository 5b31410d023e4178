/* ucx_setup.c — [transport.ucx] settings, and the UCP context and worker
 * they configure. Settings go to UCX through ucp_config_modify (the same as
 * UCX_TLS, UCX_NET_DEVICES, UCX_RNDV_THRESH in the environment, without
 * touching the process environment); a UCX_* variable the user exported
 * still applies where the matching key is left at its default. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <dt/log.h>
#include "ucx.h"
#include <dt/netif.h>

#define SECTION "transport.ucx"

/* A value set by the user (file, env, --set) beats the core's default. */
static int user_set(const dt_config_t *cfg, const char *section,
                    const char *key)
{
    dt_config_source_t src = DT_SRC_DEFAULT;
    const char *where = NULL;
    return cfg && dt_config_origin(cfg, section, key, &src, &where) == DT_OK &&
           src != DT_SRC_DEFAULT;
}

/* The name of the interface that holds addr ("10.0.0.2"), or "" if none. */

static dt_status_t copy_key(const dt_config_t *cfg, const char *key,
                            char *dst, size_t len)
{
    const char *v = "";
    if (cfg)
        DT_CHECK(dt_config_get_string(cfg, SECTION, key, &v));
    if (strlen(v) >= len) {
        dt_error("[transport.ucx] %s = '%s' is too long (at most %zu "
                 "characters)",
                 key, v, len - 1);
        return DT_ERR_CONFIG;
    }
    snprintf(dst, len, "%s", v);
    return DT_OK;
}

/* Whether a UCX_TLS list lets data go through shared memory: a list that
 * leaves it out (tls = tcp) asks for the bytes to cross that transport
 * (benchmarks of UCX over TCP, say), so the core's shared-memory
 * collectives stay off too (DT_CAP_NO_SHM). */
static int tls_allows_shm(const char *tls)
{
    static const char *const shm_tls[] = {"all", "sm", "shm", "posix",
                                          "sysv", "xpmem", "cma", "knem"};
    if (!tls || !*tls)
        return 1;
    int exclude = tls[0] == '^', named = 0;
    for (const char *p = tls + exclude; *p;) {
        size_t n = strcspn(p, ",");
        for (size_t i = 0; i < sizeof shm_tls / sizeof *shm_tls; i++)
            if (strlen(shm_tls[i]) == n && strncmp(p, shm_tls[i], n) == 0)
                named = 1;
        p += n + (p[n] == ',');
    }
    return exclude ? !named : named;
}

dt_status_t ucx_read_config(ucx_ctx_t *c, const dt_config_t *cfg,
                            const dt_transport_args_t *a)
{
    const char *mem = "auto", *perr = "auto", *spin = "auto", *shm = "auto";
    double timeout = 60.0;
    DT_CHECK(copy_key(cfg, "tls", c->tls, sizeof c->tls));
    DT_CHECK(copy_key(cfg, "devices", c->devices, sizeof c->devices));
    DT_CHECK(copy_key(cfg, "rndv_thresh", c->rndv_thresh,
                      sizeof c->rndv_thresh));
    if (cfg) {
        DT_CHECK(dt_config_get_string(cfg, SECTION, "memory", &mem));
        DT_CHECK(dt_config_get_string(cfg, SECTION, "peer_errors", &perr));
        DT_CHECK(dt_config_get_string(cfg, SECTION, "spin", &spin));
        DT_CHECK(dt_config_get_duration(cfg, SECTION, "timeout", &timeout));
        DT_CHECK(dt_config_get_string(cfg, SECTION, "shm", &shm));
    }
    if (strcasecmp(shm, "auto") != 0 && strcasecmp(shm, "off") != 0) {
        const char *where = "[transport.ucx]";
        if (cfg)
            dt_config_origin(cfg, SECTION, "shm", NULL, &where);
        dt_error("%s: [transport.ucx] shm = '%s': use auto (shared memory "
                 "for the collectives of a job on one host) or off",
                 where, shm);
        return DT_ERR_CONFIG;
    }
    const char *tls = c->tls[0] ? c->tls : getenv("UCX_TLS");
    c->no_shm = strcasecmp(shm, "off") == 0 || !tls_allows_shm(tls);
    if (!user_set(cfg, SECTION, "timeout") && a->timeout > 0)
        timeout = a->timeout;
    if (timeout <= 0) {
        dt_error("[transport.ucx] timeout must be positive (got %g s)",
                 timeout);
        return DT_ERR_CONFIG;
    }
    c->timeout = timeout;
    DT_CHECK(dt_wait_spin_init(&c->spin, spin, SECTION, a->local_size));
    /* auto: ignore on one host, where the data goes through shared memory
     * and the launcher sees every worker's exit itself; report across
     * hosts, where UCX's network transports can report and a host can
     * vanish without an exit status. */
    if (strcasecmp(perr, "auto") == 0)
        c->peer_errors = a->size != a->local_size;
    else if (strcasecmp(perr, "report") == 0 ||
             strcasecmp(perr, "ignore") == 0)
        c->peer_errors = strcasecmp(perr, "report") == 0;
    else {
        dt_error("[transport.ucx] peer_errors = '%s': must be auto, report "
                 "(UCX names a dead peer at once) or ignore (faster shared "
                 "memory; dtctl or the timeout notices it)",
                 perr);
        return DT_ERR_CONFIG;
    }
    dt_debug("ucx: rank %d: peer errors: %s", a->rank,
             c->peer_errors ? "report (UCP_ERR_HANDLING_MODE_PEER)"
                            : "ignore (UCX may use shared memory)");
    if (strcasecmp(mem, "host") == 0)
        c->want_cuda = 0;
    else if (strcasecmp(mem, "auto") == 0)
        c->want_cuda = 1;
    else if (strcasecmp(mem, "cuda") == 0)
        c->want_cuda = 2;
    else {
        dt_error("[transport.ucx] memory = '%s': must be auto (CUDA memory "
                 "when UCX supports it), host or cuda",
                 mem);
        return DT_ERR_CONFIG;
    }
    /* devices: default to the interface [cluster] interface chose, but only
     * when the user named one; otherwise UCX may use every device
     * (InfiniBand, RoCE) and picks the fastest itself. Except a rank bound
     * to a loopback address (a job on one host; ranks posing as hosts on
     * 127.0.0.x in tests): nothing but loopback can reach it anyway, its
     * data goes through shared memory and its TCP lanes stay on loopback.
     * Every device would include interfaces that come and go (containers,
     * network namespaces): one deleted between UCX's device scan and a
     * connect failed the job ("connect(... 10.99.0.1 ...) refused", or
     * "Destination is unreachable" creating the endpoint: 1 of 12 to 1 of
     * 15 jobs while a bridge came and went; 0 on loopback), and can stall
     * or fail ucp_worker_create (ENODEV). */
    int loopback = a->bind_addr && (strncmp(a->bind_addr, "127.", 4) == 0 ||
                                    strcmp(a->bind_addr, "::1") == 0);
    if (!c->devices[0] && !getenv("UCX_NET_DEVICES") && a->bind_addr &&
        *a->bind_addr &&
        ((cfg && dt_config_get(cfg, "cluster", "interface")) || loopback)) {
        char ifname[IF_NAMESIZE + 1];
        dt_netif_name_of(a->bind_addr, ifname, sizeof ifname);
        if (ifname[0])
            snprintf(c->devices, sizeof c->devices, "%s", ifname);
    }
    /* dtctl exports it from [cluster] interface for programs it starts:
     * say so, as for the value the plugin sets itself. */
    if (!c->devices[0] && getenv("UCX_NET_DEVICES"))
        dt_debug("ucx: rank %d: UCX_NET_DEVICES=%s (from the environment)",
                 c->rank, getenv("UCX_NET_DEVICES"));
    return DT_OK;
}

/* One UCX setting; a value UCX rejects is a configuration error. */
static dt_status_t set_ucx(ucx_ctx_t *c, ucp_config_t *uc, const char *name,
                           const char *value, const char *key)
{
    ucs_status_t s = ucp_config_modify(uc, name, value);
    if (s != UCS_OK) {
        dt_error("ucx: rank %d: UCX rejected %s = '%s' (from [transport.ucx] "
                 "%s): %s; see `ucx_info -c` for the accepted values",
                 c->rank, name, value, key, ucs_status_string(s));
        return DT_ERR_CONFIG;
    }
    dt_debug("ucx: rank %d: UCX_%s=%s", c->rank, name, value);
    return DT_OK;
}

static dt_status_t apply_settings(ucx_ctx_t *c, ucp_config_t *uc)
{
    if (c->tls[0])
        DT_CHECK(set_ucx(c, uc, "TLS", c->tls, "tls"));
    if (c->devices[0])
        DT_CHECK(set_ucx(c, uc, "NET_DEVICES", c->devices,
                         "devices (default: [cluster] interface)"));
    if (c->rndv_thresh[0] && strcasecmp(c->rndv_thresh, "auto") != 0)
        DT_CHECK(set_ucx(c, uc, "RNDV_THRESH", c->rndv_thresh,
                         "rndv_thresh"));
    /* UCX's own failure detectors give up no sooner than dt's timeout. */
    DT_CHECK(ucx_apply_timeouts(c, uc));
    return DT_OK;
}

static dt_status_t query_memory(ucx_ctx_t *c)
{
    ucp_context_attr_t attr = {.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES};
    if (ucp_context_query(c->context, &attr) != UCS_OK)
        attr.memory_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    int has_cuda = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    if (c->want_cuda == 2 && !has_cuda) {
        dt_error("ucx: rank %d: [transport.ucx] memory = cuda, but this UCX "
                 "(%s) was built without CUDA support; use memory = auto "
                 "(the core then stages CUDA buffers through host memory) "
                 "or a CUDA-enabled UCX",
                 c->rank, ucp_get_version_string());
        return DT_ERR_UNSUPPORTED;
    }
    c->cuda = c->want_cuda && has_cuda;
    dt_debug("ucx: rank %d: UCX %s, CUDA memory %s", c->rank,
             ucp_get_version_string(), c->cuda ? "yes" : "no (host staging)");
    return DT_OK;
}

dt_status_t ucx_open(ucx_ctx_t *c)
{
    ucp_config_t *uc = NULL;
    ucs_status_t s = ucp_config_read(NULL, NULL, &uc);
    dt_status_t st = DT_OK;
    if (s != UCS_OK) {
        dt_error("ucx: rank %d: cannot read the UCX configuration: %s; check "
                 "the UCX_* variables in the environment",
                 c->rank, ucs_status_string(s));
        return DT_ERR_CONFIG;
    }
    if ((st = apply_settings(c, uc)) != DT_OK)
        goto out;
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME,
        .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP,
        .estimated_num_eps = (size_t)c->size,
        .name = "dt",
    };
    s = ucp_init(&p, uc, &c->context);
    if (s != UCS_OK) {
        dt_error("ucx: rank %d: cannot create the UCX context: %s; check "
                 "[transport.ucx] tls and devices (tls = '%s', devices = "
                 "'%s'; `ucx_info -d` lists what this host has)",
                 c->rank, ucs_status_string(s), c->tls[0] ? c->tls : "all",
                 c->devices[0] ? c->devices : "all");
        c->context = NULL;
        st = DT_ERR_CONFIG;
        goto out;
    }
    if ((st = query_memory(c)) != DT_OK)
        goto out;
    /* Serialized, not single: the trainer's gradient communication thread
     * (core/train/grad_sync.c) runs collectives on this worker between the
     * training thread's own, one thread at a time (its mutex orders them);
     * UCS_THREAD_MODE_SINGLE allows only the thread that created it. */
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };
    s = ucp_worker_create(c->context, &wp, &c->worker);
    if (s == UCS_OK)
        s = ucp_worker_get_efd(c->worker, &c->efd);
    if (s != UCS_OK) {
        dt_error("ucx: rank %d: cannot create a UCX worker with an event fd: "
                 "%s; a transport in [transport.ucx] tls may lack wakeup "
                 "support",
                 c->rank, ucs_status_string(s));
        st = DT_ERR_IO;
    }
out:
    ucp_config_release(uc);
    return st;
}

void ucx_close(ucx_ctx_t *c)
{
    if (c->worker)
        ucp_worker_destroy(c->worker);
    if (c->context)
        ucp_cleanup(c->context);
    c->worker = NULL;
    c->context = NULL;
}
