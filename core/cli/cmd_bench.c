/* cmd_bench.c — `dtctl bench allreduce|allgather`: run the benchmark worker
 * (bench/dt_allreduce_bench.c) on N workers through `dtctl run`, so the
 * launcher, transport and every option behave exactly as for a real job.
 * Rank 0 prints the nccl-tests style table. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "cli.h"
#include "run_trainer.h"

#define BENCH_WORKER "dt_allreduce_bench"

/* The worker next to this dtctl (run_trainer.h: $DT_LIBEXECDIR, the
 * build tree's bench/, beside the binary, the installed one). */
static void worker_path(char *buf, size_t len)
{
    dt_cli_worker_program("bench", BENCH_WORKER, buf, len);
}

/* Whether the configuration says how many workers (a value for [cluster]
 * np, hosts or hostfile from anywhere but the defaults). */
static int np_given(const dt_cli_t *cli)
{
    dt_config_t *cfg = NULL;
    int given = 0;
    if (dt_cli_load_config(cli, NULL, &cfg) != DT_OK)
        return 0; /* dtctl run reports it */
    static const char *const keys[] = {"np", "hosts", "hostfile"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        dt_config_source_t src = DT_SRC_DEFAULT;
        if (dt_config_origin(cfg, "cluster", keys[i], &src, NULL) == DT_OK &&
            src != DT_SRC_DEFAULT)
            given = 1;
    }
    dt_config_free(cfg);
    return given;
}

int dt_cmd_bench(dt_cli_t *cli)
{
    if (cli->nargs != 1 || (strcmp(cli->args[0], "allreduce") != 0 &&
                            strcmp(cli->args[0], "allgather") != 0)) {
        dt_error("usage: dtctl bench allreduce|allgather [-n N] "
                 "[--transport NAME] [--sizes 4K:256M] [--iters K] "
                 "[--factor F]");
        return 2;
    }
    if (cli->exec_argv) {
        dt_error("dtctl bench runs its own worker: nothing may follow '--'");
        return 2;
    }
    char path[4200];
    worker_path(path, sizeof path);
    if (access(path, X_OK) != 0) {
        dt_error("benchmark worker %s is missing or not executable: build "
                 "(make) or install dt first",
                 path);
        return 1;
    }
    char *argv[12];
    int k = 0;
    argv[k++] = path;
    if (!strcmp(cli->args[0], "allgather")) {
        argv[k++] = "--op";
        argv[k++] = "allgather";
    }
    if (cli->bench_sizes) {
        argv[k++] = "--sizes";
        argv[k++] = (char *)cli->bench_sizes;
    }
    if (cli->bench_iters) {
        argv[k++] = "--iters";
        argv[k++] = (char *)cli->bench_iters;
    }
    if (cli->bench_factor) {
        argv[k++] = "--factor";
        argv[k++] = (char *)cli->bench_factor;
    }
    argv[k] = NULL;
    /* 2 workers unless something says how many: -n, [cluster] np from a
     * file or the environment, or a host list's slots. (Set as -n, the 2
     * overrode them all.) */
    if (cli->np < 1 && !cli->nproc_per_node && !np_given(cli))
        cli->np = 2;
    cli->command = "run";
    cli->args = NULL;
    cli->nargs = 0;
    cli->exec_argv = argv;
    cli->exec_argc = k;
    return dt_cmd_run(cli);
}
