/* rsync_cmd.c — rsync's argv, its -e ssh command, and its --stats. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/config.h>
#include <dt/log.h>
#include "rsync_cmd.h"
#include "stg.h"

dt_status_t rs_e_word(const char *w, char **out)
{
    int sq = strchr(w, '\'') != NULL, dq = strchr(w, '"') != NULL;
    int plain = *w && !strpbrk(w, " \t\n'\"");
    int r;
    if (plain)
        r = asprintf(out, "%s", w);
    else if (!sq)
        r = asprintf(out, "'%s'", w);
    else if (!dq)
        r = asprintf(out, "\"%s\"", w);
    else {
        dt_error("storage rsync: '%s' holds both ' and \" and cannot be "
                 "passed to rsync's -e; rename the file",
                 w);
        return DT_ERR_INVALID;
    }
    return r < 0 ? DT_ERR_NOMEM : DT_OK;
}

typedef struct buf {
    char *p;
    dt_status_t st;
} buf_t;

static void add(buf_t *b, const char *prefix, const char *word)
{
    char *q = NULL, *n = NULL;
    if (b->st != DT_OK)
        return;
    if ((b->st = rs_e_word(word, &q)) != DT_OK)
        return;
    if (asprintf(&n, "%s %s%s", b->p, prefix, q) < 0)
        b->st = DT_ERR_NOMEM;
    free(q);
    if (b->st == DT_OK) {
        free(b->p);
        b->p = n;
    }
}

dt_status_t rs_ssh_command(const rs_ssh_t *o, int port, char **cmd)
{
    char num[64];
    buf_t b = {strdup("ssh"), DT_OK};
    if (!b.p)
        return DT_ERR_NOMEM;
    snprintf(num, sizeof num, "%d", port > 0 ? port : o->port > 0 ? o->port
                                                                  : 22);
    add(&b, "-p ", num);
    if (o->user)
        add(&b, "-l ", o->user);
    for (char **k = o->identity; k && *k; k++)
        add(&b, "-i ", *k);
    if (o->identity && o->identity[0])
        add(&b, "-o ", "IdentitiesOnly=yes");
    if (!o->use_agent)
        add(&b, "-o ", "IdentityAgent=none");
    if (o->known_hosts) {
        char *kh = NULL;
        if (asprintf(&kh, "UserKnownHostsFile=%s", o->known_hosts) < 0) {
            free(b.p);
            return DT_ERR_NOMEM;
        }
        add(&b, "-o ", kh);
        free(kh);
    }
    add(&b, "-o ", o->accept_new ? "StrictHostKeyChecking=accept-new"
                                 : "StrictHostKeyChecking=yes");
    add(&b, "-o ", "BatchMode=yes");
    if (o->connect_timeout > 0) {
        snprintf(num, sizeof num, "ConnectTimeout=%ld", o->connect_timeout);
        add(&b, "-o ", num);
    }
    if (b.st != DT_OK) {
        free(b.p);
        return b.st;
    }
    *cmd = b.p;
    return DT_OK;
}

typedef struct strv {
    char **v;
    size_t n;
    dt_status_t st;
} strv_t;

static void push(strv_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void push(strv_t *s, const char *fmt, ...)
{
    if (s->st != DT_OK)
        return;
    char **nv = realloc(s->v, (s->n + 2) * sizeof *nv);
    if (!nv) {
        s->st = DT_ERR_NOMEM;
        return;
    }
    s->v = nv;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&s->v[s->n], fmt, ap);
    va_end(ap);
    if (r < 0) {
        s->st = DT_ERR_NOMEM;
        s->v[s->n] = NULL;
        return;
    }
    s->v[++s->n] = NULL;
}

/* "./" before a relative path: rsync takes "-x" for an option and "a:b"
 * (a ':' before any '/') for a remote path. */
static const char *rel_prefix(const char *path)
{
    return path[0] == '/' ? "" : "./";
}

