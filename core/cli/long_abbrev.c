/* long_abbrev.c — see long_abbrev.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "long_abbrev.h"

/* The rewritten words stay reachable until exit: argv points at them. */
static char *expanded[32];
static size_t nexpanded;

static const struct option *exact(const struct option *opts,
                                  const char *name, size_t n)
{
    for (size_t i = 0; opts[i].name; i++)
        if (strlen(opts[i].name) == n && !strncmp(opts[i].name, name, n))
            return &opts[i];
    return NULL;
}

/* 1 when a short option word ("-n", "-H") takes the next word. */
static int short_takes_next(const char *a, const char *shortopts)
{
    if (a[0] != '-' || a[1] == '-' || !a[1] || a[2])
        return 0;
    const char *p = strchr(shortopts, a[1]);
    return p && a[1] != ':' && p[1] == ':';
}

int dt_cli_expand_abbrev(int end, char **argv, const struct option *opts,
                         const char *shortopts, int (*refused)(int val))
{
    for (int i = 1; i < end; i++) {
        char *a = argv[i];
        if (short_takes_next(a, shortopts)) {
            i++; /* its value, whatever it looks like */
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || !a[2])
            continue;
        const char *name = a + 2;
        size_t n = strcspn(name, "=");
        const struct option *o = exact(opts, name, n);
        if (!o) {
            const struct option *hit = NULL;
            char list[256] = "";
            int distinct = 0, seen[16];
            for (size_t k = 0; opts[k].name; k++) {
                if (strncmp(opts[k].name, name, n) != 0 ||
                    refused(opts[k].val))
                    continue;
                /* --host/--hosts, --network-interface(s): one option */
                int dup = 0;
                for (int j = 0; j < distinct && j < 16; j++)
                    dup |= seen[j] == opts[k].val;
                if (dup)
                    continue;
                if (distinct < 16)
                    seen[distinct] = opts[k].val;
                distinct++;
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s--%s",
                         l ? ", " : "", opts[k].name);
                if (!hit)
                    hit = &opts[k];
            }
            if (distinct > 1) {
                dt_error("option '%.*s' is ambiguous: it could be %s; "
                         "write more of its name",
                         (int)n + 2, a, list);
                return 2;
            }
            if (!hit || nexpanded == sizeof expanded / sizeof *expanded)
                continue; /* getopt_long says what it is */
            size_t len = strlen(hit->name) + strlen(name + n) + 3;
            char *w = malloc(len);
            if (!w)
                continue;
            snprintf(w, len, "--%s%s", hit->name, name + n);
            argv[i] = expanded[nexpanded++] = w;
            o = hit;
        }
        if (o->has_arg == required_argument && !name[n])
            i++; /* its value */
    }
    return 0;
}
