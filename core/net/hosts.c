/* hosts.c — host lists from -H and hostfiles, and rank placement. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>

#include <dt/hosts.h>
#include <dt/log.h>
#include "base/line_read.h"

#define MAX_SLOTS (1 << 20) /* same bound as -n */

void dt_hostlist_free(dt_hostlist_t *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        free(list->hosts[i].name);
    free(list->hosts);
    list->hosts = NULL;
    list->n = 0;
}

size_t dt_hostlist_slots(const dt_hostlist_t *list)
{
    size_t total = 0;
    for (size_t i = 0; list && i < list->n; i++)
        total += (size_t)list->hosts[i].slots;
    return total;
}

/* Host names go into ssh/mpirun argv: refuse anything that could be read
 * as an option or needs quoting. */
static int valid_host_name(const char *s)
{
    if (!*s || *s == '-')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-:%@", *s))
            return 0;
    return 1;
}

/* Past any slot count or port: a longer number reads as this, so that
 * "h:2147483647" gets "out of range" (it got "cannot read"). */
#define NUMBER_CAP 1000000000L

/* Digits only; a value of NUMBER_CAP or more is NUMBER_CAP (errors then
 * quote the text, not the value). */
static int parse_number(const char *s, size_t len, long *out)
{
    if (len == 0)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        /* no overflow, even where long has 32 bits */
        v = v > (NUMBER_CAP - 9) / 10 ? NUMBER_CAP : v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* The digits after the last ':' of item (len bytes): the count or port
 * as written. */
static const char *after_colon(const char *item, size_t len, int *n)
{
    const char *c = memrchr(item, ':', len);
    const char *d = c ? c + 1 : item + len;
    *n = (int)(item + len - d);
    return d;
}

/* A host is its name and ssh port: names compare without case (DNS
 * does), and one address with two ports is two machines (containers
 * behind one IP). Spellings only DNS could match (node1 and
 * node1.example.com) are not caught: nothing here may block. */
static int find_host(const dt_hostlist_t *list, const char *name,
                     size_t name_len, int port)
{
    for (size_t i = 0; i < list->n; i++)
        if (strlen(list->hosts[i].name) == name_len &&
            strncasecmp(list->hosts[i].name, name, name_len) == 0 &&
            list->hosts[i].port == port)
            return (int)i;
    return -1;
}

static dt_status_t push_host(dt_hostlist_t *list, const char *name,
                             size_t name_len, int slots, int port)
{
    dt_host_t *v = realloc(list->hosts, (list->n + 1) * sizeof *v);
    if (!v)
        return DT_ERR_NOMEM;
    list->hosts = v;
    char *copy = strndup(name, name_len);
    if (!copy)
        return DT_ERR_NOMEM;
    v[list->n++] = (dt_host_t){.name = copy, .slots = slots, .port = port};
    return DT_OK;
}

/* Split "name", "name:N", "[v6addr]" or "[v6addr]:N". An address with
 * several ':' and no brackets is all name. *num is -1 without ":N". */
static int split_host(const char *item, size_t len, const char **name,
                      size_t *name_len, long *num)
{
    const char *colon = NULL;
    *num = -1;
    if (len && item[0] == '[') {
        const char *close = memchr(item, ']', len);
        if (!close || close == item + 1)
            return -1;
        *name = item + 1;
        *name_len = (size_t)(close - item - 1);
        size_t rest = len - (size_t)(close + 1 - item);
        if (rest == 0)
            return 0;
        if (close[1] != ':')
            return -1;
        return parse_number(close + 2, rest - 1, num);
    }
    for (size_t i = 0; i < len; i++)
        if (item[i] == ':') {
            if (colon) {
                colon = NULL; /* IPv6 without brackets: no count */
                break;
            }
            colon = item + i;
        }
    *name = item;
    *name_len = colon ? (size_t)(colon - item) : len;
    if (colon)
        return parse_number(colon + 1, len - *name_len - 1, num);
    return 0;
}

static int name_ok(const char *name, size_t len)
{
    char buf[256];
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, name, len);
    buf[len] = '\0';
    return valid_host_name(buf);
}

