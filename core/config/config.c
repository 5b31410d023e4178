/* config.c — the layered configuration store: sections, values with their
 * origin, precedence, schemas, the type check of one value and the typed
 * getters. Files and the environment are read in config_load.c, checked
 * against the schemas in config_validate.c; both build on this file
 * (config_internal.h), and this file on neither. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "config_internal.h"
#include "config_schema.h"

const char *dt_config_source_name(dt_config_source_t src)
{
    switch (src) {
    case DT_SRC_DEFAULT: return "default";
    case DT_SRC_CLUSTER_FILE: return "cluster file";
    case DT_SRC_JOB_FILE: return "job file";
    case DT_SRC_ENV: return "environment";
    case DT_SRC_CLI: return "command line";
    }
    return "unknown source";
}

cfg_section_t *cfg_find_section(const dt_config_t *cfg, const char *name)
{
    for (size_t i = 0; cfg && i < cfg->n; i++)
        if (strcmp(cfg->sections[i]->name, name) == 0)
            return cfg->sections[i];
    return NULL;
}

cfg_entry_t *cfg_find_entry(const cfg_section_t *sec, const char *key)
{
    for (size_t i = 0; sec && i < sec->n; i++)
        if (strcmp(sec->entries[i].key, key) == 0)
            return &sec->entries[i];
    return NULL;
}

const dt_key_spec_t *cfg_find_spec(const dt_key_spec_t *schema,
                                   const char *key)
{
    for (const dt_key_spec_t *k = schema; k && k->name; k++)
        if (strcmp(k->name, key) == 0)
            return k;
    return NULL;
}

char *cfg_key_names(const dt_key_spec_t *schema)
{
    size_t len = 1;
    for (const dt_key_spec_t *k = schema; k && k->name; k++)
        len += strlen(k->name) + 2;
    char *s = calloc(1, len);
    for (const dt_key_spec_t *k = schema; s && k && k->name; k++) {
        if (k != schema)
            strcat(s, ", ");
        strcat(s, k->name);
    }
    if (s && !*s) {
        free(s);
        s = strdup("(none: this section takes no keys)");
    }
    return s;
}

/* Length of the valid UTF-8 sequence at s that is no control character
 * (C1, U+0080-U+009F, included), 0 if there is none. */
static size_t utf8_printable(const unsigned char *s)
{
    size_t n;
    unsigned min;
    unsigned cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2, min = 0x80, cp = s[0] & 0x1f;
    } else if ((s[0] & 0xf0) == 0xe0) {
        n = 3, min = 0x800, cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4, min = 0x10000, cp = s[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
        (cp >= 0x80 && cp <= 0x9f))
        return 0;
    return n;
}

const char *dt_config_printable(const char *text, char *buf, size_t len)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t o = 0;
    if (len == 0)
        return buf;
    while (*s) {
        size_t n = *s >= 0x20 && *s < 0x7f ? 1
                   : *s >= 0x80     ? utf8_printable(s)
                                    : 0;
        size_t need = n ? n : 4;
        if (o + need + 4 > len) { /* keep room for "..." and the NUL */
            if (o + 4 <= len) {
                memcpy(buf + o, "...", 3);
                o += 3;
            }
            break;
        }
        if (n) {
            memcpy(buf + o, s, n);
            o += n;
            s += n;
        } else {
            snprintf(buf + o, 5, "\\x%02x", *s);
            o += 4;
            s++;
        }
    }
    buf[o] = '\0';
    return buf;
}

const char *cfg_origin_text(const cfg_entry_t *e, char *buf, size_t len)
{
    char w[CFG_PRINTABLE_MAX];
    dt_config_printable(e->where, w, sizeof w);
    switch (e->src) {
    case DT_SRC_CLUSTER_FILE:
    case DT_SRC_JOB_FILE: snprintf(buf, len, "%s", w); break;
    case DT_SRC_ENV:
        snprintf(buf, len, "environment variable %s", w);
        break;
    case DT_SRC_CLI: snprintf(buf, len, "option %s", w); break;
    default: snprintf(buf, len, "built-in default"); break;
    }
    return buf;
}

