/* mountinfo.c — parse /proc/self/mountinfo text and find a path's mount. */
#include <stdlib.h>
#include <string.h>

#include "mountinfo.h"

static int is_octal(char c) { return c >= '0' && c <= '7'; }

void mi_unescape(const char *in, size_t in_len, char *out, size_t len)
{
    size_t w = 0;
    for (size_t i = 0; i < in_len && w + 1 < len; i++) {
        if (in[i] == '\\' && i + 3 < in_len && is_octal(in[i + 1]) &&
            is_octal(in[i + 2]) && is_octal(in[i + 3])) {
            out[w++] = (char)(((in[i + 1] - '0') << 6) |
                              ((in[i + 2] - '0') << 3) | (in[i + 3] - '0'));
            i += 3;
        } else {
            out[w++] = in[i];
        }
    }
    out[w] = '\0';
}

/* The next space-separated field of [*p, end): its start and length. */
static int next_field(const char **p, const char *end, const char **f,
                      size_t *fl)
{
    const char *s = *p;
    while (s < end && *s == ' ')
        s++;
    if (s >= end)
        return 0;
    const char *e = s;
    while (e < end && *e != ' ')
        e++;
    *f = s;
    *fl = (size_t)(e - s);
    *p = e;
    return 1;
}

static void copy_field(const char *f, size_t fl, char *out, size_t len)
{
    if (fl >= len)
        fl = len - 1;
    memcpy(out, f, fl);
    out[fl] = '\0';
}

dt_status_t mi_parse_line(const char *line, size_t len, mi_entry_t *e)
{
    const char *p = line, *end = line + len, *f;
    size_t fl;
    while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
        end--;
    /* id, parent, major:minor */
    for (int i = 0; i < 3; i++)
        if (!next_field(&p, end, &f, &fl))
            return DT_ERR_INVALID;
    if (!next_field(&p, end, &f, &fl))
        return DT_ERR_INVALID;
    mi_unescape(f, fl, e->root, sizeof e->root);
    if (!next_field(&p, end, &f, &fl) || f[0] != '/')
        return DT_ERR_INVALID;
    mi_unescape(f, fl, e->mount_point, sizeof e->mount_point);
    if (!next_field(&p, end, &f, &fl))
        return DT_ERR_INVALID;
    copy_field(f, fl, e->options, sizeof e->options);
    /* Optional fields up to the lone "-". */
    for (;;) {
        if (!next_field(&p, end, &f, &fl))
            return DT_ERR_INVALID;
        if (fl == 1 && f[0] == '-')
            break;
    }
    if (!next_field(&p, end, &f, &fl))
        return DT_ERR_INVALID;
    copy_field(f, fl, e->fstype, sizeof e->fstype);
    if (!next_field(&p, end, &f, &fl))
        return DT_ERR_INVALID;
    mi_unescape(f, fl, e->source, sizeof e->source);
    return DT_OK;
}

/* Is mount point m the path or one of its parent directories? */
static int covers(const char *m, const char *path)
{
    size_t n = strlen(m);
    if (n == 1 && m[0] == '/')
        return 1;
    return strncmp(m, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

dt_status_t mi_find(const char *text, const char *path, mi_entry_t *out)
{
    if (!path || path[0] != '/')
        return DT_ERR_INVALID;
    mi_entry_t *e = malloc(sizeof *e);
    if (!e)
        return DT_ERR_NOMEM;
    size_t best = 0;
    int found = 0;
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t ll = nl ? (size_t)(nl - l) : strlen(l);
        if (mi_parse_line(l, ll, e) == DT_OK && covers(e->mount_point, path)) {
            size_t n = strlen(e->mount_point);
            if (!found || n >= best) {
                *out = *e;
                best = n;
                found = 1;
            }
        }
        l = nl ? nl + 1 : NULL;
    }
    free(e);
    return found ? DT_OK : DT_ERR_NOT_FOUND;
}
