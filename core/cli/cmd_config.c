/* cmd_config.c — `dtctl config [JOB.ini]`: the effective configuration,
 * every value with the source it came from, as an ini file. */
#include <stdio.h>
#include <string.h>

#include <dt/log.h>
#include "cli.h"

typedef struct print_state {
    const char *section; /* the section whose header was printed last */
} print_state_t;

static int print_value(const char *section, const char *key,
                       const char *value, dt_config_source_t src,
                       const char *where, void *arg)
{
    print_state_t *ps = arg;
    if (!ps->section || strcmp(ps->section, section) != 0) {
        printf("%s[%s]\n", ps->section ? "\n" : "", section);
        ps->section = section;
    }
    char line[512];
    snprintf(line, sizeof line, "%s = %s", key, value);
    if (src == DT_SRC_DEFAULT)
        printf("%-40s # default\n", line);
    else
        printf("%-40s # %s (%s)\n", line, dt_config_source_name(src), where);
    return 0;
}

int dt_cmd_config(dt_cli_t *cli)
{
    if (cli->nargs > 1) {
        dt_error("dtctl config takes at most one job file, got %d arguments; "
                 "see dtctl --help",
                 cli->nargs);
        return 2;
    }
    if (cli->exec_argv) {
        dt_error("dtctl config does not run a program; drop the part after "
                 "'--' (or use dtctl run)");
        return 2;
    }
    dt_config_t *cfg = NULL;
    if (dt_cli_load_config(cli, cli->nargs ? cli->args[0] : NULL, &cfg) !=
        DT_OK)
        return 1;
    print_state_t ps = {NULL};
    dt_config_foreach(cfg, print_value, &ps);
    dt_config_free(cfg);
    return fflush(stdout) == 0 ? 0 : 1;
}