static cfg_section_t *get_section(dt_config_t *cfg, const char *name)
{
    cfg_section_t *sec = cfg_find_section(cfg, name);
    if (sec)
        return sec;
    if (cfg->n == cfg->cap) {
        size_t cap = cfg->cap ? cfg->cap * 2 : 8;
        cfg_section_t **v = realloc(cfg->sections, cap * sizeof *v);
        if (!v)
            return NULL;
        cfg->sections = v;
        cfg->cap = cap;
    }
    sec = calloc(1, sizeof *sec);
    if (!sec || !(sec->name = strdup(name))) {
        free(sec);
        return NULL;
    }
    cfg->sections[cfg->n++] = sec;
    return sec;
}

static void entry_clear(cfg_entry_t *e)
{
    free(e->key);
    free(e->value);
    free(e->where);
}

static void remove_entry(cfg_section_t *sec, cfg_entry_t *e)
{
    size_t i = (size_t)(e - sec->entries);
    entry_clear(e);
    memmove(e, e + 1, (sec->n - i - 1) * sizeof *e);
    sec->n--;
}

/* The file part of a "file:line" origin, for spotting a key set twice in
 * one file. */
static int same_file(const char *a, const char *b)
{
    const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
    return ca && cb && ca - a == cb - b && strncmp(a, b, (size_t)(ca - a)) == 0;
}

dt_status_t dt_config_set(dt_config_t *cfg, const char *section,
                          const char *key, const char *value,
                          dt_config_source_t src, const char *where)
{
    if (!cfg || !section || !key || !value)
        return DT_ERR_INVALID;
    if (!where)
        where = dt_config_source_name(src);
    cfg_section_t *sec = get_section(cfg, section);
    if (!sec)
        return DT_ERR_NOMEM;
    cfg_entry_t *e = cfg_find_entry(sec, key);
    if (e && e->src > src)
        return DT_OK; /* a higher source already set it */
    if (e && e->src == src &&
        (src == DT_SRC_CLUSTER_FILE || src == DT_SRC_JOB_FILE) &&
        same_file(e->where, where))
    {
        char pw[CFG_PRINTABLE_MAX], ps[CFG_PRINTABLE_MAX],
            pk[CFG_PRINTABLE_MAX], pf[CFG_PRINTABLE_MAX],
            pv[CFG_PRINTABLE_MAX];
        dt_warn("%s: [%s] %s is set again (first at %s); the later value "
                "'%s' wins",
                dt_config_printable(where, pw, sizeof pw),
                dt_config_printable(section, ps, sizeof ps),
                dt_config_printable(key, pk, sizeof pk),
                dt_config_printable(e->where, pf, sizeof pf),
                dt_config_printable(value, pv, sizeof pv));
    }
    char *v = strdup(value), *w = strdup(where), *k = e ? NULL : strdup(key);
    if (!v || !w || (!e && !k)) {
        free(v);
        free(w);
        free(k);
        return DT_ERR_NOMEM;
    }
    if (!e) {
        if (sec->n == sec->cap) {
            size_t cap = sec->cap ? sec->cap * 2 : 8;
            cfg_entry_t *nv = realloc(sec->entries, cap * sizeof *nv);
            if (!nv) {
                free(v);
                free(w);
                free(k);
                return DT_ERR_NOMEM;
            }
            sec->entries = nv;
            sec->cap = cap;
        }
        e = &sec->entries[sec->n++];
        e->key = k;
    } else {
        free(e->value);
        free(e->where);
    }
    e->value = v;
    e->where = w;
    e->src = src;
    return DT_OK;
}

