/* config_load.c — reading values into the store: ini files (libinih, with
 * our own line reader so every value knows its file:line) and DT_*
 * environment variables. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dt/env.h>
#include <dt/log.h>
#include "base/line_read.h"
#include "config_internal.h"

extern char **environ;

/* ---- ini files ----------------------------------------------------------- */

typedef struct file_reader {
    FILE *f;
    const char *path;
    dt_config_t *cfg;
    dt_config_source_t src;
    int line;         /* lines handed to inih so far */
    int problems;     /* lines too long, ... (already logged) */
    int lost_section; /* after a broken '[section' line: its keys' section
                         is unknown, so they are not filed anywhere */
    dt_status_t fail; /* out of memory while storing */
    char *buf;
    size_t cap;
    char *long_value; /* the value of a line longer than inih's buffer */
} file_reader_t;

/* What inih gets as the value of a line too long for its buffer (a
 * ResNet's [model] layers): the value itself waits in long_value. */
#define LONG_VALUE_MARK "\001dt-long-value"

static void say_unparsable(const char *path, int lineno, const char *text,
                           const char *more)
{
    char pt[CFG_PRINTABLE_MAX], pp[CFG_PRINTABLE_MAX];
    dt_error("%s:%d: cannot parse '%s'; want 'key = value', '[section]' or a "
             "comment starting with '#' or ';'%s",
             dt_config_printable(path, pp, sizeof pp), lineno,
             dt_config_printable(text, pt, sizeof pt), more);
}

/* Windows editors save "Unicode" text as UTF-16, which starts with the
 * byte order mark FF FE (or FE FF); each of its lines would be said as
 * unparsable bytes without the cause. */
static void say_utf16(const char *path)
{
    char pp[CFG_PRINTABLE_MAX];
    dt_error("%s: the file is UTF-16 text (it starts with a UTF-16 byte "
             "order mark); dt reads UTF-8: save it as UTF-8 (e.g. iconv -f "
             "UTF-16 -t UTF-8 FILE > NEW.ini)",
             dt_config_printable(path, pp, sizeof pp));
}

/* Every line inih would refuse, said here (inih names only the first):
 * text other than a comment, a '[section]' or a 'key = value' / 'key:
 * value'. A '[section' without its ']' also leaves the keys below it
 * unfiled until the next section (inih filed them under the previous
 * one). 1: the line is handed to inih as an empty one. */
static int unparsable(file_reader_t *r, const char *s)
{
    size_t n = strcspn(s, "\r\n");
    char text[160];
    snprintf(text, sizeof text, "%.*s", (int)(n < 159 ? n : 159), s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0 || s[0] == ';' || s[0] == '#')
        return 0;
    if (s[0] == '[') {
        r->lost_section = memchr(s, ']', n) == NULL;
        if (r->lost_section) {
            say_unparsable(r->path, r->line, text,
                           " (no ']': the keys below it belong to no "
                           "section until the next one)");
            r->problems++;
        }
        return r->lost_section;
    }
    if (!memchr(s, '=', n) && !memchr(s, ':', n)) {
        say_unparsable(r->path, r->line, text, "");
        r->problems++;
        return 1;
    }
    return r->lost_section;
}

/* A 'key = value' line longer than inih's buffer (num): the value (its
 * " ;comment" tail cut, as inih would) goes to r->long_value and r->buf
 * becomes "key = LONG_VALUE_MARK" for inih, which calls on_value with it
 * before it reads the next line. 0: not such a line (a long key, a long
 * section or comment), said as too long by the caller. */
static int hold_long_value(file_reader_t *r, const char *s, size_t text,
                           size_t num)
{
    size_t key = strcspn(s, "=:");
    if (s[0] == '[' || s[0] == ';' || key >= text ||
        key + sizeof LONG_VALUE_MARK + 4 > num)
        return 0;
    const char *v = s + key + 1;
    size_t n = text - key - 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] == ';' && (v[i - 1] == ' ' || v[i - 1] == '\t')) {
            n = i;
            break;
        }
    char *value = strndup(v, n), *line = NULL;
    if (!value || asprintf(&line, "%.*s= %s\n", (int)key, s,
                           LONG_VALUE_MARK) < 0) {
        free(value);
        r->fail = DT_ERR_NOMEM;
        return 0;
    }
    free(r->long_value);
    r->long_value = value;
    free(r->buf);
    r->buf = line;
    r->cap = strlen(line) + 1;
    return 1;
}

/* inih's ini_reader: one whole line per call, so `line` counts lines.
 * Leading blanks are dropped (an indented line is a plain key, not a
 * continuation) and " # comment" tails go, as in the hostfile. */
