/* nfs_stage.c — check (and optionally make) the shared mount on every
 * host, then prove the hosts share it: rank 0's host writes a marker with
 * the job id and a random nonce, every host reads it back. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "mountinfo.h"
#include "nfs_cmd.h"
#include "nfs_stage.h"
#include "stg.h"

/* The resolved path and the host's mount table. */
static const char probe_script[] =
    "p=$(readlink -f -- \"$1\" 2>/dev/null) && [ -e \"$p\" ] || "
    "{ echo 'DT-NFS missing'; exit 0; }\n"
    "echo \"DT-REAL $p\"\n"
    "if command -v mount.efs >/dev/null 2>&1 || [ -x /sbin/mount.efs ]; "
    "then echo 'DT-EFSUTILS yes'; fi\n"
    "echo 'DT-NFS ok'\n"
    "cat /proc/self/mountinfo\n";

typedef struct host_view {
    char real[4096];
    mi_entry_t mount;
    int ok;
} host_view_t;

typedef struct nfs_run {
    nfs_cfg_t *c;
    const dt_stage_request_t *req;
    host_view_t *v;   /* one per host */
    const char *marker_name, *marker_text, *dir;
} nfs_run_t;

static int fstype_ok(const nfs_cfg_t *c, const char *t)
{
    for (size_t i = 0; i < c->nfstypes; i++)
        if (strcmp(c->fstypes[i], t) == 0)
            return 1;
    return 0;
}

static char *fstypes_text(const nfs_cfg_t *c)
{
    char *s = strdup("");
    for (size_t i = 0; s && i < c->nfstypes; i++) {
        char *n = NULL;
        if (asprintf(&n, "%s%s%s", s, i ? ", " : "", c->fstypes[i]) < 0)
            n = NULL;
        free(s);
        s = n;
    }
    return s;
}

/* path's mount on host h: *hv filled; *efs_utils set from the probe. */
static dt_status_t probe(nfs_run_t *r, const dt_host_t *h, const char *path,
                         host_view_t *hv, int *efs_utils)
{
    const char *args[] = {path, NULL};
    char *out = NULL, v[64];
    int code = 0;
    DT_CHECK(stg_run(r->req, h, probe_script, args, &out, &code));
    dt_status_t st = DT_OK;
    const char *verdict = stg_line_value(out, "DT-NFS", v, sizeof v);
    if (efs_utils)
        *efs_utils = stg_line_value(out, "DT-EFSUTILS", v, sizeof v) != NULL;
    if (!verdict || strcmp(verdict, "ok") != 0 ||
        !stg_line_value(out, "DT-REAL", hv->real, sizeof hv->real)) {
        st = DT_ERR_NOT_FOUND;
        if (!verdict) {
            char *line = stg_one_line(out);
            dt_error("%s: host %s: checking %s failed: %s", r->c->who,
                     h->name, path, line ? line : "");
            free(line);
            st = DT_ERR_IO;
        }
        goto out;
    }
    /* The mount table starts after the DT-NFS line. */
    const char *table = strstr(out, "DT-NFS ok\n");
    table = table ? table + strlen("DT-NFS ok\n") : "";
    if (mi_find(table, hv->real, &hv->mount) != DT_OK) {
        dt_error("%s: host %s: no mount holds %s in /proc/self/mountinfo "
                 "there", r->c->who, h->name, hv->real);
        st = DT_ERR_IO;
    }
out:
    free(out);
    return st;
}