dt_status_t dt_config_add_schema(dt_config_t *cfg, const char *section,
                                 const dt_key_spec_t *keys)
{
    if (!cfg || !section || !keys)
        return DT_ERR_INVALID;
    cfg_section_t *sec = get_section(cfg, section);
    if (!sec)
        return DT_ERR_NOMEM;
    /* Defaults of a replaced table go; values from real sources stay. */
    for (size_t i = sec->n; i-- > 0;) {
        cfg_entry_t *e = &sec->entries[i];
        const dt_key_spec_t *spec = cfg_find_spec(keys, e->key);
        if (e->src == DT_SRC_DEFAULT && (!spec || !spec->default_value))
            remove_entry(sec, e);
    }
    sec->schema = keys;
    for (const dt_key_spec_t *k = keys; k->name; k++)
        if (k->default_value) {
            dt_status_t st = dt_config_set(cfg, section, k->name,
                                           k->default_value, DT_SRC_DEFAULT,
                                           "default");
            if (st != DT_OK)
                return st;
        }
    return DT_OK;
}

const dt_key_spec_t *dt_config_schema(const dt_config_t *cfg,
                                      const char *section)
{
    cfg_section_t *sec = section ? cfg_find_section(cfg, section) : NULL;
    return sec ? sec->schema : NULL;
}

dt_status_t dt_config_new(dt_config_t **out)
{
    if (!out)
        return DT_ERR_INVALID;
    dt_config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return DT_ERR_NOMEM;
    for (const dt_core_schema_t *s = dt_config_core_schemas(); s->section;
         s++) {
        dt_status_t st = dt_config_add_schema(cfg, s->section, s->keys);
        if (st != DT_OK) {
            dt_config_free(cfg);
            return st;
        }
    }
    *out = cfg;
    return DT_OK;
}

void dt_config_free(dt_config_t *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n; i++) {
        cfg_section_t *sec = cfg->sections[i];
        for (size_t j = 0; j < sec->n; j++)
            entry_clear(&sec->entries[j]);
        free(sec->entries);
        free(sec->name);
        free(sec);
    }
    free(cfg->sections);
    free(cfg);
}

dt_status_t dt_config_set_assignment(dt_config_t *cfg, const char *assignment,
                                     dt_config_source_t src)
{
    if (!cfg || !assignment)
        return DT_ERR_INVALID;
    const char *eq = strchr(assignment, '=');
    const char *dot = NULL;
    for (const char *c = assignment; eq && c < eq; c++)
        if (*c == '.')
            dot = c;
    /* Trim blanks around the section, the key and the value. */
    const char *s0 = assignment, *s1 = dot, *k0 = dot ? dot + 1 : NULL,
               *k1 = eq, *v0 = eq ? eq + 1 : NULL;
    while (s1 && s0 < s1 && (*s0 == ' ' || *s0 == '\t'))
        s0++;
    while (s1 && s1 > s0 && (s1[-1] == ' ' || s1[-1] == '\t'))
        s1--;
    while (k0 && k0 < k1 && (*k0 == ' ' || *k0 == '\t'))
        k0++;
    while (k0 && k1 > k0 && (k1[-1] == ' ' || k1[-1] == '\t'))
        k1--;
    while (v0 && (*v0 == ' ' || *v0 == '\t'))
        v0++;
    if (!eq || !dot || s1 == s0 || k1 == k0) {
        char pa[CFG_PRINTABLE_MAX];
        dt_error("--set '%s': want SECTION.KEY=VALUE, e.g. --set cluster.np=4 "
                 "or --set transport.tcp.timeout=5s",
                 dt_config_printable(assignment, pa, sizeof pa));
        cfg->load_problems++;
        return DT_ERR_CONFIG;
    }
    char *section = strndup(s0, (size_t)(s1 - s0));
    char *key = strndup(k0, (size_t)(k1 - k0));
    char *value = strdup(v0);
    dt_status_t st = DT_ERR_NOMEM;
    if (section && key && value) {
        size_t n = strlen(value);
        while (n && (value[n - 1] == ' ' || value[n - 1] == '\t'))
            value[--n] = '\0';
        st = dt_config_set(cfg, section, key, value, src, "--set");
    }
    free(section);
    free(key);
    free(value);
    return st;
}

