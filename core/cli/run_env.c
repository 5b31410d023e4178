/* run_env.c — the worker environment contract (see run_env.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <dt/log.h>
#include <dt/netif.h>
#include "run_env.h"

dt_status_t run_env_common(const run_job_t *job, env_list_t *env)
{
    DT_CHECK(env_list_addf(env, "DT_JOB_ID", "%s", job->job_id));
    DT_CHECK(env_list_addf(env, "DT_JOB_TOKEN", "%s", job->token_hex));
    DT_CHECK(env_list_addf(env, "DT_WORLD_SIZE", "%d", job->np));
    DT_CHECK(env_list_addf(env, "DT_NUM_NODES", "%d", job->num_nodes));
    /* torchrun's names, for init_method="env://" */
    DT_CHECK(env_list_addf(env, "WORLD_SIZE", "%d", job->np));
    DT_CHECK(env_list_addf(env, "GROUP_WORLD_SIZE", "%d", job->num_nodes));
    DT_CHECK(env_list_addf(env, "MASTER_ADDR", "%s", job->master_addr));
    DT_CHECK(env_list_addf(env, "MASTER_PORT", "%d", job->master_port));
    DT_CHECK(env_list_addf(env, "ROLE_NAME", "default"));
    DT_CHECK(env_list_addf(env, "ROLE_WORLD_SIZE", "%d", job->np));
    return DT_OK;
}

dt_status_t run_env_rank(const run_job_t *job, int rank, env_list_t *env)
{
    const dt_placement_t *p = &job->placement[rank];
    DT_CHECK(env_list_addf(env, "DT_RANK", "%d", rank));
    DT_CHECK(env_list_addf(env, "DT_LOCAL_RANK", "%d", p->local_rank));
    DT_CHECK(env_list_addf(env, "DT_LOCAL_SIZE", "%d", p->local_size));
    DT_CHECK(env_list_addf(env, "DT_NODE_RANK", "%d", p->node_rank));
    DT_CHECK(env_list_addf(env, "DT_HOST", "%s",
                           job->hosts->hosts[p->host].name));
    DT_CHECK(env_list_addf(env, "RANK", "%d", rank));
    DT_CHECK(env_list_addf(env, "LOCAL_RANK", "%d", p->local_rank));
    DT_CHECK(env_list_addf(env, "LOCAL_WORLD_SIZE", "%d", p->local_size));
    DT_CHECK(env_list_addf(env, "GROUP_RANK", "%d", p->node_rank));
    /* torchrun's one role: every worker */
    DT_CHECK(env_list_addf(env, "ROLE_RANK", "%d", rank));
    return DT_OK;
}

dt_status_t run_env_program(const run_job_t *job, int scheduler_places,
                            env_list_t *env)
{
    /* -x / [cluster] env_vars (already in env) win */
    const char *mine = getenv("PYTHONUNBUFFERED");
    if (!env_list_get(env, "PYTHONUNBUFFERED"))
        DT_CHECK(env_list_addf(env, "PYTHONUNBUFFERED", "%s",
                               mine ? mine : "1"));
    if (env_list_get(env, "OMP_NUM_THREADS"))
        return DT_OK;
    if ((mine = getenv("OMP_NUM_THREADS")))
        return env_list_addf(env, "OMP_NUM_THREADS", "%s", mine);
    if (scheduler_places)
        return DT_OK;
    int most = 1, here = 1;
    for (int r = 0; r < job->np; r++) {
        const dt_placement_t *p = &job->placement[r];
        if (p->local_size > most)
            most = p->local_size;
        here &= dt_host_is_local(job->hosts->hosts[p->host].name);
    }
    if (most < 2)
        return DT_OK; /* one worker a host: the libraries' own default */
    cpu_set_t cpus;
    int n = 1;
    if (here && sched_getaffinity(0, sizeof cpus, &cpus) == 0)
        n = CPU_COUNT(&cpus) / most;
    if (n < 1)
        n = 1;
    dt_info("OMP_NUM_THREADS=%d for each worker (%d workers share a "
            "host%s); set OMP_NUM_THREADS to choose",
            n, most, here ? "'s CPUs" : ", as torchrun sets");
    return env_list_addf(env, "OMP_NUM_THREADS", "%d", n);
}

/* Names dt gives every worker itself (run_env_common, run_env_rank,
 * run_restart_env; DT_* covers the rest): a user's value would make a
 * worker wrong about who it is. */
static int reserved_name(const char *name, size_t len)
{
    static const char *const names[] = {
        "RANK",       "WORLD_SIZE",       "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",  "ROLE_NAME",
        "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
        "TORCHELASTIC_RUN_ID"};
    if (len >= 3 && strncmp(name, "DT_", 3) == 0)
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == len && strncmp(name, names[i], len) == 0)
            return 1;
    return 0;
}