/* mount = yes: mount the export on h unless it is mounted already. */
static dt_status_t ensure_mounted(nfs_run_t *r, const dt_host_t *h)
{
    nfs_cfg_t *c = r->c;
    host_view_t hv;
    int have_efs_utils = 0;
    memset(&hv, 0, sizeof hv);
    dt_status_t st = probe(r, h, c->mount_point, &hv, &have_efs_utils);
    if (st == DT_OK && strcmp(hv.mount.mount_point, hv.real) == 0 &&
        fstype_ok(c, hv.mount.fstype)) {
        dt_debug("%s: host %s: %s is mounted already (%s from %s)", c->who,
                 h->name, hv.real, hv.mount.fstype, hv.mount.source);
        return DT_OK;
    }
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    int use_efs = c->efs && c->fs_id &&
                  ((c->efs_utils && strcmp(c->efs_utils, "yes") == 0) ||
                   ((!c->efs_utils || strcmp(c->efs_utils, "auto") == 0) &&
                    have_efs_utils));
    nfs_mount_spec_t spec = {
        .server = c->server,
        .export_path = c->export_path,
        .mount_point = c->mount_point,
        .options = c->options,
        .fs_id = c->fs_id,
        .region = c->region,
        .efs_utils = use_efs,
    };
    char **argv = NULL;
    DT_CHECK(nfs_mount_argv(c->section, &spec, &argv));
    size_t n = 0;
    while (argv[n])
        n++;
    const char **args = calloc(n + 2, sizeof *args);
    if (!args) {
        dt_strv_free(argv);
        return DT_ERR_NOMEM;
    }
    args[0] = c->mount_point;
    for (size_t i = 0; i < n; i++)
        args[i + 1] = argv[i];
    char *out = NULL;
    int code = 0;
    dt_info("%s: host %s: mounting: %s %s %s %s %s %s %s", c->who, h->name,
            argv[0], argv[1], argv[2], n > 5 ? argv[3] : "",
            n > 5 ? argv[4] : "", argv[n - 2], argv[n - 1]);
    st = stg_run(r->req, h, "mkdir -p -- \"$1\" && shift && \"$@\" 2>&1",
                 args, &out, &code);
    if (st == DT_OK && code != 0) {
        char *line = stg_one_line(out);
        dt_error("%s: host %s: mounting %s on %s failed (exit %d): %s; "
                 "mounting needs root there and the NFS client "
                 "(nfs-common%s)",
                 c->who, h->name, argv[n - 2], c->mount_point, code,
                 line ? line : "", use_efs ? ", amazon-efs-utils" : "");
        free(line);
        st = DT_ERR_IO;
    }
    free(out);
    free(args);
    dt_strv_free(argv);
    return st;
}

static dt_status_t mount_host(void *arg, size_t i, const dt_host_t *h)
{
    (void)i;
    return ensure_mounted(arg, h);
}

/* The data path on an accepted file system (and under mount_point). */
static dt_status_t check_host(void *arg, size_t i, const dt_host_t *h)
{
    nfs_run_t *r = arg;
    nfs_cfg_t *c = r->c;
    host_view_t *hv = &r->v[i];
    dt_status_t st = probe(r, h, r->req->src, hv, NULL);
    if (st == DT_ERR_NOT_FOUND) {
        dt_error("%s: host %s: the data set path %s does not exist there; "
                 "mount the share at the same path on every host%s",
                 c->who, h->name, r->req->src,
                 c->mount ? "" : " (or set mount = yes)");
        return st;
    }
    if (st != DT_OK)
        return st;
    if (!fstype_ok(c, hv->mount.fstype)) {
        char *types = fstypes_text(c);
        dt_error("%s: host %s: %s is on a %s file system (mounted at %s "
                 "from %s), not on %s: mount the share there%s, or list the "
                 "type in [%s] fstypes",
                 c->who, h->name, hv->real, hv->mount.fstype,
                 hv->mount.mount_point, hv->mount.source,
                 types ? types : "NFS",
                 c->mount ? "" : " (or set mount = yes with server)",
                 c->section);
        free(types);
        return DT_ERR_NOT_FOUND;
    }
    if (c->mount_point && strcmp(hv->mount.mount_point, c->mount_point)) {
        dt_error("%s: host %s: %s is on the mount at %s, not on [%s] "
                 "mount_point = %s; put the data set on the share or fix "
                 "mount_point",
                 c->who, h->name, hv->real, hv->mount.mount_point,
                 c->section, c->mount_point);
        return DT_ERR_NOT_FOUND;
    }
    hv->ok = 1;
    dt_debug("%s: host %s: %s on %s from %s (mounted at %s)", c->who, h->name,
             hv->real, hv->mount.fstype, hv->mount.source,
             hv->mount.mount_point);
    return DT_OK;
}