dt_status_t dt_config_origin(const dt_config_t *cfg, const char *section,
                             const char *key, dt_config_source_t *src,
                             const char **where)
{
    if (!cfg || !section || !key)
        return DT_ERR_INVALID;
    cfg_entry_t *e = cfg_find_entry(cfg_find_section(cfg, section), key);
    if (!e)
        return DT_ERR_NOT_FOUND;
    if (src)
        *src = e->src;
    if (where)
        *where = e->where;
    return DT_OK;
}

void dt_config_foreach(const dt_config_t *cfg, dt_config_visit_fn cb,
                       void *arg)
{
    for (size_t i = 0; cfg && i < cfg->n; i++) {
        const cfg_section_t *sec = cfg->sections[i];
        /* Schema order first (as documented), then keys it does not know. */
        for (const dt_key_spec_t *k = sec->schema; k && k->name; k++) {
            const cfg_entry_t *e = cfg_find_entry(sec, k->name);
            if (e && cb(sec->name, e->key, e->value, e->src, e->where, arg))
                return;
        }
        for (size_t j = 0; j < sec->n; j++) {
            const cfg_entry_t *e = &sec->entries[j];
            if (!cfg_find_spec(sec->schema, e->key) &&
                cb(sec->name, e->key, e->value, e->src, e->where, arg))
                return;
        }
    }
}

/* ---- getters ------------------------------------------------------------ */

const char *cfg_type_expectation(dt_key_type_t type)
{
    switch (type) {
    case DT_KEY_INT: return "is not an integer";
    case DT_KEY_BOOL:
        return "is not a boolean (yes/no, true/false, on/off, 1/0)";
    case DT_KEY_SIZE:
        return "is not a size (bytes, or a number with K, M, G or T, "
               "e.g. 25M)";
    case DT_KEY_DURATION:
        return "is not a duration (seconds, or a number with ns, us, ms, s, "
               "m (min) or h, "
               "e.g. 500ms, 30s, 5m)";
    case DT_KEY_DOUBLE:
        return "is not a number (e.g. 0.05, 1e-4; no nan or inf)";
    case DT_KEY_WORDS:
        return "has a quote left open or a backslash at its end (words "
               "are split as sh would: '...', \"...\", \\)";
    default: return "is not valid";
    }
}

dt_status_t cfg_value_parses(const char *value, dt_key_type_t type)
{
    long long i;
    bool b;
    uint64_t sz;
    double d;
    char **items;
    size_t n;
    dt_status_t st;
    switch (type) {
    case DT_KEY_STRING: return DT_OK;
    case DT_KEY_INT: return dt_parse_int(value, &i);
    case DT_KEY_BOOL: return dt_parse_bool(value, &b);
    case DT_KEY_SIZE: return dt_parse_size(value, &sz);
    case DT_KEY_DURATION: return dt_parse_duration(value, &d);
    case DT_KEY_DOUBLE: return dt_parse_double(value, &d);
    case DT_KEY_LIST:
    case DT_KEY_WORDS:
        st = type == DT_KEY_LIST ? dt_parse_list(value, &items, &n)
                                 : dt_parse_words(value, &items, &n);
        if (st == DT_OK)
            dt_strv_free(items);
        return st;
    }
    return DT_ERR_INVALID; /* not a dt_key_type_t */
}

/* One value against its type: the typed getters check on read, and
 * dt_config_validate (config_validate.c) checks every value. */