dt_status_t run_env_user(const dt_config_t *cfg, env_list_t *env)
{
    const char *text = dt_config_get(cfg, "cluster", "env_vars");
    if (!text || !*text)
        return DT_OK;
    const char *where = "[cluster] env_vars";
    dt_config_origin(cfg, "cluster", "env_vars", NULL, &where);
    char **words = NULL;
    size_t n = 0;
    dt_status_t st = dt_config_get_words(cfg, "cluster", "env_vars", &words,
                                         &n);
    if (st != DT_OK)
        return st;
    for (size_t i = 0; i < n && st == DT_OK; i++) {
        const char *w = words[i], *eq = strchr(w, '=');
        size_t len = eq ? (size_t)(eq - w) : strlen(w);
        int ok = len && !(w[0] >= '0' && w[0] <= '9');
        for (size_t k = 0; ok && k < len; k++)
            ok = w[k] == '_' || (w[k] >= 'A' && w[k] <= 'Z') ||
                 (w[k] >= 'a' && w[k] <= 'z') || (w[k] >= '0' && w[k] <= '9');
        if (!ok) {
            dt_error("%s: [cluster] env_vars: '%.*s' is not a variable name "
                     "(letters, digits, _; write NAME or NAME=VALUE)",
                     where, (int)len, w);
            st = DT_ERR_CONFIG;
        } else if (reserved_name(w, len)) {
            dt_error("%s: [cluster] env_vars: %.*s is %s (docs/LAUNCHERS.md, "
                     "the worker environment); drop it",
                     where, (int)len, w,
                     strncmp(w, "DT_", 3) == 0
                         ? "dt's: DT_* names are set by dt, settings go "
                           "with --set"
                         : "set by dt for every worker itself");
            st = DT_ERR_CONFIG;
        } else if (env && eq) {
            char *name = strndup(w, len);
            st = name ? env_list_addf(env, name, "%s", eq + 1)
                      : DT_ERR_NOMEM;
            free(name);
        } else if (env) {
            const char *v = getenv(w);
            if (v)
                st = env_list_addf(env, w, "%s", v);
            else if (!env_list_get(env, w) &&
                     strcmp(w, "OMP_NUM_THREADS") != 0 &&
                     strcmp(w, "PYTHONUNBUFFERED") != 0)
                dt_warn("%s: [cluster] env_vars: %s is not set in dtctl's "
                        "environment: the workers do not get it",
                        where, w);
        }
    }
    dt_strv_free(words);
    return st;
}

/* An item of [cluster] interface that is a plain interface name (not an
 * address, a CIDR network or an exclusion). */
static int plain_name(const char *item)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return *item && item[0] != '^' && !strchr(item, '/') &&
           inet_pton(AF_INET, item, buf) != 1 &&
           inet_pton(AF_INET6, item, buf) != 1;
}

/* The interface names [cluster] interface stands for on every worker's
 * host, comma-separated, into out; "" when that depends on the host. */
static dt_status_t interface_names(const dt_config_t *cfg, char **items,
                                   size_t n, char *out, size_t len)
{
    const char *launcher = "local", *where = "cluster.interface";
    out[0] = '\0';
    dt_config_get_string(cfg, "cluster", "launcher", &launcher);
    dt_config_origin(cfg, "cluster", "interface", NULL, &where);
    if (strcmp(launcher, "local") == 0) {
        /* Every worker runs here: the interface dt itself would use. */
        char addr[DT_NETIF_ADDR_LEN];
        DT_CHECK(dt_netif_select(items, n, NULL, where, addr, sizeof addr));
        dt_netif_name_of(addr, out, len);
        return DT_OK;
    }
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (!plain_name(items[i])) {
            out[0] = '\0';
            return DT_OK;
        }
        int w = snprintf(out + used, len - used, "%s%s", i ? "," : "",
                         items[i]);
        if (w < 0 || (size_t)w >= len - used) {
            out[0] = '\0';
            return DT_OK;
        }
        used += (size_t)w;
    }
    return DT_OK;
}

/* One of the variables for the job: dtctl's own value when it has one
 * (the user's choice wins, and launchers that pass only the job's
 * variables, ssh and yarn, must carry it too), else names ("" for none). */
static dt_status_t interface_var(const char *var, const char *names,
                                 const char *spec, env_list_t *env)
{
    const char *mine = getenv(var);
    if (mine) {
        dt_debug("%s=%s from dtctl's environment is kept, for every "
                 "worker ([cluster] interface = '%s' would give %s)", var,
                 mine, spec, *names ? names : "nothing");
        return env_list_addf(env, var, "%s", mine);
    }
    if (!*names)
        return DT_OK;
    dt_debug("%s=%s (from [cluster] interface = '%s')", var, names, spec);
    return env_list_addf(env, var, "%s", names);
}

dt_status_t run_env_interface(const dt_config_t *cfg, env_list_t *env)
{
    static const char *const vars[] = {"NCCL_SOCKET_IFNAME",
                                       "GLOO_SOCKET_IFNAME",
                                       "UCX_NET_DEVICES"};
    const char *spec = dt_config_get(cfg, "cluster", "interface");
    char **items = NULL, names[512];
    size_t n = 0;
    if (!spec || !*spec)
        return DT_OK; /* the libraries choose, as without dt */
    DT_CHECK(dt_config_get_list(cfg, "cluster", "interface", &items, &n));
    dt_status_t st = n ? interface_names(cfg, items, n, names, sizeof names)
                       : DT_OK;
    dt_strv_free(items);
    if (st != DT_OK || n == 0)
        return st;
    if (!names[0])
        dt_debug("[cluster] interface = '%s' names networks, addresses or "
                 "exclusions, whose interface differs per host: the "
                 "workers get no NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME or "
                 "UCX_NET_DEVICES from it (set them in dtctl's "
                 "environment, or name the interfaces)", spec);
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        DT_CHECK(interface_var(vars[i], names, spec, env));
    return DT_OK;
}
