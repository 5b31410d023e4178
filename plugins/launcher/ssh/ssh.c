/* ssh.c — the ssh launcher (libssh): workers on any host reachable by
 * ssh, host keys checked against known_hosts. Entry points and
 * [launcher.ssh]; the work is in connect.c, hostkey.c, script.c,
 * launch.c, pump.c, signal.c, run_on_host.c and check.c. */
#define _GNU_SOURCE
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "check.h"
#include "connect.h"
#include "launch.h"
#include "pump.h"
#include "run_on_host.h"
#include "ssh_signal.h"
#include "ssh_types.h"

#define SECTION "launcher.ssh"

static const dt_key_spec_t ssh_keys[] = {
    {"user", DT_KEY_STRING, NULL,
     "remote user name (default: the user running dtctl)"},
    {"port", DT_KEY_INT, "22",
     "ssh port; a host's own port (host:2222 or port= in the hostfile) wins"},
    {"identity", DT_KEY_LIST, NULL,
     "private key files to try (default ~/.ssh/id_ed25519, id_ecdsa, id_rsa)"},
    {"use_agent", DT_KEY_BOOL, "yes",
     "also try the keys of a running ssh-agent ($SSH_AUTH_SOCK)"},
    {"known_hosts", DT_KEY_STRING, NULL,
     "known_hosts file that host keys are checked against (default "
     "~/.ssh/known_hosts)"},
    {"accept_new_host_keys", DT_KEY_BOOL, "no",
     "trust and record the key of a host not in known_hosts (changed keys "
     "are always refused)"},
    {"connect_timeout", DT_KEY_DURATION, "10s",
     "give up on a host that does not answer within this time"},
    {"max_parallel", DT_KEY_INT, "32",
     "connections opened at the same time"},
    {"workdir", DT_KEY_STRING, NULL,
     "directory the workers start in ([cluster] workdir wins; default: "
     "dtctl's directory where it exists, else the home directory)"},
    {NULL, 0, NULL, NULL},
};

static char *home_path(const char *rel)
{
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : "/";
    }
    char *p = NULL;
    return asprintf(&p, "%s/%s", home, rel) < 0 ? NULL : p;
}

/* "~/x" as $HOME/x (the path in place); other paths unchanged. */
static dt_status_t expand_home(char **path)
{
    if (!*path || strncmp(*path, "~/", 2) != 0)
        return DT_OK;
    char *full = home_path(*path + 2);
    if (!full)
        return DT_ERR_NOMEM;
    free(*path);
    *path = full;
    return DT_OK;
}

/* An optional string key: unset or empty gives NULL. */
static dt_status_t opt_string(const dt_config_t *cfg, const char *key,
                              char **out)
{
    const char *v = NULL;
    *out = NULL;
    dt_status_t st = dt_config_get_string(cfg, SECTION, key, &v);
    if (st == DT_ERR_NOT_FOUND || (st == DT_OK && (!v || !*v)))
        return DT_OK;
    if (st != DT_OK)
        return st;
    return (*out = strdup(v)) ? DT_OK : DT_ERR_NOMEM;
}

static dt_status_t read_identities(const dt_config_t *cfg, ssh_opts_t *o)
{
    size_t n = 0;
    dt_status_t st = DT_ERR_NOT_FOUND;
    if (dt_config_get(cfg, SECTION, "identity"))
        st = dt_config_get_list(cfg, SECTION, "identity", &o->identity, &n);
    if (st == DT_OK && n > 0) {
        for (size_t i = 0; i < n; i++)
            DT_CHECK(expand_home(&o->identity[i]));
        return DT_OK;
    }
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    dt_strv_free(o->identity);
    static const char *const defaults[] = {".ssh/id_ed25519", ".ssh/id_ecdsa",
                                           ".ssh/id_rsa"};
    o->identity = calloc(4, sizeof *o->identity);
    if (!o->identity)
        return DT_ERR_NOMEM;
    for (int i = 0; i < 3; i++)
        if (!(o->identity[i] = home_path(defaults[i])))
            return DT_ERR_NOMEM;
    return DT_OK;
}

