/* nfs_cmd.c — build the mount command and EFS's DNS name. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/config.h>
#include <dt/log.h>
#include "nfs_cmd.h"

/* No blanks, commas or quotes: text that travels as one argument and
 * must not smuggle in another option. */
static int plain(const char *s)
{
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\'' ||
            *p == '"' || *p == '\\')
            return 0;
    return 1;
}

dt_status_t nfs_mount_argv(const char *section, const nfs_mount_spec_t *s,
                           char ***argv)
{
    *argv = NULL;
    const char *who = s->efs_utils ? s->fs_id : s->server;
    const char *exp = s->export_path && *s->export_path ? s->export_path
                                                        : "/";
    if (!plain(who) || strchr(who, ',') || who[0] == '-') {
        dt_error("[%s] %s = '%s' is not usable in a mount command (empty, or "
                 "blanks, quotes or commas in it)",
                 section, s->efs_utils ? "fs_id" : "server", who ? who : "");
        return DT_ERR_INVALID;
    }
    if (exp[0] != '/' || strpbrk(exp, " \t\n")) {
        dt_error("[%s] export = '%s' must be an absolute path on the server "
                 "without blanks",
                 section, exp);
        return DT_ERR_INVALID;
    }
    if (!s->mount_point || s->mount_point[0] != '/') {
        dt_error("[%s] mount_point = '%s' must be an absolute path", section,
                 s->mount_point ? s->mount_point : "");
        return DT_ERR_INVALID;
    }
    if (s->options && *s->options && !plain(s->options)) {
        dt_error("[%s] options = '%s': mount options are one comma-separated "
                 "list without blanks or quotes",
                 section, s->options);
        return DT_ERR_INVALID;
    }
    if (s->efs_utils && s->region && *s->region && !plain(s->region)) {
        dt_error("[%s] region = '%s' is not a region name", section,
                 s->region);
        return DT_ERR_INVALID;
    }
    char *opts = NULL, *what = NULL;
    int have_opts = s->options && *s->options;
    int add_region = s->efs_utils && s->region && *s->region;
    int r;
    if (have_opts && add_region)
        r = asprintf(&opts, "%s,region=%s", s->options, s->region);
    else if (add_region)
        r = asprintf(&opts, "region=%s", s->region);
    else if (have_opts)
        r = asprintf(&opts, "%s", s->options);
    else
        r = 0;
    if (r < 0)
        return DT_ERR_NOMEM;
    int v6 = !s->efs_utils && strchr(who, ':') && who[0] != '[';
    if (asprintf(&what, v6 ? "[%s]:%s" : "%s:%s", who, exp) < 0) {
        free(opts);
        return DT_ERR_NOMEM;
    }
    char **v = calloc(8, sizeof *v);
    size_t n = 0;
    dt_status_t st = DT_ERR_NOMEM;
    if (!v)
        goto out;
    if (!(v[n++] = strdup("mount")) || !(v[n++] = strdup("-t")) ||
        !(v[n++] = strdup(s->efs_utils ? "efs" : "nfs4")))
        goto out;
    if (opts && (!(v[n++] = strdup("-o")) || !(v[n++] = strdup(opts))))
        goto out;
    if (!(v[n++] = what) || !(v[n++] = strdup(s->mount_point)))
        goto out;
    what = NULL;
    *argv = v;
    v = NULL;
    st = DT_OK;
out:
    free(opts);
    free(what);
    if (v)
        dt_strv_free(v);
    return st;
}

dt_status_t efs_dns_name(const char *section, const char *fs_id,
                         const char *region, char *buf, size_t len)
{
    int ok = fs_id && strncmp(fs_id, "fs-", 3) == 0 && strlen(fs_id) >= 11 &&
             strlen(fs_id) <= 24;
    for (const char *p = fs_id ? fs_id + 3 : ""; ok && *p; p++)
        ok = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
    if (!ok) {
        dt_error("[%s] fs_id = '%s' is not an EFS file system id (fs- and 8 "
                 "to 21 hex digits, e.g. fs-0123abcd)",
                 section, fs_id ? fs_id : "");
        return DT_ERR_INVALID;
    }
    ok = region && *region;
    for (const char *p = region ? region : ""; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
             *p == '-';
    if (!ok) {
        dt_error("[%s] region = '%s' is not an AWS region (e.g. us-east-1); "
                 "set it to the file system's region",
                 section, region ? region : "");
        return DT_ERR_INVALID;
    }
    if ((size_t)snprintf(buf, len, "%s.efs.%s.amazonaws.com", fs_id,
                         region) >= len)
        return DT_ERR_INVALID;
    return DT_OK;
}
