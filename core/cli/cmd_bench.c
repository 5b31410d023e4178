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
#include "bench_args.h" /* bench/: the workers' option parser */

#define BENCH_WORKER "dt_allreduce_bench"

/* The worker next to this dtctl (run_trainer.h: $DT_LIBEXECDIR, the
 * build tree's bench/, beside the binary, the installed one). */
static void worker_path(char *buf, size_t len)
{
    dt_cli_worker_program("bench", BENCH_WORKER, buf, len);
}

/* Whether the configuration says how many workers (a value for [cluster]
 * np, hosts or hostfile from anywhere but the defaults); -1 when it does
 * not load (said: dtctl bench stops, rather than run say it again). */
static int np_given(const dt_cli_t *cli)
{
    dt_config_t *cfg = NULL;
    int given = 0;
    if (dt_cli_load_config(cli, NULL, &cfg) != DT_OK)
        return -1;
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

/* The operation: the word after bench, or --op; both must agree. NULL
 * after saying why. */
static const char *bench_op(const dt_cli_t *cli)
{
    const char *word = cli->nargs == 1 ? cli->args[0] : NULL;
    bench_args_t a = bench_defaults();
    char err[256];
    if (cli->bench_op &&
        bench_set_opt(&a, "op", cli->bench_op, err, sizeof err) != 0) {
        dt_error("dtctl bench: %s", err);
        return NULL;
    }
    if (cli->nargs > 1 || (!word && !cli->bench_op) ||
        (word && strcmp(word, "allreduce") && strcmp(word, "allgather"))) {
        dt_error("usage: dtctl bench allreduce|allgather [-n N] "
                 "[--transport NAME] [--sizes 4K:256M] [--iters K] "
                 "[--factor F] [--warmup W] [--stat median|mean]");
        return NULL;
    }
    if (word && cli->bench_op && strcmp(word, cli->bench_op) != 0) {
        dt_error("dtctl bench %s --op %s: two operations; give one", word,
                 cli->bench_op);
        return NULL;
    }
    return word ? word : cli->bench_op;
}

/* The worker's argv: path, --op, then every bench option given, each
 * checked by the workers' own parser (bench_args.h) so a bad value is
 * refused here, before a worker starts (argv[0] is path, which the caller
 * fills). The number of words, or -1 after saying why. */
static int worker_argv(const dt_cli_t *cli, const char *op, char *path,
                       char **argv, bench_args_t *a)
{
    const struct {
        const char *name, *flag, *value;
    } opts[] = {{"op", "--op", op},
                {"sizes", "--sizes", cli->bench_sizes},
                {"iters", "--iters", cli->bench_iters},
                {"factor", "--factor", cli->bench_factor},
                {"warmup", "--warmup", cli->bench_warmup},
                {"stat", "--stat", cli->bench_stat}};
    int k = 0;
    *a = bench_defaults();
    argv[k++] = path;
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        char err[256];
        if (!opts[i].value)
            continue;
        if (bench_set_opt(a, opts[i].name, opts[i].value, err, sizeof err)) {
            dt_error("dtctl bench: %s", err);
            return -1;
        }
        argv[k++] = (char *)opts[i].flag;
        argv[k++] = (char *)opts[i].value;
    }
    argv[k] = NULL;
    return k;
}

int dt_cmd_bench(dt_cli_t *cli)
{
    const char *op = bench_op(cli);
    if (!op)
        return 2;
    if (cli->exec_argv) {
        dt_error("dtctl bench runs its own worker: nothing may follow '--'");
        return 2;
    }
    char path[4200], *argv[2 + 2 * 6], err[256];
    bench_args_t a;
    int argc = worker_argv(cli, op, path, argv, &a);
    if (argc < 0)
        return 2;
    /* 2 workers unless something says how many: -n, [cluster] np from a
     * file or the environment, or a host list's slots. (Set as -n, the 2
     * overrode them all.) */
    int given = cli->np < 1 && !cli->nproc_per_node ? np_given(cli) : 1;
    if (given < 0)
        return 2;
    if (!given)
        cli->np = 2;
    /* A count from a file or hosts is known to the workers only: they
     * say it then. */
    if (cli->np >= 1 && bench_check_ranks(&a, cli->np, err, sizeof err)) {
        dt_error("dtctl bench: %s", err);
        return 2;
    }
    worker_path(path, sizeof path);
    if (access(path, X_OK) != 0) {
        dt_error("benchmark worker %s is missing or not executable: build "
                 "(make) or install dt first",
                 path);
        return 1;
    }
    cli->command = "run";
    cli->args = NULL;
    cli->nargs = 0;
    cli->exec_argv = argv;
    cli->exec_argc = argc;
    return dt_cmd_run(cli);
}
