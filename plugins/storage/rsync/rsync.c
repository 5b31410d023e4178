/* rsync.c — storage "rsync": copy the data set to the same directory on
 * every host with the real rsync binary over ssh (the ssh launcher's
 * user, port, keys and known_hosts), several hosts at a time, only what
 * changed, with a per-host summary and progress for large data sets.
 * Entry points and keys; the work per host is in rsync_host.c. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "rsync_storage.h"
#include "stg.h"

static const dt_key_spec_t rsync_keys[] = {
    {"dst", DT_KEY_STRING, NULL,
     "directory the data set is copied to on every host (absolute; {host} "
     "becomes the host's name; new, empty or staged by dt before)"},
    {"max_parallel", DT_KEY_INT, "8", "hosts copied to at the same time"},
    {"delete", DT_KEY_BOOL, "yes",
     "remove files from dst that are no longer in the data set"},
    {"bwlimit", DT_KEY_STRING, NULL,
     "bandwidth limit per host, rsync's --bwlimit (e.g. 50M per second; "
     "checked when the job is read)"},
    {"lock_wait", DT_KEY_DURATION, "10m",
     "how long a host waits while another job stages to the same dst "
     "there (0: refuse at once, naming that job)"},
    {"timeout", DT_KEY_DURATION, "300s",
     "give up on a host when no data moved for this long"},
    {"progress_min", DT_KEY_SIZE, "256M",
     "show progress when the data set is at least this large"},
    {"rsync", DT_KEY_STRING, "rsync", "rsync binary on this machine"},
    {"rsync_path", DT_KEY_STRING, NULL,
     "rsync binary on the hosts (default: rsync on their PATH)"},
    {NULL, 0, NULL, NULL},
};

/* [launcher.ssh] as text: read even when another launcher runs the job,
 * since rsync always goes over ssh. */
static const char *ssh_key(const dt_config_t *cfg, const char *key)
{
    const char *v = dt_config_get(cfg, "launcher.ssh", key);
    return v && *v ? v : NULL;
}

static char *home_path(const char *p)
{
    const char *home = getenv("HOME");
    char *out = NULL;
    if (strncmp(p, "~/", 2) == 0 && home) {
        if (asprintf(&out, "%s/%s", home, p + 2) < 0)
            return NULL;
        return out;
    }
    return strdup(p);
}

static dt_status_t read_ssh(const dt_config_t *cfg, rsync_storage_t *R)
{
    const char *v;
    long long port = 22;
    bool b;
    double secs;
    R->ssh.use_agent = true;
    if ((v = ssh_key(cfg, "user")) && !(R->ssh_user = strdup(v)))
        return DT_ERR_NOMEM;
    if ((v = ssh_key(cfg, "port")) && dt_parse_int(v, &port) != DT_OK) {
        dt_error("[launcher.ssh] port = '%s' is not a number", v);
        return DT_ERR_CONFIG;
    }
    if ((v = ssh_key(cfg, "identity"))) {
        size_t n = 0;
        DT_CHECK(dt_parse_list(v, &R->ssh.identity, &n));
        for (size_t i = 0; i < n; i++) {
            char *full = home_path(R->ssh.identity[i]);
            if (!full)
                return DT_ERR_NOMEM;
            free(R->ssh.identity[i]);
            R->ssh.identity[i] = full;
        }
    }
    if ((v = ssh_key(cfg, "known_hosts")) &&
        !(R->ssh_known_hosts = home_path(v)))
        return DT_ERR_NOMEM;
    if ((v = ssh_key(cfg, "accept_new_host_keys")) &&
        dt_parse_bool(v, &b) == DT_OK)
        R->ssh.accept_new = b;
    if ((v = ssh_key(cfg, "use_agent")) && dt_parse_bool(v, &b) == DT_OK)
        R->ssh.use_agent = b;
    if ((v = ssh_key(cfg, "connect_timeout")) &&
        dt_parse_duration(v, &secs) == DT_OK)
        R->ssh.connect_timeout = secs < 1 ? 1 : (long)(secs + 0.999);
    else
        R->ssh.connect_timeout = 10;
    R->ssh.port = (int)port;
    R->ssh.user = R->ssh_user;
    R->ssh.known_hosts = R->ssh_known_hosts;
    return DT_OK;
}

static void rsync_fini(void *ctx)
{
    rsync_storage_t *R = ctx;
    if (!R)
        return;
    free(R->dst);
    free(R->bwlimit);
    free(R->rsync);
    free(R->rsync_path);
    free(R->ssh_user);
    free(R->ssh_known_hosts);
    dt_strv_free(R->ssh.identity);
    free(R);
}

/* "/", "//", "/./..": the root directory however spelled (the hosts'
 * scripts also resolve links and refuse it). */
static int is_root(const char *path)
{
    for (const char *c = path; *c;) {
        size_t n = strcspn(c, "/");
        if (n > 2 || (n && strspn(c, ".") < n))
            return 0;
        c += n + (c[n] == '/');
    }
    return 1;
}

/* A bwlimit that rsync would refuse only once every host's copy was
 * marked in progress is refused here, naming where it was set. */
