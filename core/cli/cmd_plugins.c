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
    printf("%-10s %-10s %-8s %-11s %s\n", "KIND", "NAME", "VERSION",
           "STATUS", "PATH / REASON");
    for (size_t i = 0; i < n; i++) {
        const dt_plugin_entry_t *e = &v[i];
        /* refused: the loader would not take the file (its name, ABI,
         * a missing op); unavailable: it loaded, but its own check said
         * it cannot run here. */
        const char *status = !e->version    ? "refused"
                             : e->available ? "available"
                                            : "unavailable";
        printf("%-10s %-10s %-8s %-11s %s\n", dt_kind_name(e->kind), e->name,
               !e->version ? "-" : *e->version ? e->version : "(none)",
               status, e->path);
        if (!e->available)
            printf("%44s%s\n", "", e->why);
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
                printf("%-10s %-10s %-8s %-11s %.*s\n", kind, name, "-",
                       "not built", (int)(len - (size_t)off), l + off);
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