/* Every host mounts the same export (same source text). */
static dt_status_t same_source(nfs_run_t *r)
{
    const dt_hostlist_t *hl = r->req->hosts;
    dt_status_t st = DT_OK;
    for (size_t i = 1; i < hl->n; i++)
        if (strcmp(r->v[i].mount.source, r->v[0].mount.source) != 0) {
            dt_error("%s: host %s mounts %s from %s but host %s (rank 0's) "
                     "from %s: every host must mount the same export",
                     r->c->who, hl->hosts[i].name, r->v[i].mount.mount_point,
                     r->v[i].mount.source, hl->hosts[0].name,
                     r->v[0].mount.source);
            st = DT_ERR_INVALID;
        }
    return st;
}

/* Whether text holds line as one whole line. The marker is looked for
 * among the lines, not compared with the whole output: a login shell on
 * the host may print lines of its own around the command's (seen: pyenv's
 * "cannot rehash" from a root .bashrc when two sessions start at once). */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && p[len - 1] == '\r')
            len--;
        if (len == n && strncmp(p, line, n) == 0)
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static dt_status_t read_back(void *arg, size_t i, const dt_host_t *h)
{
    nfs_run_t *r = arg;
    (void)i;
    const char *args[] = {r->dir, r->marker_name, NULL};
    char *out = NULL;
    int code = 0;
    DT_CHECK(stg_run(r->req, h,
                     "cat -- \"$1/$2\" 2>/dev/null || echo DT-VIEW-MISSING",
                     args, &out, &code));
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    dt_status_t st = DT_OK;
    if (!has_line(out, r->marker_text)) {
        int missing = strstr(out, "DT-VIEW-MISSING") != NULL;
        dt_error("%s: host %s does not see the file %s/%s that rank 0's "
                 "host %s wrote (%s%s%s): the hosts do not share %s (a local "
                 "directory of the same name?); mount the same export at "
                 "the same path on every host",
                 r->c->who, h->name, r->dir, r->marker_name,
                 r->req->hosts->hosts[0].name,
                 missing ? "no such file there" : "it reads '",
                 missing ? "" : out, missing ? "" : "'", r->dir);
        st = DT_ERR_NOT_FOUND;
    }
    free(out);
    return st;
}

static dt_status_t shared_view(nfs_run_t *r)
{
    const dt_host_t *h0 = &r->req->hosts->hosts[0];
    unsigned char nonce[8];
    char name[96], text[160];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, nonce, sizeof nonce) != (ssize_t)sizeof nonce) {
        if (fd >= 0)
            close(fd);
        return DT_ERR_IO;
    }
    close(fd);
    const char *job = r->req->job_id ? r->req->job_id : "nojob";
    snprintf(name, sizeof name, ".dt-view-%s", job);
    int w = snprintf(text, sizeof text, "job %s nonce ", job);
    for (size_t i = 0; i < sizeof nonce && w > 0; i++)
        w += snprintf(text + w, sizeof text - (size_t)w, "%02x", nonce[i]);
    r->marker_name = name;
    r->marker_text = text;
    const char *args[] = {r->dir, name, text, NULL};
    char *out = NULL;
    int code = 0;
    DT_CHECK(stg_run(r->req, h0,
                     "mkdir -p -- \"$1\" && printf '%s\\n' \"$3\" > "
                     "\"$1/$2\" && echo DT-VIEW ok",
                     args, &out, &code));
    if (!strstr(out, "DT-VIEW ok")) {
        char *line = stg_one_line(out);
        dt_error("%s: host %s (rank 0's): cannot write the shared directory "
                 "%s: %s; set [%s] shared_dir to a writable directory on the "
                 "share",
                 r->c->who, h0->name, r->dir, line ? line : "",
                 r->c->section);
        free(line);
        free(out);
        return DT_ERR_IO;
    }
    free(out);
    dt_status_t st = stg_for_each_host(r->req->hosts, r->c->max_parallel,
                                       read_back, r);
    const char *rm[] = {r->dir, name, NULL};
    if (stg_run(r->req, h0, "rm -f -- \"$1/$2\"", rm, &out, &code) == DT_OK)
        free(out);
    if (st == DT_OK)
        dt_info("%s: %zu host%s share %s (checked with a marker of job %s)",
                r->c->who, r->req->hosts->n,
                r->req->hosts->n == 1 ? "" : "s", r->dir, job);
    return st;
}