static dt_status_t check_bwlimit(const dt_config_t *cfg, const char *v)
{
    const char *why = v ? rs_bwlimit_problem(v) : NULL;
    if (!why)
        return DT_OK;
    const char *where = "?";
    dt_config_origin(cfg, SECTION, "bwlimit", NULL, &where);
    dt_error("%s: [storage.rsync] bwlimit = '%s' is not a rate rsync takes: "
             "%s; write a number and an optional unit with no space, e.g. "
             "500K or 8M (MiB per second; 8MB: millions of bytes), or 0 for "
             "no limit",
             where, v, why);
    return DT_ERR_CONFIG;
}

static dt_status_t read_keys(const dt_config_t *cfg, rsync_storage_t *R)
{
    double timeout = 300, lock_wait = 600;
    uint64_t pmin = 0;
    DT_CHECK(stg_opt_string(cfg, SECTION, "dst", &R->dst));
    if (!R->dst) {
        dt_error("[storage.rsync] dst is not set: name the directory the "
                 "data set is copied to on every host, e.g. dst = "
                 "/scratch/dt-data");
        return DT_ERR_CONFIG;
    }
    DT_CHECK(stg_check_absolute(SECTION, "dst", R->dst));
    if (is_root(R->dst)) {
        dt_error("[storage.rsync] dst = '%s' is the root directory: staging "
                 "there would overwrite (delete = yes: delete) every host's "
                 "files; set dst to a directory of its own, e.g. dst = "
                 "/scratch/dt-data",
                 R->dst);
        return DT_ERR_CONFIG;
    }
    DT_CHECK(stg_get_parallel(cfg, SECTION, &R->max_parallel));
    DT_CHECK(dt_config_get_bool(cfg, SECTION, "delete", &R->delete_extra));
    DT_CHECK(stg_opt_string(cfg, SECTION, "bwlimit", &R->bwlimit));
    DT_CHECK(check_bwlimit(cfg, R->bwlimit));
    DT_CHECK(dt_config_get_duration(cfg, SECTION, "lock_wait", &lock_wait));
    DT_CHECK(dt_config_get_duration(cfg, SECTION, "timeout", &timeout));
    DT_CHECK(dt_config_get_size(cfg, SECTION, "progress_min", &pmin));
    DT_CHECK(stg_opt_string(cfg, SECTION, "rsync", &R->rsync));
    DT_CHECK(stg_opt_string(cfg, SECTION, "rsync_path", &R->rsync_path));
    R->timeout_s = timeout <= 0 ? 0 : timeout < 1 ? 1 : (long)(timeout + .5);
    R->progress_min = pmin;
    R->lock_wait_ms = lock_wait <= 0 ? 0 : (long long)(lock_wait * 1000);
    return read_ssh(cfg, R);
}

static dt_status_t rsync_init(const dt_config_t *cfg, void **ctx)
{
    rsync_storage_t *R = calloc(1, sizeof *R);
    if (!R)
        return DT_ERR_NOMEM;
    dt_status_t st = read_keys(cfg, R);
    if (st != DT_OK) {
        rsync_fini(R);
        return st;
    }
    *ctx = R;
    return DT_OK;
}

/* Size and file count of the data set (nftw has no user pointer). */
static __thread unsigned long long walk_bytes, walk_files;

static int count_file(const char *path, const struct stat *sb, int type,
                      struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (type == FTW_F && S_ISREG(sb->st_mode)) {
        walk_bytes += (unsigned long long)sb->st_size;
        walk_files++;
    }
    return 0;
}

static dt_status_t measure_src(const char *src, unsigned long long *bytes,
                               unsigned long long *files)
{
    struct stat sb;
    if (stat(src, &sb) != 0) {
        dt_error("storage rsync: the data set %s ([data] path) cannot be "
                 "read on this machine: %m; fix [data] path",
                 src);
        return DT_ERR_NOT_FOUND;
    }
    if (!S_ISDIR(sb.st_mode)) {
        dt_error("storage rsync: the data set %s ([data] path) is not a "
                 "directory; rsync stages a directory's contents",
                 src);
        return DT_ERR_INVALID;
    }
    walk_bytes = walk_files = 0;
    if (nftw(src, count_file, 32, FTW_PHYS) != 0) {
        dt_error("storage rsync: cannot read the data set %s: %m", src);
        return DT_ERR_IO;
    }
    *bytes = walk_bytes;
    *files = walk_files;
    return DT_OK;
}

static void summary(const stage_run_t *run)
{
    unsigned long long sent = 0, data = 0;
    char a[32], b[32];
    for (size_t i = 0; i < run->req->hosts->n; i++) {
        const host_result_t *r = &run->res[i];
        if (!r->done)
            continue;
        dt_info("storage rsync: %s: sent %llu bytes (%llu files, %s of data "
                "changed) in %.1f s",
                run->req->hosts->hosts[i].name, r->stats.bytes_sent,
                r->stats.files, stg_bytes_text(r->stats.data, a, sizeof a),
                r->seconds);
        sent += r->stats.bytes_sent;
        data += r->stats.data;
    }
    dt_info("storage rsync: data set %s (%s, %llu files) on %zu host%s; "
            "%s sent in all",
            run->req->src, stg_bytes_text(run->src_bytes, a, sizeof a),
            run->src_files, run->req->hosts->n,
            run->req->hosts->n == 1 ? "" : "s",
            stg_bytes_text(sent, b, sizeof b));
    (void)data;
}