static char *read_line(char *str, int num, void *stream)
{
    file_reader_t *r = stream;
    int nul;
    ssize_t n = dt_line_read(r->f, &r->buf, &r->cap, &nul);
    if (n == DT_LINE_NOMEM)
        r->fail = DT_ERR_NOMEM;
    if (n == DT_LINE_END || n == DT_LINE_NOMEM)
        return NULL;
    r->line++;
    if (r->line == 1 && n >= 2 && (memcmp(r->buf, "\xff\xfe", 2) == 0 ||
                                   memcmp(r->buf, "\xfe\xff", 2) == 0)) {
        say_utf16(r->path);
        r->problems++;
        return NULL; /* every line would be unparsable: one message */
    }
    if (n == DT_LINE_TOO_LONG || nul) { /* one message, no more reading */
        char pp[CFG_PRINTABLE_MAX];
        dt_error("%s:%d: %s: not an ini file (check the path)",
                 dt_config_printable(r->path, pp, sizeof pp), r->line,
                 nul ? "a NUL byte (binary data)"
                     : "a line longer than " DT_LINE_MAX_TEXT);
        r->problems++;
        return NULL;
    }
    char *s = r->buf;
    while (*s == ' ' || *s == '\t')
        s++;
    for (char *c = s; *c; c++)
        if (*c == '#' && (c == s || c[-1] == ' ' || c[-1] == '\t')) {
            c[0] = '\n';
            c[1] = '\0';
            break;
        }
    if (r->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
        s += 3; /* a UTF-8 byte order mark (Windows editors write one) */
    if (*s == ';')
        s = "\n"; /* a comment, however long */
    size_t len = strlen(s), text = strcspn(s, "\r\n");
    /* inih needs room for "\r\n" and the NUL after the text. */
    if ((text + 3 > (size_t)num || len + 1 > (size_t)num) &&
        hold_long_value(r, s, text, (size_t)num)) {
        s = r->buf;
        len = strlen(s);
    } else if (text + 3 > (size_t)num || len + 1 > (size_t)num) {
        char pp[CFG_PRINTABLE_MAX];
        dt_error("%s:%d: line is longer than %d characters; shorten it "
                 "(a long list can be split with --set or a hostfile)",
                 dt_config_printable(r->path, pp, sizeof pp), r->line, num - 3);
        r->problems++;
        s = "\n";
        len = 1;
    } else if (unparsable(r, s)) {
        s = "\n";
        len = 1;
    }
    memcpy(str, s, len + 1);
    return str;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int on_value(void *user, const char *section, const char *name,
                    const char *value)
{
    file_reader_t *r = user;
    char *sec = strdup(section ? section : ""), *where = NULL;
    if (!sec || asprintf(&where, "%s:%d", r->path, r->line) < 0) {
        free(sec);
        r->fail = DT_ERR_NOMEM;
        return 1;
    }
    char *held = NULL;
    if (value && strcmp(value, LONG_VALUE_MARK) == 0 && r->long_value) {
        held = r->long_value; /* hold_long_value's */
        r->long_value = NULL;
        value = trim(held);
    }
    dt_status_t st = dt_config_set(r->cfg, trim(sec), name, value ? value : "",
                                   r->src, where);
    free(held);
    if (st != DT_OK)
        r->fail = st;
    free(sec);
    free(where);
    return 1; /* 0 would make inih count a syntax error on this line */
}

/* The text of line `lineno` of path, for a syntax error message. */
static void quote_line(const char *path, int lineno, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t cap = 0;
    int nul;
    out[0] = '\0';
    for (int i = 1; f && dt_line_read(f, &buf, &cap, &nul) >= 0; i++)
        if (i == lineno) {
            snprintf(out, len, "%s", trim(buf));
            break;
        }
    free(buf);
    if (f)
        fclose(f);
}

dt_status_t dt_config_load_file(dt_config_t *cfg, const char *path,
                                dt_config_source_t src)
{
    if (!cfg || !path)
        return DT_ERR_INVALID;
    const char *what = src == DT_SRC_JOB_FILE       ? "job file"
                       : src == DT_SRC_CLUSTER_FILE ? "cluster file"
                                                    : "config file";
    file_reader_t r = {.path = path, .cfg = cfg, .src = src, .fail = DT_OK};
    r.f = fopen(path, "r");
    if (!r.f) {
        int err = errno;
        dt_error("cannot read %s '%s': %s", what, path, strerror(err));
        return err == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
    }
    struct stat sb;
    if (fstat(fileno(r.f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        dt_error("cannot read %s '%s': it is a directory; name the .ini "
                 "file", what, path);
        fclose(r.f);
        return DT_ERR_IO;
    }
    int rc = ini_parse_stream(read_line, &r, on_value, &r);
    int read_error = ferror(r.f);
    fclose(r.f);
    free(r.buf);
    free(r.long_value);
    if (rc == -2 || r.fail == DT_ERR_NOMEM)
        return DT_ERR_NOMEM;
    if (read_error) {
        dt_error("cannot read %s '%s': read error", what, path);
        return DT_ERR_IO;
    }
    if (rc > 0) { /* one unparsable() let through: inih's word */
        char text[160];
        quote_line(path, rc, text, sizeof text);
        say_unparsable(path, rc, text, "");
        r.problems++;
    }
    cfg->load_problems += r.problems;
    if (r.fail != DT_OK)
        return r.fail;
    return r.problems ? DT_ERR_CONFIG : DT_OK;
}

/* ---- environment ----------------------------------------------------------- */

void dt_config_env_name(const char *section, const char *key, char *out,
                        size_t len)
{
    size_t o = 0;
    const char *parts[] = {"DT", section, key};
    for (size_t p = 0; p < 3 && parts[p]; p++) {
        if (p && o + 1 < len)
            out[o++] = '_';
        for (const char *c = parts[p]; *c && o + 1 < len; c++)
            out[o++] = (*c == '.' || *c == '-')
                           ? '_'
                           : (char)toupper((unsigned char)*c);
    }
    out[o] = '\0';
}

/* The value of NAME in envp, or NULL. */
static const char *env_get(char *const *envp, const char *name)
{
    return dt_env_value((const char *const *)envp, name);
}

/* Short forms for the most used selections. */
static const char *const env_aliases[][2] = {
    {"DT_LAUNCHER", "launcher"},
    {"DT_TRANSPORT", "transport"},
    {"DT_STORAGE", "storage"},
    {"DT_INTERFACE", "interface"}};

dt_status_t dt_config_load_env(dt_config_t *cfg, char *const *envp)
{
    if (!cfg)
        return DT_ERR_INVALID;
    if (!envp)
        envp = environ;
    /* Aliases first: the full DT_CLUSTER_* name, set later, wins a tie. An
     * empty variable counts as unset. */
    for (size_t i = 0; i < sizeof env_aliases / sizeof *env_aliases; i++) {
        const char *v = env_get(envp, env_aliases[i][0]);
        if (v && *v)
            DT_CHECK(dt_config_set(cfg, "cluster", env_aliases[i][1], v,
                                   DT_SRC_ENV, env_aliases[i][0]));
    }
    for (size_t i = 0; i < cfg->n; i++) {
        const cfg_section_t *sec = cfg->sections[i];
        for (const dt_key_spec_t *k = sec->schema; k && k->name; k++) {
            char name[256];
            dt_config_env_name(sec->name, k->name, name, sizeof name);
            const char *v = env_get(envp, name);
            if (v && *v)
                DT_CHECK(dt_config_set(cfg, sec->name, k->name, v, DT_SRC_ENV,
                                       name));
        }
    }
    return DT_OK;
}

/* Does the variable name one of the section's keys? */
static int env_matches_key(const cfg_section_t *sec, const char *var,
                           size_t len)
{
    for (const dt_key_spec_t *k = sec->schema; k && k->name; k++) {
        char name[256];
        dt_config_env_name(sec->name, k->name, name, sizeof name);
        if (strlen(name) == len && strncmp(name, var, len) == 0)
            return 1;
    }
    return 0;
}

void dt_config_check_env(const dt_config_t *cfg, char *const *envp)
{
    if (!cfg)
        return;
    if (!envp)
        envp = environ;
    for (char *const *e = envp; *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        for (size_t i = 0; i < cfg->n; i++) {
            const cfg_section_t *sec = cfg->sections[i];
            char prefix[256];
            if (!sec->schema)
                continue;
            dt_config_env_name(sec->name, NULL, prefix, sizeof prefix);
            size_t pl = strlen(prefix);
            if (len > pl + 1 && strncmp(*e, prefix, pl) == 0 &&
                (*e)[pl] == '_' && !env_matches_key(sec, *e, len)) {
                /* DT_TRANSPORT_TCP_X also starts like [transport]: only
                 * the longest matching section counts. */
                int longer = 0;
                for (size_t j = 0; j < cfg->n; j++) {
                    char p2[256];
                    dt_config_env_name(cfg->sections[j]->name, NULL, p2, sizeof p2);
                    size_t l2 = strlen(p2);
                    if (cfg->sections[j]->schema && l2 > pl && len > l2 &&
                        strncmp(*e, p2, l2) == 0 && (*e)[l2] == '_')
                        longer = 1;
                }
                if (longer)
                    continue;
                char *names = cfg_key_names(sec->schema);
                char pe[CFG_PRINTABLE_MAX], name[256];
                snprintf(name, sizeof name, "%.*s", (int)len, *e);
                dt_warn("environment variable %s matches no key of [%s] "
                        "and is ignored; valid keys: %s",
                        dt_config_printable(name, pe, sizeof pe), sec->name,
                        names ? names : "?");
                free(names);
            }
        }
    }
}
