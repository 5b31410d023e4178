/* crash_site.c — the ranks' crash reports, read from their output
 * (crash_site.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crash_site.h"
#include "plugin/crash_line.h"

typedef struct site {
    int signo;      /* 0: no report */
    char text[192]; /* "optimizer plugin 'x', in its op step()" */
} site_t;

struct crash_sites {
    int np;
    site_t *sites;
};

dt_status_t crash_sites_new(int np, crash_sites_t **out)
{
    crash_sites_t *c = calloc(1, sizeof *c);
    if (!c || !(c->sites = calloc(np > 0 ? (size_t)np : 1, sizeof *c->sites))) {
        free(c);
        return DT_ERR_NOMEM;
    }
    c->np = np;
    *out = c;
    return DT_OK;
}

/* A cursor over one line (not NUL-terminated). */
typedef struct cursor {
    const char *at, *end;
} cursor_t;

/* Consume the literal s where the cursor is; 0 (cursor kept) if absent. */
static int eat(cursor_t *c, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(c->end - c->at) < n || memcmp(c->at, s, n) != 0)
        return 0;
    c->at += n;
    return 1;
}

/* Consume a run of the characters in set (at least one); its start and
 * length in *s and *n. */
static int eat_run(cursor_t *c, const char *set, const char **s, size_t *n)
{
    const char *p = c->at;
    while (p < c->end && *p && strchr(set, *p))
        p++;
    if (p == c->at)
        return 0;
    *s = c->at;
    *n = (size_t)(p - c->at);
    c->at = p;
    return 1;
}

#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define DIGITS "0123456789"

/* "dt: [TAG] error: crashed in KIND plugin 'NAME', in its op OP() (signal
 * N: ..." (plugin/crash_line.h): *signo and the words from KIND to "()". */
static int parse(const char *line, size_t len, int *signo, char *text,
                 size_t text_len)
{
    cursor_t c = {line, line + len};
    const char *kind, *name, *op, *num;
    size_t kind_n, name_n, op_n, num_n;
    if (!eat(&c, DT_CRASH_LINE_START))
        return 0;
    if (eat(&c, "[")) { /* the rank's log tag, "[1 host] " */
        const char *close = memchr(c.at, ']', (size_t)(c.end - c.at));
        if (!close)
            return 0;
        c.at = close + 1;
        if (!eat(&c, " "))
            return 0;
    }
    if (!eat(&c, DT_CRASH_LINE_CRASHED) ||
        !eat_run(&c, LOWER, &kind, &kind_n) ||
        !eat(&c, DT_CRASH_LINE_PLUGIN) ||
        !eat_run(&c, LOWER DIGITS "_-", &name, &name_n) ||
        !eat(&c, DT_CRASH_LINE_OP) || !eat_run(&c, LOWER "_", &op, &op_n) ||
        !eat(&c, DT_CRASH_LINE_SIGNAL) ||
        !eat_run(&c, DIGITS, &num, &num_n) || num_n > 3 || !eat(&c, ":"))
        return 0;
    *signo = atoi(num); /* digits up to ':' */
    snprintf(text, text_len, "%.*s%s%.*s%s%.*s()", (int)kind_n, kind,
             DT_CRASH_LINE_PLUGIN, (int)name_n, name, DT_CRASH_LINE_OP,
             (int)op_n, op);
    return *signo > 0;
}

void crash_sites_see(void *arg, int rank, const char *line, size_t len)
{
    crash_sites_t *c = arg;
    site_t s;
    if (!c || rank < 0 || rank >= c->np ||
        !parse(line, len, &s.signo, s.text, sizeof s.text))
        return;
    c->sites[rank] = s;
}

const char *crash_sites_of(const crash_sites_t *c, int rank, int signo)
{
    if (!c || rank < 0 || rank >= c->np || c->sites[rank].signo == 0 ||
        c->sites[rank].signo != signo)
        return NULL;
    return c->sites[rank].text;
}

void crash_sites_clear(crash_sites_t *c)
{
    if (c)
        memset(c->sites, 0, (size_t)c->np * sizeof *c->sites);
}

void crash_sites_free(crash_sites_t *c)
{
    if (!c)
        return;
    free(c->sites);
    free(c);
}
