/* run_rendezvous.c — start the job's store and describe it to the workers
 * (see run_rendezvous.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/netif.h>
#include "run_rendezvous.h"

typedef struct strv {
    char **v;
    size_t n;
} strv_t;

static dt_status_t strv_addf(strv_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static dt_status_t strv_addf(strv_t *s, const char *fmt, ...)
{
    char **nv = realloc(s->v, (s->n + 2) * sizeof *nv);
    if (!nv)
        return DT_ERR_NOMEM;
    s->v = nv;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&s->v[s->n], fmt, ap);
    va_end(ap);
    if (r < 0)
        return DT_ERR_NOMEM;
    s->v[++s->n] = NULL;
    return DT_OK;
}

typedef struct forward {
    strv_t *env;
    dt_status_t st;
} forward_t;

/* Workers have no config files: what dtctl was told about the parts they
 * run (plugin sections, [collectives], the timeout and CPU binding, the
 * trainer's [train], [model] and [data]) travels in their environment. */
static int forward_value(const char *section, const char *key,
                         const char *value, dt_config_source_t src,
                         const char *where, void *arg)
{
    forward_t *f = arg;
    (void)where;
    if (src == DT_SRC_DEFAULT)
        return 0;
    int worker_side = strchr(section, '.') != NULL ||
                      strcmp(section, "collectives") == 0 ||
                      strcmp(section, "train") == 0 || /* dt's trainer */
                      strcmp(section, "model") == 0 ||
                      strcmp(section, "data") == 0 ||
                      (strcmp(section, "cluster") == 0 &&
                       (strcmp(key, "timeout") == 0 ||
                        strcmp(key, "bind") == 0 ||
                        strcmp(key, "work_load") == 0));
    if (!worker_side)
        return 0;
    char name[256];
    /* the workers' own spelling: [transport.my-net] is DT_TRANSPORT_MY_NET */
    dt_config_env_name(section, key, name, sizeof name);
    f->st = strv_addf(f->env, "%s=%s", name, value);
    return f->st != DT_OK;
}

/* The first host that is not this machine: the interface facing it is the
 * one the workers can reach us on. NULL for a single-host job. */
static const char *first_remote_host(const dt_hostlist_t *hosts)
{
    for (size_t i = 0; hosts && i < hosts->n; i++)
        if (!dt_netif_is_local(hosts->hosts[i].name))
            return hosts->hosts[i].name;
    return NULL;
}

static const char *level_name(dt_log_level_t l)
{
    static const char *const names[] = {"error", "warn", "info", "debug",
                                        "trace"};
    return (unsigned)l <= DT_LOG_TRACE ? names[l] : "info";
}

dt_status_t run_start_rendezvous(const dt_config_t *cfg,
                                 const dt_hostlist_t *hosts,
                                 const uint8_t *token,
                                 dt_store_server_t **srv,
                                 char ***env_additions)
{
    char **items = NULL, addr[DT_NETIF_ADDR_LEN];
    size_t n = 0;
    strv_t env = {NULL, 0};
    const char *where = "cluster.interface", *transport = "tcp";
    dt_config_source_t src;
    dt_store_server_t *server = NULL;

    *srv = NULL;
    *env_additions = NULL;
    /* Unset is the usual case: ask first, so no lookup failure is logged. */
    dt_status_t st = DT_ERR_NOT_FOUND;
    if (dt_config_get(cfg, "cluster", "interface"))
        st = dt_config_get_list(cfg, "cluster", "interface", &items, &n);
    if (st == DT_ERR_NOT_FOUND)
        n = 0;
    else if (st != DT_OK)
        goto out;
    if (n)
        dt_config_origin(cfg, "cluster", "interface", &src, &where);
    if ((st = dt_config_get_string(cfg, "cluster", "transport", &transport)))
        goto out;
    const char *peer = first_remote_host(hosts), *launcher = "local";
    char route[DT_NETIF_ADDR_LEN];
    dt_config_get_string(cfg, "cluster", "launcher", &launcher);
    /* A scheduler (slurm, sge, yarn, ...) picks the hosts after we start:
     * loopback would be unreachable from them, so face the default route. */
    if (!peer && !n && strcmp(launcher, "local") != 0) {
        if (dt_netif_default_route(route, sizeof route) == DT_OK)
            peer = route;
        else
            dt_warn("no default route: the rendezvous store listens on "
                    "127.0.0.1, which workers on other hosts cannot reach; "
                    "set [cluster] interface if the %s launcher places "
                    "workers elsewhere",
                    launcher);
    }
    if ((st = dt_netif_select(items, n, peer, where, addr, sizeof addr)) ||
        (st = dt_store_server_start(addr, 0, token, &server)))
        goto out;
    int port = dt_store_server_port(server);
    dt_debug("rendezvous store for the job on %s port %d", addr, port);
    st = strchr(addr, ':')
             ? strv_addf(&env, "DT_RENDEZVOUS=[%s]:%d", addr, port)
             : strv_addf(&env, "DT_RENDEZVOUS=%s:%d", addr, port);
    if (st == DT_OK)
        st = strv_addf(&env, "DT_TRANSPORT=%s", transport);
    if (st == DT_OK && n) {
        const char *spec = dt_config_get(cfg, "cluster", "interface");
        st = strv_addf(&env, "DT_INTERFACE=%s", spec ? spec : "");
    }
    if (st == DT_OK && dt_log_get_level() != DT_LOG_INFO)
        st = strv_addf(&env, "DT_LOG_LEVEL=%s",
                       level_name(dt_log_get_level()));
    if (st == DT_OK) {
        forward_t f = {&env, DT_OK};
        dt_config_foreach(cfg, forward_value, &f);
        st = f.st;
    }
    if (st == DT_OK && !env.v)
        st = DT_ERR_INTERNAL;
out:
    dt_strv_free(items);
    if (st != DT_OK) {
        if (st == DT_ERR_NOMEM)
            dt_error("dtctl run: out of memory preparing the rendezvous");
        dt_store_server_stop(server);
        dt_strv_free(env.v);
        return st;
    }
    *srv = server;
    *env_additions = env.v;
    return DT_OK;
}