static dt_status_t read_opts(const dt_config_t *cfg, ssh_opts_t *o)
{
    long long port = 22, par = 32;
    double timeout = 10;
    DT_CHECK(opt_string(cfg, "user", &o->user));
    DT_CHECK(dt_config_get_int(cfg, SECTION, "port", &port));
    DT_CHECK(read_identities(cfg, o));
    DT_CHECK(dt_config_get_bool(cfg, SECTION, "use_agent", &o->use_agent));
    DT_CHECK(opt_string(cfg, "known_hosts", &o->known_hosts));
    DT_CHECK(dt_config_get_bool(cfg, SECTION, "accept_new_host_keys",
                                &o->accept_new));
    DT_CHECK(dt_config_get_duration(cfg, SECTION, "connect_timeout",
                                    &timeout));
    DT_CHECK(dt_config_get_int(cfg, SECTION, "max_parallel", &par));
    DT_CHECK(opt_string(cfg, "workdir", &o->workdir));
    if (port < 1 || port > 65535) {
        dt_error("[launcher.ssh] port = %lld is not a TCP port (1-65535)",
                 port);
        return DT_ERR_CONFIG;
    }
    if (par < 1 || par > 4096) {
        dt_error("[launcher.ssh] max_parallel = %lld: want 1 to 4096", par);
        return DT_ERR_CONFIG;
    }
    if (timeout <= 0) {
        dt_error("[launcher.ssh] connect_timeout must be positive");
        return DT_ERR_CONFIG;
    }
    o->port = (int)port;
    o->max_parallel = (int)par;
    o->timeout_s = timeout < 1 ? 1 : (long)(timeout + 0.999);
    o->alive_s = 60;
    dt_status_t ast = dt_config_get_duration(cfg, "cluster", "timeout",
                                             &o->alive_s);
    if (ast != DT_OK && ast != DT_ERR_NOT_FOUND)
        return ast;
    if (!o->known_hosts && !(o->known_hosts = home_path(".ssh/known_hosts")))
        return DT_ERR_NOMEM;
    DT_CHECK(expand_home(&o->known_hosts));
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) && !(o->cwd = strdup(cwd)))
        return DT_ERR_NOMEM;
    return DT_OK;
}

static void free_opts(ssh_opts_t *o)
{
    free(o->user);
    dt_strv_free(o->identity);
    free(o->known_hosts);
    free(o->workdir);
    free(o->cwd);
}

static void ssh_fini(void *ctx);

static dt_status_t ssh_init_ctx(const dt_config_t *cfg, void **ctx)
{
    ssh_launcher_t *L = calloc(1, sizeof *L);
    if (!L)
        return DT_ERR_NOMEM;
    if (ssh_init() != SSH_OK) {
        dt_error("ssh launcher: libssh could not be initialised");
        free(L);
        return DT_ERR_INTERNAL;
    }
    dt_status_t st = read_opts(cfg, &L->o);
    if (st != DT_OK) {
        free_opts(&L->o);
        free(L);
        ssh_finalize();
        return st;
    }
    *ctx = L;
    return DT_OK;
}

static void ssh_fini(void *ctx)
{
    ssh_launcher_t *L = ctx;
    if (!L)
        return;
    ssh_kill_all(L);
    ssh_event_detach(L);
    if (L->event)
        ssh_event_free(L->event);
    for (size_t i = 0; i < L->nconns; i++) {
        ssh_conn_close(&L->conns[i]);
        free(L->conns[i].name);
    }
    free(L->conns);
    free(L->ranks);
    free(L->relay);
    free_opts(&L->o);
    free(L);
    ssh_finalize();
}

static const dt_launcher_ops_t ssh_ops = {
    .size = sizeof(dt_launcher_ops_t),
    .init = ssh_init_ctx,
    .launch = ssh_launch,
    .wait = ssh_wait,
    .signal = ssh_signal,
    .run_on_host = ssh_run_on_host,
    .check = ssh_check,
    .fini = ssh_fini,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_LAUNCHER,
    .name = "ssh",
    .version = "1.0",
    .description = "workers on hosts reachable by ssh (libssh; host keys "
                   "checked against known_hosts)",
    .keys = ssh_keys,
    .available = NULL,
    .ops = &ssh_ops,
};
