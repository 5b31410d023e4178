/* staging.c — the worker's side of data staging: which directory to read
 * (dt/staging.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dt/log.h>
#include <dt/staging.h>
#include "dataset.h"

/* The same name as the storage plugins' STG_MARK_BUSY: present while a
 * copy is incomplete. */
#define MARK_BUSY ".dt-staging"

static char *expand_host(const char *pattern, const char *host)
{
    static const char tok[] = "{host}";
    const char *at = strstr(pattern, tok);
    if (!at)
        return strdup(pattern);
    char *rest = expand_host(at + sizeof tok - 1, host), *out = NULL;
    if (!rest)
        return NULL;
    if (asprintf(&out, "%.*s%s%s", (int)(at - pattern), pattern, host,
                 rest) < 0)
        out = NULL;
    free(rest);
    return out;
}

dt_status_t dt_data_path(const dt_config_t *cfg, char **path)
{
    if (!path)
        return DT_ERR_INVALID;
    *path = NULL;
    const char *env = getenv("DT_DATA_PATH");
    const char *p = env && *env ? env : NULL;
    if (!p && cfg)
        p = dt_config_get(cfg, "data", "path");
    if (!p || !*p) {
        dt_error("no data set path: set [data] path in the job file (dtctl "
                 "run stages it and passes DT_DATA_PATH to the workers)");
        return DT_ERR_NOT_FOUND;
    }
    return dt_data_dir_resolve(p, path);
}

dt_status_t dt_data_dir_resolve(const char *p, char **path)
{
    *path = NULL;
    if (strstr(p, "{host}") && !getenv("DT_HOST")) {
        dt_error("the data set path %s names {host} but DT_HOST is not set: "
                 "start the workers with dtctl run",
                 p);
        return DT_ERR_INVALID;
    }
    char *full = expand_host(p, getenv("DT_HOST") ? getenv("DT_HOST") : "");
    char *busy = NULL;
    if (!full || asprintf(&busy, "%s/%s", full, MARK_BUSY) < 0) {
        free(full);
        return DT_ERR_NOMEM;
    }
    struct stat sb;
    dt_status_t st = DT_OK;
    if (stat(busy, &sb) == 0) {
        dt_error("the data set at %s is incomplete (%s is there: a copy was "
                 "interrupted); run `dtctl stage JOB.ini` again",
                 full, MARK_BUSY);
        st = DT_ERR_IO;
        free(full);
        full = NULL;
    }
    free(busy);
    *path = full;
    return st;
}

dt_status_t dt_shared_dir(char **path)
{
    if (!path)
        return DT_ERR_INVALID;
    *path = NULL;
    const char *env = getenv("DT_SHARED_DIR");
    if (!env || !*env)
        return DT_ERR_NOT_FOUND;
    return (*path = strdup(env)) ? DT_OK : DT_ERR_NOMEM;
}
