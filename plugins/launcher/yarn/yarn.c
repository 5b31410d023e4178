/* yarn.c — the YARN launcher: the workers run as the containers of a
 * YARN application submitted through the ResourceManager REST API, with
 * Hadoop's distributed-shell ApplicationMaster starting N containers
 * (submit.c); the containers number themselves and report through a
 * private job directory shared with the NodeManagers (script.c,
 * ../common/jobdir). Entry points, configuration and the preflight check. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/plugin.h>
#include "yarn.h"

#define SECTION "launcher.yarn"
#define DEFAULT_CLASSPATH                                                     \
    "{{CLASSPATH}}<CPS>./*<CPS>{{HADOOP_CONF_DIR}}"                           \
    "<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/*"                       \
    "<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/lib/*"                   \
    "<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/*"                           \
    "<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/lib/*"

static const dt_key_spec_t yarn_keys[] = {
    {"rm_url", DT_KEY_STRING, "http://localhost:8088",
     "ResourceManager web address (REST API under /ws/v1/cluster)"},
    {"user", DT_KEY_STRING, NULL,
     "user.name for simple authentication; default: $USER"},
    {"queue", DT_KEY_STRING, "default", "YARN queue"},
    {"memory", DT_KEY_SIZE, "1G", "memory per worker container"},
    {"vcores", DT_KEY_INT, "1", "virtual cores per worker container"},
    {"am_memory", DT_KEY_SIZE, "512M",
     "memory of the ApplicationMaster's container"},
    {"app_name", DT_KEY_STRING, NULL, "application name; default dt-<job id>"},
    {"app_type", DT_KEY_STRING, "DT", "application type"},
    {"am_classpath", DT_KEY_STRING, DEFAULT_CLASSPATH,
     "CLASSPATH of the ApplicationMaster (must hold Hadoop's "
     "distributed-shell jar)"},
    {"shared_dir", DT_KEY_STRING, NULL,
     "directory at the same path on this host and every NodeManager, for "
     "the job directory; default ~/.dt/yarn"},
    {"poll_interval", DT_KEY_DURATION, "500ms",
     "how often dtctl asks the ResourceManager and reads worker files"},
    {"start_timeout", DT_KEY_DURATION, "10m",
     "how long started containers wait for the others"},
    {"request_timeout", DT_KEY_DURATION, "30s",
     "limit for one REST request"},
    {NULL, 0, NULL, NULL},
};

static dt_status_t opt_string(const dt_config_t *cfg, const char *key,
                              const char **out)
{
    *out = NULL;
    dt_status_t st = dt_config_get_string(cfg, SECTION, key, out);
    return st == DT_ERR_NOT_FOUND ? DT_OK : st;
}

static dt_status_t read_conf(const dt_config_t *cfg, yarn_conf_t *c)
{
    int start_ms = 0;
    DT_CHECK(opt_string(cfg, "rm_url", &c->rm_url));
    DT_CHECK(opt_string(cfg, "user", &c->user));
    DT_CHECK(opt_string(cfg, "queue", &c->queue));
    DT_CHECK(opt_string(cfg, "app_name", &c->app_name));
    DT_CHECK(opt_string(cfg, "app_type", &c->app_type));
    DT_CHECK(opt_string(cfg, "am_classpath", &c->am_classpath));
    DT_CHECK(opt_string(cfg, "shared_dir", &c->shared_dir));
    DT_CHECK(dt_config_get_size(cfg, SECTION, "memory", &c->memory));
    DT_CHECK(dt_config_get_size(cfg, SECTION, "am_memory", &c->am_memory));
    DT_CHECK(dt_config_get_int(cfg, SECTION, "vcores", &c->vcores));
    DT_CHECK(jobdir_conf_ms(cfg, SECTION, "poll_interval", &c->poll_ms));
    DT_CHECK(jobdir_conf_ms(cfg, SECTION, "start_timeout", &start_ms));
    DT_CHECK(jobdir_conf_ms(cfg, SECTION, "request_timeout",
                            &c->request_timeout_ms));
    c->start_timeout_s = start_ms < 1000 ? 1 : start_ms / 1000;
    if (!c->rm_url || strncmp(c->rm_url, "http", 4) != 0) {
        dt_error("[%s] rm_url = '%s' is not an http(s):// address of a "
                 "ResourceManager",
                 SECTION, c->rm_url ? c->rm_url : "");
        return DT_ERR_CONFIG;
    }
    if (c->vcores < 1 || c->memory < (1u << 20) || c->am_memory < (1u << 20)) {
        dt_error("[%s] vcores must be >= 1 and memory, am_memory >= 1M",
                 SECTION);
        return DT_ERR_CONFIG;
    }
    if (!c->user || !*c->user)
        c->user = getenv("USER");
    if (!c->queue || !*c->queue)
        c->queue = "default";
    if (!c->app_type || !*c->app_type)
        c->app_type = "DT";
    if (!c->shared_dir || !*c->shared_dir) {
        const char *home = jobdir_home();
        if (!home) {
            dt_error("yarn: no home directory for ~/.dt/yarn; set "
                     "[launcher.yarn] shared_dir");
            return DT_ERR_CONFIG;
        }
        if (asprintf(&c->home_dir, "%s/.dt/yarn", home) < 0)
            return DT_ERR_NOMEM;
        c->shared_dir = c->home_dir;
    }
    if (c->shared_dir[0] != '/') {
        dt_error("[%s] shared_dir = '%s' must be an absolute path", SECTION,
                 c->shared_dir);
        return DT_ERR_CONFIG;
    }
    return DT_OK;
}

static dt_status_t yarn_init(const dt_config_t *cfg, void **ctx)
{
    yarn_launcher_t *L = calloc(1, sizeof *L);
    if (!L)
        return DT_ERR_NOMEM;
    dt_status_t st = read_conf(cfg, &L->conf);
    if (st == DT_OK && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        dt_error("yarn: libcurl could not be initialised");
        st = DT_ERR_IO;
    }
    if (st != DT_OK) {
        free(L->conf.home_dir);
        free(L);
        return st;
    }
    *ctx = L;
    return DT_OK;
}

static void yarn_fini(void *ctx)
{
    yarn_launcher_t *L = ctx;
    if (!L)
        return;
    yarn_stop(L);
    if (L->mon_ready)
        jobdir_mon_free(&L->mon);
    if (L->dir)
        jobdir_remove(L->dir);
    free(L->dir);
    free(L->conf.home_dir);
    free(L);
    curl_global_cleanup();
}

static dt_status_t yarn_check(void *ctx, const dt_hostlist_t *hosts,
                              void (*report)(void *arg, const char *host,
                                             const char *problem),
                              void *arg)
{
    (void)hosts; /* YARN places the containers */
    yarn_launcher_t *L = ctx;
    long code;
    json_t *resp = NULL;
    char msg[1024];
    if (yarn_rest(L, "GET", "/ws/v1/cluster/info", NULL, &code, &resp) !=
        DT_OK) {
        snprintf(msg, sizeof msg,
                 "the ResourceManager at %s does not answer; check "
                 "[launcher.yarn] rm_url",
                 L->conf.rm_url);
        report(arg, L->conf.rm_url, msg);
    } else if (code != 200) {
        snprintf(msg, sizeof msg, "GET /ws/v1/cluster/info: HTTP %ld: %s",
                 code, yarn_remote_message(resp));
        report(arg, L->conf.rm_url, msg);
    }
    json_decref(resp);
    if (access(L->conf.shared_dir, W_OK) != 0) {
        snprintf(msg, sizeof msg,
                 "[launcher.yarn] shared_dir %s is not writable yet (it is "
                 "created on launch; it must be shared with the "
                 "NodeManagers)",
                 L->conf.shared_dir);
        report(arg, "localhost", msg);
    }
    return DT_OK;
}

static const dt_launcher_ops_t yarn_ops = {
    .size = sizeof(dt_launcher_ops_t),
    .init = yarn_init,
    .launch = yarn_launch,
    .wait = yarn_wait,
    .signal = yarn_signal,
    .run_on_host = NULL, /* YARN places containers; no per-host commands */
    .check = yarn_check,
    .fini = yarn_fini,
    .flags = DT_LAUNCHER_PLACES_RANKS, /* YARN places the containers */
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_LAUNCHER,
    .name = "yarn",
    .version = "1.0",
    .description = "Hadoop YARN: an application of N containers through "
                   "the ResourceManager REST API (distributed-shell AM)",
    .keys = yarn_keys,
    .available = NULL,
    .ops = &yarn_ops,
};
