/* cmd_plugins.c — `dtctl plugins`: every plugin on the search path, with
 * its version and whether it can run here (and why not: refused by the
 * loader, or unavailable by its own check). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "cli.h"
#include "plugin/plugin_loader.h"

/* The wider of w and s's length (s may be NULL). */
static int widest(int w, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    return len > (size_t)w && len < 1024 ? (int)len : w;
}

/* w, widened for the names of the in-tree plugins configure left out
 * (DT_NOT_BUILT: "kind name: why" lines). */
static int widest_not_built(int w)
{
    for (const char *l = DT_NOT_BUILT; *l;) {
        const char *sp = strchr(l, ' '), *colon = strchr(l, ':');
        const char *nl = strchr(l, '\n');
        if (sp && colon && colon > sp && (!nl || colon < nl) &&
            colon - sp - 1 > w)
            w = (int)(colon - sp - 1);
        l = nl ? nl + 1 : l + strlen(l);
    }
    return w;
}

int dt_cmd_plugins(dt_cli_t *cli)
{
    /* It lists every plugin: words after it filtered nothing (said). */
    if (cli->nargs > 0 || cli->exec_argv) {
        dt_error("dtctl plugins takes no arguments (given '%s'); it lists "
                 "every plugin: filter with grep",
                 cli->nargs > 0 ? cli->args[0] : "--");
        return 2;
    }
    dt_plugin_entry_t *v;
    size_t n;
    if (dt_plugin_scan(&v, &n) != DT_OK)
        return 1;
    /* Columns as wide as their longest entry: a long name or version
     * shifted every column after it. */
    int namew = 10, verw = 8;
    for (size_t i = 0; i < n; i++) {
        namew = widest(namew, v[i].name);
        verw = widest(verw, v[i].version);
    }
    namew = widest_not_built(namew);
    printf("%-10s %-*s %-*s %-11s %s\n", "KIND", namew, "NAME", verw,
           "VERSION", "STATUS", "PATH / REASON");
    for (size_t i = 0; i < n; i++) {
        const dt_plugin_entry_t *e = &v[i];
        /* refused: the loader would not take the file (its name, ABI,
         * a missing op); unavailable: it loaded, but its own check said
         * it cannot run here. */
        const char *status = !e->version    ? "refused"
                             : e->available ? "available"
                                            : "unavailable";
        printf("%-10s %-*s %-*s %-11s %s\n", dt_kind_name(e->kind), namew,
               e->name, verw,
               !e->version ? "-" : *e->version ? e->version : "(none)",
               status, e->path);
        if (!e->available) /* under the path, one further in */
            printf("%*s%s\n", 10 + namew + verw + 11 + 5, "", e->why);
    }
    /* In-tree plugins configure left out (DT_NOT_BUILT, config.h), unless
     * one of that kind and name was found anyway. */
    for (const char *l = DT_NOT_BUILT; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        char kind[16] = "", name[65] = "";
        int off = 0;
        if (sscanf(l, "%15s %64[^:]: %n", kind, name, &off) == 2 && off > 0) {
            int found = 0;
            for (size_t i = 0; i < n; i++)
                found |= !strcmp(dt_kind_name(v[i].kind), kind) &&
                         !strcmp(v[i].name, name);
            if (!found)
                printf("%-10s %-*s %-*s %-11s %.*s\n", kind, namew, name,
                       verw, "-", "not built", (int)(len - (size_t)off),
                       l + off);
        }
        l += len + (nl ? 1 : 0);
    }
    if (n == 0) {
        char **dirs = dt_plugin_search_path();
        printf("no plugins found in:");
        for (char **d = dirs; d && *d; d++)
            printf(" %s", *d);
        printf("\n(set DT_PLUGIN_PATH to the directory holding dt_*.so)\n");
        for (char **d = dirs; d && *d; d++)
            free(*d);
        free(dirs);
    }
    dt_plugin_entries_free(v, n);
    return dt_cli_flush_stdout("plugins");
}