dt_status_t dt_hosts_parse(const char *spec, dt_hostlist_t *out)
{
    if (!spec || !out)
        return DT_ERR_INVALID;
    dt_hostlist_t list = {NULL, 0};
    dt_status_t st = DT_OK;
    unsigned char *bare = NULL; /* per host: given without :N */
    for (const char *p = spec; *p;) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, ", \t\n");
        const char *name;
        size_t name_len;
        long num;
        if (split_host(p, len, &name, &name_len, &num) != 0 ||
            !name_ok(name, name_len)) {
            dt_error("host list '%s': cannot read '%.*s'; want host or "
                     "host:SLOTS, comma-separated, e.g. h1:2,h2:4",
                     spec, (int)len, p);
            st = DT_ERR_INVALID;
            goto out;
        }
        if (num == 0 || num > MAX_SLOTS) {
            int dn;
            const char *digits = after_colon(p, len, &dn);
            dt_error("host list '%s': '%.*s' has %.*s slots; want 1 to %d",
                     spec, (int)len, p, dn, digits, MAX_SLOTS);
            st = DT_ERR_INVALID;
            goto out;
        }
        int seen = find_host(&list, name, name_len, 0);
        /* mpirun's --host a,a: a bare name repeated is a slot more */
        if (seen >= 0 && num < 0 && bare && bare[seen] &&
            list.hosts[seen].slots < MAX_SLOTS) {
            list.hosts[seen].slots++;
            p += len;
            continue;
        }
        if (seen >= 0) {
            dt_error("host list '%s': host '%.*s' appears twice (also as "
                     "'%s'; names ignore case); give it once with the total "
                     "slots (host:N)",
                     spec, (int)name_len, name, list.hosts[seen].name);
            st = DT_ERR_INVALID;
            goto out;
        }
        unsigned char *nb = realloc(bare, list.n + 1);
        if (!nb) {
            st = DT_ERR_NOMEM;
            goto out;
        }
        bare = nb;
        bare[list.n] = num < 0;
        if ((st = push_host(&list, name, name_len, num < 0 ? 1 : (int)num,
                            0)) != DT_OK)
            goto out;
        p += len;
    }
    if (list.n == 0) {
        dt_error("host list '%s' names no host; want e.g. h1:2,h2:4", spec);
        st = DT_ERR_INVALID;
    }
out:
    free(bare);
    if (st != DT_OK)
        dt_hostlist_free(&list);
    else
        *out = list;
    return st;
}

/* One "key=value" field after the host on a hostfile line. */
static int parse_field(const char *path, int lineno, const char *field,
                       int *slots, int *port, double *weight)
{
    const char *eq = strchr(field, '=');
    long v;
    if (eq && eq - field == 6 && strncmp(field, "weight", 6) == 0) {
        char *end;
        errno = 0;
        double w = strtod(eq + 1, &end);
        if (*weight > 0) {
            dt_error("%s:%d: weight given twice; keep one", path, lineno);
            return -1;
        }
        if (end == eq + 1 || *end || errno || !(w > 0) || w > 1e6) {
            dt_error("%s:%d: weight='%s': want a number above 0 (the share "
                     "of each of the host's workers, e.g. weight=0.5)",
                     path, lineno, eq + 1);
            return -1;
        }
        *weight = w;
        return 0;
    }
    if (!eq || parse_number(eq + 1, strlen(eq + 1), &v) != 0) {
        dt_error("%s:%d: cannot read '%s'; want slots=N, port=P or weight=W",
                 path, lineno, field);
        return -1;
    }
    size_t klen = (size_t)(eq - field);
    if (klen == 5 && strncmp(field, "slots", 5) == 0) {
        if (*slots > 0) {
            dt_error("%s:%d: slots given twice; keep one", path, lineno);
            return -1;
        }
        if (v < 1 || v > MAX_SLOTS) {
            dt_error("%s:%d: %s is out of range; want 1 to %d", path,
                     lineno, field, MAX_SLOTS);
            return -1;
        }
        *slots = (int)v;
    } else if (klen == 4 && strncmp(field, "port", 4) == 0) {
        if (*port > 0) {
            dt_error("%s:%d: port given twice; keep one", path, lineno);
            return -1;
        }
        if (v < 1 || v > 65535) {
            dt_error("%s:%d: %s is out of range; want 1 to 65535", path,
                     lineno, field);
            return -1;
        }
        *port = (int)v;
    } else if (klen == 9 && strncmp(field, "max_slots", 9) == 0) {
        /* Open MPI's oversubscription cap: we never go past slots. */
    } else {
        dt_error("%s:%d: unknown field '%s'; want slots=N, port=P or "
                 "weight=W", path, lineno, field);
        return -1;
    }
    return 0;
}

