/* cmd_config.c — `dtctl config [JOB.ini]`: the effective configuration,
 * every value with the source it came from, as an ini file; then, as
 * comment lines, the model's summary (layers, output shapes, parameter
 * counts) when [model] layers is set and the data set's input shape is
 * known without reading it; then the refusals of dtctl run (exit 2). */
#include <stdio.h>
#include <string.h>

#include <dt/hosts.h>
#include <dt/log.h>
#include <dt/nn.h>
#include "cli.h"
#include "run_checks.h"
#include "run_trainer.h"

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
    /* Padded to 40 columns, never cut (a long host list is a value too). */
    int n = printf("%s = %s", key, value);
    printf("%*s", n < 40 ? 40 - n : 0, "");
    if (src == DT_SRC_DEFAULT)
        printf(" # default\n");
    else
        printf(" # %s (%s)\n", dt_config_source_name(src), where);
    return 0;
}

static void print_comment(void *arg, const char *line)
{
    printf("#   %s\n", line);
}

/* 0, or 1 when the layers do not parse (the error is logged). */
static int print_model(const dt_config_t *cfg)
{
    const char *layers = NULL, *dataset = "fashion-mnist", *where = NULL;
    if (dt_config_get_string(cfg, "model", "layers", &layers) != DT_OK ||
        !layers || !*layers)
        return 0;
    if (dt_config_get_string(cfg, "data", "dataset", &dataset) != DT_OK)
        dataset = "fashion-mnist";
    dt_config_origin(cfg, "model", "layers", NULL, &where);
    int d[4];
    dt_status_t st = run_trainer_input_shape(cfg, d);
    if (st == DT_ERR_CONFIG)
        return 1;
    if (st != DT_OK) {
        printf("\n# model: the input shape of data set '%s' is known once "
               "it is read; dt-train prints the summary at start\n",
               dataset);
        return 0;
    }
    dt_model_t *m = NULL;
    if (dt_model_parse(layers, where, d[0], d[1], d[2], d[3], &m, NULL) !=
        DT_OK)
        return 1;
    printf("\n# model for %s (%dx%dx%d, %d classes):\n", dataset, d[0], d[1],
           d[2], d[3]);
    dt_model_summary(m, print_comment, NULL);
    dt_model_free(m);
    return 0;
}

/* The settings dtctl run refuses before it starts anything (run_checks.h,
 * the trainer's): 0, or 1 with each error said with its origin. What
 * needs the hosts themselves is dtctl check's. */
static int refused(const dt_config_t *cfg)
{
    dt_hostlist_t hosts = {NULL, 0};
    int np = 0, bad = 0;
    const dt_plugin_t *p = NULL;
    static const struct {
        dt_kind_t kind;
        const char *key;
    } plugins[] = {{DT_KIND_LAUNCHER, "launcher"},
                   {DT_KIND_TRANSPORT, "transport"},
                   {DT_KIND_STORAGE, "storage"}};
    /* the storage plugin only where run stages something */
    const char *data = dt_config_get(cfg, "data", "path");
    for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++)
        if (plugins[i].kind != DT_KIND_STORAGE || (data && *data))
            bad |= run_load_plugin(cfg, plugins[i].kind, plugins[i].key,
                                   &p) != DT_OK;
    bad |= run_check_cluster_keys(cfg) != DT_OK;
    if (dt_cli_job_hosts(cfg, &hosts, &np) != DT_OK)
        return 1;
    const char *layers = dt_config_get(cfg, "model", "layers");
    int trainer = layers && *layers;
    bad |= run_check_restarts(cfg, &hosts, np, trainer) != DT_OK;
    char program[4200];
    if (trainer)
        bad |= run_trainer_prepare(cfg, np, program, sizeof program) != DT_OK;
    dt_hostlist_free(&hosts);
    return bad;
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
    /* 2 for a configuration error, as every other command (dtctl(1)) */
    if (dt_cli_load_config(cli, cli->nargs ? cli->args[0] : NULL, &cfg) !=
        DT_OK)
        return 2;
    print_state_t ps = {NULL};
    dt_config_foreach(cfg, print_value, &ps);
    int bad = print_model(cfg);
    if (!bad && refused(cfg)) {
        dt_error("dtctl run would refuse this configuration: see above "
                 "(dtctl check also tests the hosts)");
        bad = 1;
    }
    dt_config_free(cfg);
    if (dt_cli_flush_stdout("config") != 0)
        return 1;
    return bad ? 2 : 0;
}