dt_status_t rs_argv(const rs_args_t *a, char ***argv)
{
    strv_t s = {NULL, 0, DT_OK};
    *argv = NULL;
    /* "src/" and "dst/": the contents of src become the contents of dst. */
    size_t sl = strlen(a->src), dl = strlen(a->dst);
    const char *ss = sl && a->src[sl - 1] == '/' ? "" : "/";
    const char *ds = dl && a->dst[dl - 1] == '/' ? "" : "/";
    push(&s, "%s", a->rsync && *a->rsync ? a->rsync : "rsync");
    push(&s, "-a");
    push(&s, "--delay-updates");
    /* The paths go to the remote rsync over the protocol, not through
     * its login shell (older rsyncs split them at spaces there). */
    push(&s, "-s");
    /* No directory of the copy writable by others: the next stage
     * refuses such a dst (someone else could plant links in it). */
    push(&s, "--chmod=Dgo-w");
    if (a->delete_extra)
        push(&s, "--delete-delay");
    push(&s, "--exclude=/%s", STG_MARK_DONE);
    push(&s, "--exclude=/%s", STG_MARK_BUSY);
    push(&s, "--exclude=/%s*", STG_LOCK); /* the lock and its temp files */
    push(&s, "--stats");
    if (a->progress) {
        push(&s, "--info=progress2");
        push(&s, "--no-inc-recursive"); /* a total known from the start */
    }
    if (a->bwlimit && *a->bwlimit)
        push(&s, "--bwlimit=%s", a->bwlimit);
    if (a->timeout_s > 0)
        push(&s, "--timeout=%ld", a->timeout_s);
    if (a->ssh_cmd) {
        push(&s, "-e");
        push(&s, "%s", a->ssh_cmd);
        if (a->rsync_path && *a->rsync_path)
            push(&s, "--rsync-path=%s", a->rsync_path);
    }
    push(&s, "--");
    push(&s, "%s%s%s", rel_prefix(a->src), a->src, ss);
    if (a->ssh_cmd) {
        int v6 = strchr(a->host, ':') != NULL;
        push(&s, v6 ? "[%s]:%s%s" : "%s:%s%s", a->host, a->dst, ds);
    } else {
        push(&s, "%s%s%s", rel_prefix(a->dst), a->dst, ds);
    }
    if (s.st != DT_OK) {
        dt_strv_free(s.v);
        return s.st;
    }
    *argv = s.v;
    return DT_OK;
}

/* digits[.digits] at *p, read without the locale (rsync always takes
 * '.'); *p moves past it. 0 when there is no digit. */
static int read_number(const char **p, double *out)
{
    double n = 0, scale = 1;
    int digits = 0;
    const char *c = *p;
    for (; isdigit((unsigned char)*c); c++, digits++)
        n = n * 10 + (*c - '0');
    if (*c == '.')
        for (c++; isdigit((unsigned char)*c); c++, digits++)
            n += (*c - '0') * (scale /= 10);
    *p = c;
    *out = n;
    return digits > 0;
}

/* The unit at *p as in rsync's parse_size_arg: a letter (none: K), then
 * "B" for powers of 1000 or "iB"/nothing for powers of 1024. */
static const char *read_unit(const char **p, double *bytes)
{
    static const char letters[] = "bkmgtp";
    const char *c = *p, *l = NULL;
    int reps = 1;
    if (isspace((unsigned char)*c))
        return "it holds a space (rsync takes none)";
    if (*c && *c != '+' && *c != '-') {
        if (!(l = strchr(letters, tolower((unsigned char)*c))))
            return "an unknown unit (want K, M, G, T or P)";
        reps = (int)(l - letters);
        c++;
    }
    double mult = 1024;
    if (*c == 'b' || *c == 'B') {
        mult = 1000;
        c++;
    } else if (strncasecmp(c, "ib", 2) == 0) {
        c += 2;
    }
    while (reps-- > 0)
        *bytes *= mult;
    *p = c;
    return NULL;
}

const char *rs_bwlimit_problem(const char *v)
{
    const char *p = v;
    double bytes;
    if (!read_number(&p, &bytes))
        return "it does not start with a number";
    const char *bad = read_unit(&p, &bytes);
    if (bad)
        return bad;
    if ((*p == '+' || *p == '-') && p[1] == '1') {
        bytes += *p == '+' ? 1 : -1;
        p += 2;
    }
    if (isspace((unsigned char)*p))
        return "it holds a space (rsync takes none)";
    if (*p)
        return "text follows the number and its unit";
    if (bytes != 0 && bytes < 512)
        return "it is below rsync's minimum of 512 bytes per second";
    if (bytes > 9e18)
        return "it is too large";
    return NULL;
}

/* The number after "label: " in text (commas skipped), if present. */
static int number_after(const char *text, const char *label,
                        unsigned long long *out)
{
    const char *p = strstr(text, label);
    if (!p)
        return 0;
    p += strlen(label);
    while (*p == ' ' || *p == ':')
        p++;
    unsigned long long v = 0;
    int digits = 0;
    for (; (*p >= '0' && *p <= '9') || *p == ','; p++)
        if (*p != ',') {
            v = v * 10 + (unsigned long long)(*p - '0');
            digits++;
        }
    if (!digits)
        return 0;
    *out = v;
    return 1;
}

void rs_parse_stats(const char *text, rs_stats_t *s)
{
    memset(s, 0, sizeof *s);
    if (!text)
        return;
    int a = number_after(text, "Total bytes sent", &s->bytes_sent);
    int b = number_after(text, "Total bytes received", &s->bytes_received);
    number_after(text, "Number of regular files transferred", &s->files);
    number_after(text, "Total transferred file size", &s->data);
    s->have = a && b;
}