/* The shared directory: shared_dir (absolute, or under the mount point),
 * else <mount point of the data on rank 0's host>/dt. malloc'd. */
static char *shared_path(const nfs_cfg_t *c, const host_view_t *v0)
{
    char *p = NULL;
    const char *mp = c->mount_point ? c->mount_point : v0->mount.mount_point;
    const char *sep = strcmp(mp, "/") == 0 ? "" : "/";
    int rc;
    if (c->shared_dir && c->shared_dir[0] == '/')
        rc = asprintf(&p, "%s", c->shared_dir);
    else
        rc = asprintf(&p, "%s%s%s", mp, sep,
                      c->shared_dir ? c->shared_dir : "dt");
    return rc < 0 ? NULL : p;
}

dt_status_t nfs_verify(nfs_cfg_t *c, const dt_stage_request_t *req)
{
    if (!req || !req->src || !req->hosts || req->hosts->n == 0)
        return DT_ERR_INVALID;
    nfs_run_t r = {c, req, calloc(req->hosts->n, sizeof *r.v), NULL, NULL,
                   NULL};
    if (!r.v)
        return DT_ERR_NOMEM;
    dt_status_t st = stg_for_each_host(req->hosts, c->max_parallel,
                                       check_host, &r);
    if (st == DT_OK)
        st = same_source(&r);
    char *dir = NULL;
    if (st == DT_OK && !(dir = shared_path(c, &r.v[0])))
        st = DT_ERR_NOMEM;
    if (st == DT_OK) {
        r.dir = dir;
        st = shared_view(&r);
    }
    if (st == DT_OK) {
        free(c->resolved_shared);
        c->resolved_shared = dir;
        dir = NULL;
    }
    free(dir);
    free(r.v);
    return st;
}

dt_status_t nfs_stage(nfs_cfg_t *c, const dt_stage_request_t *req,
                      char **worker_path)
{
    if (!req || !req->src || !req->hosts)
        return DT_ERR_INVALID;
    if (c->mount) {
        nfs_run_t r = {c, req, NULL, NULL, NULL, NULL};
        DT_CHECK(stg_for_each_host(req->hosts, c->max_parallel, mount_host,
                                   &r));
    }
    DT_CHECK(nfs_verify(c, req));
    return (*worker_path = strdup(req->src)) ? DT_OK : DT_ERR_NOMEM;
}

dt_status_t nfs_shared_dir(nfs_cfg_t *c, const dt_stage_request_t *req,
                           char **path)
{
    /* Known without looking (--no-stage) when configured absolutely. */
    if (!c->resolved_shared &&
        ((c->shared_dir && c->shared_dir[0] == '/') || c->mount_point)) {
        host_view_t v0;
        memset(&v0, 0, sizeof v0);
        if (!(c->resolved_shared = shared_path(c, &v0)))
            return DT_ERR_NOMEM;
    }
    if (!c->resolved_shared)
        DT_CHECK(nfs_verify(c, req));
    return (*path = strdup(c->resolved_shared)) ? DT_OK : DT_ERR_NOMEM;
}