/* One non-blank line (comment removed): host then fields. */
static dt_status_t parse_line(const char *path, int lineno, char *line,
                              dt_hostlist_t *list, int **lines)
{
    char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
    const char *name;
    size_t name_len;
    long num;
    int slots = 0, port = 0;
    double weight = 0;
    if (split_host(tok, strlen(tok), &name, &name_len, &num) != 0 ||
        !name_ok(name, name_len)) {
        dt_error("%s:%d: cannot read host '%s'; want 'host slots=N', "
                 "'host:N', 'host' or 'ip:port'",
                 path, lineno, tok);
        return DT_ERR_CONFIG;
    }
    /* MXNet writes ip:port; 22 and >= 1024 can only be ports. */
    if (num == 22 || num >= 1024) {
        if (num > 65535) {
            int dn;
            const char *digits = after_colon(tok, strlen(tok), &dn);
            dt_error("%s:%d: port %.*s is out of range; want 1 to 65535",
                     path, lineno, dn, digits);
            return DT_ERR_CONFIG;
        }
        port = (int)num;
    } else if (num == 0) {
        dt_error("%s:%d: '%s' has 0 slots; want 1 or more", path, lineno,
                 tok);
        return DT_ERR_CONFIG;
    } else if (num > 0) {
        slots = (int)num;
    }
    int fields = 0;
    while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
        fields = 1;
        if (parse_field(path, lineno, tok, &slots, &port, &weight) != 0)
            return DT_ERR_CONFIG;
    }
    /* A bare name (no :N, no fields): an MPI machinefile's line per slot.
     * Its line is kept negative, so that a repeat of it adds a slot. */
    int bare = num < 0 && !fields;
    int seen = find_host(list, name, name_len, port);
    if (seen >= 0 && bare && (*lines)[seen] < 0 &&
        list->hosts[seen].slots < MAX_SLOTS) {
        list->hosts[seen].slots++;
        return DT_OK;
    }
    if (seen >= 0) {
        char ported[32] = "";
        if (port)
            snprintf(ported, sizeof ported, " port %d", port);
        dt_error("%s:%d: host '%.*s'%s is listed twice (first on %s:%d as "
                 "'%s'; names ignore case); give it once with the total "
                 "slots (a name alone on a line, with no :N and no field, "
                 "counts one slot a line, as in an MPI machinefile)",
                 path, lineno, (int)name_len, name, ported, path,
                 abs((*lines)[seen]), list->hosts[seen].name);
        return DT_ERR_CONFIG;
    }
    int *nl = realloc(*lines, (list->n + 1) * sizeof *nl);
    if (!nl)
        return DT_ERR_NOMEM;
    *lines = nl;
    nl[list->n] = bare ? -lineno : lineno;
    DT_CHECK(push_host(list, name, name_len, slots ? slots : 1, port));
    list->hosts[list->n - 1].weight = weight;
    return DT_OK;
}