static dt_status_t rsync_stage(void *ctx, const dt_stage_request_t *req,
                               char **worker_path)
{
    rsync_storage_t *R = ctx;
    if (!req || !req->src || !req->hosts)
        return DT_ERR_INVALID;
    stage_run_t run = {.R = R, .req = req};
    rs_lock_self(&run);
    DT_CHECK(measure_src(req->src, &run.src_bytes, &run.src_files));
    run.progress = run.src_bytes >= R->progress_min;
    run.res = calloc(req->hosts->n ? req->hosts->n : 1, sizeof *run.res);
    if (!run.res)
        return DT_ERR_NOMEM;
    pthread_mutex_init(&run.out_mu, NULL);
    char sz[32];
    dt_info("storage rsync: copying %s (%s) to %s on %zu host%s, %d at a "
            "time",
            req->src, stg_bytes_text(run.src_bytes, sz, sizeof sz), R->dst,
            req->hosts->n, req->hosts->n == 1 ? "" : "s", R->max_parallel);
    dt_status_t st = stg_for_each_host(req->hosts, R->max_parallel,
                                       rsync_one_host, &run);
    if (st != DT_OK && rsync_stopped(&run))
        st = DT_ERR_INTERRUPTED; /* each host said what it left */
    summary(&run);
    if (st == DT_OK && !(*worker_path = strdup(R->dst)))
        st = DT_ERR_NOMEM;
    pthread_mutex_destroy(&run.out_mu);
    free(run.res);
    return st;
}

int rsync_stopped(const stage_run_t *run)
{
    int (*stop)(void) = run->req->stop_requested;
    return stop && stop();
}

typedef struct verify_run {
    rsync_storage_t *R;
    const dt_stage_request_t *req;
} verify_run_t;

static dt_status_t verify_host(void *arg, size_t i, const dt_host_t *h)
{
    verify_run_t *v = arg;
    (void)i;
    char *dst = stg_expand_host(v->R->dst, h->name);
    if (!dst)
        return DT_ERR_NOMEM;
    dt_status_t st = stg_check_path(v->req, h, "storage rsync", dst, 1);
    free(dst);
    return st;
}

static dt_status_t rsync_verify(void *ctx, const dt_stage_request_t *req)
{
    if (!req || !req->hosts)
        return DT_ERR_INVALID;
    verify_run_t v = {ctx, req};
    rsync_storage_t *R = ctx;
    return stg_for_each_host(req->hosts, R->max_parallel, verify_host, &v);
}

static dt_status_t rsync_worker_path(void *ctx, const dt_stage_request_t *req,
                                     char **path)
{
    rsync_storage_t *R = ctx;
    (void)req;
    return (*path = strdup(R->dst)) ? DT_OK : DT_ERR_NOMEM;
}

static dt_status_t rsync_available(char *why, size_t len)
{
    /* The binaries are looked up on PATH like execvp does. */
    const char *path = getenv("PATH");
    char *copy = strdup(path && *path ? path : "/usr/bin:/bin");
    int have_rsync = 0, have_ssh = 0;
    for (char *save = NULL, *d = copy ? strtok_r(copy, ":", &save) : NULL; d;
         d = strtok_r(NULL, ":", &save)) {
        char p[4096];
        snprintf(p, sizeof p, "%s/rsync", d);
        have_rsync |= access(p, X_OK) == 0;
        snprintf(p, sizeof p, "%s/ssh", d);
        have_ssh |= access(p, X_OK) == 0;
    }
    free(copy);
    if (!have_rsync) {
        snprintf(why, len, "rsync is not on PATH (apt-get install rsync)");
        return DT_ERR_UNSUPPORTED;
    }
    if (!have_ssh) {
        snprintf(why, len,
                 "ssh is not on PATH (apt-get install openssh-client)");
        return DT_ERR_UNSUPPORTED;
    }
    return DT_OK;
}

static const dt_storage_ops_t rsync_ops = {
    .size = sizeof(dt_storage_ops_t),
    .init = rsync_init,
    .stage = rsync_stage,
    .verify = rsync_verify,
    .shared_dir = NULL,
    .fini = rsync_fini,
    .worker_path = rsync_worker_path,
};

DT_PLUGIN_EXPORT const dt_plugin_t dt_plugin_v1 = {
    .abi = DT_PLUGIN_ABI,
    .kind = DT_KIND_STORAGE,
    .name = "rsync",
    .version = "1.0",
    .description = "copy the data set to every host with rsync over ssh "
                   "(incremental, parallel, marked complete)",
    .keys = rsync_keys,
    .available = rsync_available,
    .ops = &rsync_ops,
};