dt_status_t cfg_check_type(const char *section, const cfg_entry_t *e,
                           dt_key_type_t type)
{
    dt_status_t st = cfg_value_parses(e->value, type);
    if (st == DT_OK || st == DT_ERR_NOMEM)
        return st;
    char where[512], ps[CFG_PRINTABLE_MAX], pk[CFG_PRINTABLE_MAX],
        pv[CFG_PRINTABLE_MAX];
    dt_error("%s: [%s] %s = '%s' %s", cfg_origin_text(e, where, sizeof where),
             dt_config_printable(section, ps, sizeof ps),
             dt_config_printable(e->key, pk, sizeof pk),
             dt_config_printable(e->value, pv, sizeof pv),
             cfg_type_expectation(type));
    return DT_ERR_CONFIG;
}

const char *dt_config_get(const dt_config_t *cfg, const char *section,
                          const char *key)
{
    if (!cfg || !section || !key)
        return NULL;
    cfg_entry_t *e = cfg_find_entry(cfg_find_section(cfg, section), key);
    return e ? e->value : NULL;
}

static dt_status_t lookup(const dt_config_t *cfg, const char *section,
                          const char *key, dt_key_type_t type,
                          const cfg_entry_t **out)
{
    if (!cfg || !section || !key)
        return DT_ERR_INVALID;
    const cfg_entry_t *e =
        cfg_find_entry(cfg_find_section(cfg, section), key);
    if (!e)
        return DT_ERR_NOT_FOUND;
    DT_CHECK(cfg_check_type(section, e, type));
    *out = e;
    return DT_OK;
}

/* A key that is not set is the callers' everyday case (they keep their
 * default): returned without DT_CHECK's debug line, which filled -v. */
#define LOOKUP(expr)                                                          \
    do {                                                                      \
        dt_status_t lookup_st_ = (expr);                                      \
        if (lookup_st_ != DT_OK)                                              \
            return lookup_st_;                                                \
    } while (0)

dt_status_t dt_config_get_string(const dt_config_t *cfg, const char *section,
                                 const char *key, const char **out)
{
    const cfg_entry_t *e;
    if (!out)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_STRING, &e));
    *out = e->value;
    return DT_OK;
}

dt_status_t dt_config_get_int(const dt_config_t *cfg, const char *section,
                              const char *key, long long *out)
{
    const cfg_entry_t *e;
    if (!out)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_INT, &e));
    return dt_parse_int(e->value, out);
}

dt_status_t dt_config_get_bool(const dt_config_t *cfg, const char *section,
                               const char *key, bool *out)
{
    const cfg_entry_t *e;
    if (!out)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_BOOL, &e));
    return dt_parse_bool(e->value, out);
}

dt_status_t dt_config_get_size(const dt_config_t *cfg, const char *section,
                               const char *key, uint64_t *out)
{
    const cfg_entry_t *e;
    if (!out)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_SIZE, &e));
    return dt_parse_size(e->value, out);
}

dt_status_t dt_config_get_duration(const dt_config_t *cfg, const char *section,
                                   const char *key, double *seconds)
{
    const cfg_entry_t *e;
    if (!seconds)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_DURATION, &e));
    return dt_parse_duration(e->value, seconds);
}

dt_status_t dt_config_get_double(const dt_config_t *cfg, const char *section,
                                 const char *key, double *out)
{
    const cfg_entry_t *e;
    if (!out)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_DOUBLE, &e));
    return dt_parse_double(e->value, out);
}

dt_status_t dt_config_get_list(const dt_config_t *cfg, const char *section,
                               const char *key, char ***items, size_t *n)
{
    const cfg_entry_t *e;
    if (!items || !n)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_LIST, &e));
    return dt_parse_list(e->value, items, n);
}

dt_status_t dt_config_get_words(const dt_config_t *cfg, const char *section,
                                const char *key, char ***words, size_t *n)
{
    const cfg_entry_t *e;
    if (!words || !n)
        return DT_ERR_INVALID;
    LOOKUP(lookup(cfg, section, key, DT_KEY_WORDS, &e));
    return dt_parse_words(e->value, words, n);
}
