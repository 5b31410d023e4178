/* cmd_bench.c — `dtctl bench allreduce`: run the allreduce benchmark worker
 * (bench/dt_allreduce_bench.c) on N workers through `dtctl run`, so the
 * launcher, transport and every option behave exactly as for a real job.
 * Rank 0 prints the nccl-tests style table. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "cli.h"

#define BENCH_WORKER "dt_allreduce_bench"

/* The worker next to this dtctl: the build tree's bench/ when dtctl runs
 * from the build tree (as the plugins are found), else the installed one. */
static void worker_path(char *buf, size_t len)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    size_t bl = strlen(DT_BUILD_DIR);
    if (strncmp(self, DT_BUILD_DIR, bl) == 0 && self[bl] == '/')
        snprintf(buf, len, "%s/bench/%s", DT_BUILD_DIR, BENCH_WORKER);
    else
        snprintf(buf, len, "%s/%s", DT_LIBEXEC_DIR, BENCH_WORKER);
}

int dt_cmd_bench(dt_cli_t *cli)
{
    if (cli->nargs != 1 || strcmp(cli->args[0], "allreduce") != 0) {
        dt_error("usage: dtctl bench allreduce [-n N] [--transport NAME] "
                 "[--sizes 4K:256M] [--iters K] [--factor F] (the only "
                 "benchmark is allreduce)");
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
    char *argv[10];
    int k = 0;
    argv[k++] = path;
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
    if (cli->np < 1)
        cli->np = 2;
    cli->command = "run";
    cli->args = NULL;
    cli->nargs = 0;
    cli->exec_argv = argv;
    cli->exec_argc = k;
    return dt_cmd_run(cli);
}
