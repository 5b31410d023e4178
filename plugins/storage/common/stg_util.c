/* stg_util.c — small helpers of the storage plugins: reading tagged lines
 * of a remote script's output, one-line error texts, keys, "{host}". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "stg.h"

const char *stg_line_value(const char *out, const char *tag, char *buf,
                           size_t len)
{
    size_t tl = strlen(tag);
    for (const char *l = out; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t ll = e ? (size_t)(e - l) : strlen(l);
        if (ll >= tl + 1 && strncmp(l, tag, tl) == 0 && l[tl] == ' ') {
            size_t vl = ll - tl - 1;
            if (vl >= len)
                vl = len - 1;
            memcpy(buf, l + tl + 1, vl);
            buf[vl] = '\0';
            return buf;
        }
        l = e ? e + 1 : NULL;
    }
    return NULL;
}

char *stg_one_line(const char *out)
{
    size_t n = out ? strlen(out) : 0;
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    char *s = malloc(2 * n + 1), *w = s;
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (out[i] == '\n') {
            *w++ = ';';
            *w++ = ' ';
        } else if (out[i] != '\r') {
            *w++ = out[i];
        }
    }
    *w = '\0';
    return s;
}

dt_status_t stg_opt_string(const dt_config_t *cfg, const char *section,
                           const char *key, char **out)
{
    const char *v = NULL;
    *out = NULL;
    dt_status_t st = dt_config_get_string(cfg, section, key, &v);
    if (st == DT_ERR_NOT_FOUND || (st == DT_OK && (!v || !*v)))
        return DT_OK;
    if (st != DT_OK)
        return st;
    return (*out = strdup(v)) ? DT_OK : DT_ERR_NOMEM;
}

dt_status_t stg_get_parallel(const dt_config_t *cfg, const char *section,
                             int *out)
{
    long long v = 8;
    DT_CHECK(dt_config_get_int(cfg, section, "max_parallel", &v));
    if (v < 1 || v > 1024) {
        dt_error("[%s] max_parallel = %lld: want 1 to 1024 hosts at a time",
                 section, v);
        return DT_ERR_CONFIG;
    }
    *out = (int)v;
    return DT_OK;
}

dt_status_t stg_check_absolute(const char *section, const char *key,
                               const char *path)
{
    if (path && path[0] == '/')
        return DT_OK;
    dt_error("[%s] %s = '%s' must be an absolute path (the same text is "
             "used on every host)",
             section, key, path ? path : "");
    return DT_ERR_CONFIG;
}

char *stg_expand_host(const char *pattern, const char *host)
{
    static const char tok[] = "{host}";
    size_t n = 1, tl = sizeof tok - 1, hl = strlen(host);
    for (const char *p = pattern; *p;)
        if (strncmp(p, tok, tl) == 0) {
            n += hl;
            p += tl;
        } else {
            n++;
            p++;
        }
    char *s = malloc(n), *w = s;
    if (!s)
        return NULL;
    for (const char *p = pattern; *p;)
        if (strncmp(p, tok, tl) == 0) {
            memcpy(w, host, hl);
            w += hl;
            p += tl;
        } else {
            *w++ = *p++;
        }
    *w = '\0';
    return s;
}

const char *stg_bytes_text(unsigned long long n, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", n);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}