dt_status_t dt_hostfile_parse(const char *path, dt_hostlist_t *out)
{
    if (!path || !out)
        return DT_ERR_INVALID;
    FILE *f = fopen(path, "r");
    struct stat sb;
    if (!f) {
        int err = errno;
        dt_error("cannot read hostfile '%s': %s", path, strerror(err));
        return err == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
    }
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        dt_error("cannot read hostfile '%s': it is a directory; name the "
                 "file that lists the hosts", path);
        fclose(f);
        return DT_ERR_IO;
    }
    dt_hostlist_t list = {NULL, 0};
    int *lines = NULL; /* line of each host, for duplicate messages */
    char *buf = NULL;
    size_t cap = 0;
    int lineno = 0, problems = 0;
    dt_status_t st = DT_OK;
    ssize_t got;
    int nul;
    while ((got = dt_line_read(f, &buf, &cap, &nul)) >= 0 ||
           got == DT_LINE_TOO_LONG) {
        lineno++;
        /* A program, an image or a device named by mistake: one message,
         * and no more reading (/dev/zero is one endless line). */
        if (got == DT_LINE_TOO_LONG || nul) {
            dt_error("%s:%d: %s: not a hostfile (check the path; a "
                     "hostfile is text, one host a line, e.g. 'node1 "
                     "slots=4')", path, lineno,
                     nul ? "a NUL byte (binary data)"
                         : "a line longer than " DT_LINE_MAX_TEXT);
            problems++;
            break;
        }
        char *line = buf;
        if (lineno == 1 && strncmp(line, "\xef\xbb\xbf", 3) == 0)
            line += 3; /* a UTF-8 byte order mark (Windows editors) */
        line[strcspn(line, "#")] = '\0';
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        dt_status_t lst = parse_line(path, lineno, line, &list, &lines);
        if (lst == DT_ERR_NOMEM) {
            st = lst;
            goto out;
        }
        if (lst != DT_OK)
            problems++; /* keep going: report every bad line at once */
    }
    if (got == DT_LINE_NOMEM) {
        st = DT_ERR_NOMEM;
    } else if (ferror(f)) {
        dt_error("cannot read hostfile '%s': %s", path, strerror(errno));
        st = DT_ERR_IO;
    } else if (problems) {
        st = DT_ERR_CONFIG;
    } else if (list.n == 0) {
        dt_error("hostfile '%s' lists no host; add lines such as "
                 "'node1 slots=4'",
                 path);
        st = DT_ERR_CONFIG;
    }
out:
    free(buf);
    free(lines);
    fclose(f);
    if (st != DT_OK)
        dt_hostlist_free(&list);
    else
        *out = list;
    return st;
}

/* -H ::1:2 is the address ::1:2 with one slot (a valid IPv6 address, so
 * no error earlier): when slots run short, say how slots follow one. */
static void ipv6_slots_hint(const dt_hostlist_t *list, char *out, size_t len)
{
    for (size_t h = 0; h < list->n; h++) {
        const char *name = list->hosts[h].name;
        const char *colon = strchr(name, ':');
        if (list->hosts[h].slots == 1 && colon && strchr(colon + 1, ':')) {
            snprintf(out, len,
                     "; '%s' is read as one IPv6 address with 1 slot: "
                     "slots after an IPv6 address need brackets, -H "
                     "[ADDR]:N (e.g. [::1]:2, not ::1:2)",
                     name);
            return;
        }
    }
}

dt_status_t dt_place_ranks(const dt_hostlist_t *list, int np,
                           dt_placement_t **out)
{
    if (!list || !out)
        return DT_ERR_INVALID;
    if (np < 1) {
        dt_error("cannot place %d workers: want at least 1 (-n N)", np);
        return DT_ERR_INVALID;
    }
    size_t slots = dt_hostlist_slots(list);
    if ((size_t)np > slots) {
        char v6hint[384] = "";
        ipv6_slots_hint(list, v6hint, sizeof v6hint);
        dt_error("cannot place %d workers: the %zu host%s ha%s only %zu "
                 "slot%s; give more slots with -H host:N (or slots=N in the "
                 "hostfile) or start fewer workers with -n %zu%s",
                 np, list->n, list->n == 1 ? "" : "s",
                 list->n == 1 ? "s" : "ve", slots, slots == 1 ? "" : "s",
                 slots, v6hint);
        return DT_ERR_INVALID;
    }
    dt_placement_t *p = calloc((size_t)np, sizeof *p);
    if (!p)
        return DT_ERR_NOMEM;
    int rank = 0, nodes = 0;
    for (size_t h = 0; h < list->n && rank < np; h++) {
        int here = list->hosts[h].slots;
        if (here > np - rank)
            here = np - rank;
        for (int l = 0; l < here; l++, rank++)
            p[rank] = (dt_placement_t){.rank = rank, .host = h,
                                       .local_rank = l, .local_size = here,
                                       .node_rank = nodes};
        nodes++;
    }
    for (int r = 0; r < np; r++)
        p[r].num_nodes = nodes;
    *out = p;
    return DT_OK;
}
