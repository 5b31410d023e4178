/* cli.h — dtctl's shared state: parsed global options and commands. */
#ifndef DT_CLI_H
#define DT_CLI_H

#include <dt/config.h>
#include <dt/hosts.h>

/* --nproc-per-node gpu, cpu, auto (torchrun's spellings): one worker per
 * GPU, per CPU, or per GPU when there is one and else per CPU of this
 * machine, counted when the host list is known (config_setup.c). */
#define DT_NPROC_GPU (-2)
#define DT_NPROC_CPU (-3)
#define DT_NPROC_AUTO (-4)

/* The most workers a job may have (-n, [cluster] np, the slots of a host
 * list: the same bound as core/net/hosts.c's per host). Said in every
 * refusal, so "2147483647" is not called "not positive". */
#define DT_CLI_MAX_WORKERS (1 << 20)

typedef struct dt_cli {
    int np;                 /* -n, -1 when not given                      */
    const char *hosts;      /* -H h1:2,h2:4                               */
    const char *hostfile;   /* --hostfile                                 */
    const char *launcher;   /* --launcher                                 */
    const char *transport;  /* --transport                                */
    const char *storage;    /* --storage                                  */
    const char *config;     /* --config (cluster file)                    */
    char **sets;            /* --set SECTION.KEY=VALUE, in order          */
    int nsets;
    char **exports;         /* -x NAME[=VALUE] (mpirun's), in order: added
                               to [cluster] env_vars                      */
    int nexports;
    int verbose;            /* -v count                                   */
    int quiet;              /* -q                                         */
    const char *command;    /* "run", "plugins", "config", ...            */
    char **args;            /* positional arguments after the command     */
    int nargs;
    char **exec_argv;       /* after "--": the program to launch, or NULL */
    int exec_argc;
    const char *bench_sizes;  /* dtctl bench: --sizes MIN:MAX             */
    const char *bench_iters;  /*              --iters K                   */
    const char *bench_factor; /*              --factor F                  */
    const char *bench_warmup; /*              --warmup W                  */
    const char *bench_stat;   /*              --stat median|mean          */
    const char *bench_op;     /*              --op allreduce|allgather    */
    int no_stage;             /* --no-stage: dtctl run skips staging  */
    const char *metrics;      /* dtctl run --metrics FILE (JSONL)           */
    int resume;               /* dtctl run --resume                         */
    const char *max_restarts; /* dtctl run --max-restarts K                 */
    const char *min_np;       /* dtctl run --min-np M                       */
    const char *max_np;       /* dtctl run --max-np N                       */
    int nproc_per_node;       /* --nproc-per-node N (torchrun), 0: not given,
                                 DT_NPROC_GPU/CPU/AUTO: counted here      */
    int nnodes;               /* --nnodes K (torchrun), 0: not given        */
    const char *interface;    /* --network-interface(s) (horovodrun)        */
    int stdin_none;           /* dtctl run --stdin none: no rank reads it   */
} dt_cli_t;

/* Build the effective configuration: built-in defaults, cluster file
 * (--config, $DT_CONFIG, else ./conf/cluster.ini if present), job file (a
 * positional *.ini), environment, then command-line options; validated.
 * Errors are logged; returns DT_ERR_CONFIG. */
dt_status_t dt_cli_load_config(const dt_cli_t *cli, const char *job_file,
                               dt_config_t **out);

/* The job's hosts and number of workers: [cluster] hosts, else hostfile
 * (relative to the ini file that names it), else localhost with np slots.
 * np is [cluster] np when any source set it, else the hosts' total slots.
 * Free *hosts with dt_hostlist_free(). Errors are logged with origins. */
dt_status_t dt_cli_job_hosts(const dt_config_t *cfg, dt_hostlist_t *hosts,
                             int *np);

/* End of a command's output: 0 when all of stdout was written, else 1
 * with the error said (a full disk, /dev/full): an exit code of 0 must
 * not hide a lost table. */
int dt_cli_flush_stdout(const char *command);

/* path made absolute against the current directory (malloc'd). */
char *dt_cli_absolute_path(const char *path);

int dt_cmd_run(dt_cli_t *cli);
int dt_cmd_plugins(dt_cli_t *cli);
int dt_cmd_config(dt_cli_t *cli);
int dt_cmd_bench(dt_cli_t *cli);
int dt_cmd_check(dt_cli_t *cli);
int dt_cmd_stage(dt_cli_t *cli);
/* dtctl plot FILES... [-o OUT]: argv[0] is "plot"; parses its own options. */
int dt_cmd_plot(int argc, char **argv);
int dt_cmd_plan(int argc, char **argv);

#endif /* DT_CLI_H */
