/* dtctl.c — the command line: global options (accepted before or after the
 * command) and dispatch to one command. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "cli.h"
#include "long_abbrev.h"
#include "cwd_gone.h"
#include "program_hint.h"
#include "std_fds.h"
#include "plugin/plugin_loader.h"

static const char usage_text[] =
    "usage: dtctl [OPTIONS] COMMAND [ARGS...]\n"
    "       dtctl [OPTIONS] JOB.ini            (short for: dtctl run JOB.ini)\n"
    "\n"
    "commands:\n"
    "  run [JOB.ini] [-- PROGRAM ARGS...]  start the workers and watch them;\n"
    "                                      a job file alone runs dt's trainer\n"
    "  plugins                             list plugins and whether they work here\n"
    "  config [JOB.ini]                    show the effective configuration\n"
    "  bench allreduce|allgather [--sizes 4K:256M] [--iters K] [--factor F]\n"
    "        [--warmup W] [--stat median|mean]\n"
    "                                      time allreduce (or allgather) on\n"
    "                                      -n workers (--op OP: the operation\n"
    "                                      as an option)\n"
    "  check [JOB.ini]                     preflight: hosts reachable, host keys,\n"
    "                                      interface, rendezvous port, tools\n"
    "  stage [verify] [JOB.ini]            only put [data] path on every host\n"
    "                                      (verify: only check it is there)\n"
    "  plot METRICS.jsonl... [-o OUT.png|.svg]\n"
    "                                      draw --metrics files with gnuplot\n"
    "  plan JOB.ini --hosts H [--gpus-per-host G] --network 25Gbit\n"
    "                                      predict step time and scaling on\n"
    "                                      a cluster (SimGrid; docs/PLAN.md)\n"
    "  plan --measure                      fit the transports' costs here\n"
    "  help [COMMAND]                      this help (plot and plan have\n"
    "                                      their own)\n"
    "\n"
    "options (before or after the command):\n"
    "  -n, --np N              number of worker processes (also -np N)\n"
    "  -H, --hosts LIST        hosts and slots: h1:2,h2:4 (also --host)\n"
    "      --hostfile FILE     hosts file (host slots=N | host:N | host)\n"
    "      --nproc-per-node N  workers per host (torchrun): -n N on one host;\n"
    "                          with -H/--hostfile every host gets N slots;\n"
    "                          gpu, cpu: one per GPU, per CPU of this\n"
    "                          machine; auto: gpu if it has one, else cpu\n"
    "      --nnodes K          torchrun: must match the hosts of -H/--hostfile\n"
    "      --network-interface IF  = --set cluster.interface=IF (horovodrun)\n"
    "      --launcher NAME     launcher plugin (local, ssh, mpi, slurm, sge, yarn)\n"
    "      --transport NAME    transport plugin (tcp, ucx, nccl)\n"
    "      --storage NAME      storage plugin (local, rsync, nfs, efs)\n"
    "      --config FILE       cluster file (default $DT_CONFIG, else\n"
    "                          ./conf/cluster.ini if present, else built-in)\n"
    "      --set SEC.KEY=VAL   override one setting (repeatable)\n"
    "  -x NAME[=VALUE]         give every worker this variable (dtctl's\n"
    "                          value, or VALUE; repeatable; [cluster]\n"
    "                          env_vars)\n"
    "      --no-stage          dtctl run: start without staging the data set\n"
    "      --metrics FILE      trainer: one JSON line per epoch to FILE (a\n"
    "                          fresh run empties it, --resume appends)\n"
    "      --resume            trainer: continue from the newest valid\n"
    "                          checkpoint in [train] checkpoint_dir\n"
    "      --max-restarts K    dtctl run: start the job again up to K times\n"
    "                          after a worker fails (the trainer resumes\n"
    "                          from its newest checkpoint)\n"
    "      --min-np M          dtctl run, with restarts: go on with at least M\n"
    "                          workers when hosts fail or cannot be reached\n"
    "      --max-np N          dtctl run: at most N workers (hosts that come\n"
    "                          back rejoin at a restart up to N)\n"
    "      --stdin 0|none      dtctl run -- PROGRAM: rank 0 reads dtctl's\n"
    "                          stdin (default, as mpirun), or none does\n"
    "  -v, --verbose           more detail (-vv: trace)\n"
    "  -q, --quiet             errors only\n"
    "      --version           print the version\n"
    "  -h, --help              this help\n";

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Levenshtein distance of a and b (short strings). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b), row[64];
    if (n >= 63 || m >= 63)
        return (size_t)-1;
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

/* Other launchers' options with no dt equivalent of the same meaning:
 * refused with what to write instead. */
static const struct foreign {
    const char *name, *advice;
} foreign_opts[] = {
    {"master-addr", "dtctl picks MASTER_ADDR itself (rank 0's host, "
                    "127.0.0.1 on one host); choose the network with "
                    "--network-interface IF or --set cluster.interface=IF"},
    {"master-port", "use --set cluster.master_port=N (unset: a free port "
                    "for a job on one host, 29500 across hosts)"},
    {"node-rank", "dtctl starts the workers of every node from this one "
                  "command: name the nodes with -H node1:N,node2:N or "
                  "--hostfile FILE instead of one command per node"},
    {"rdzv-endpoint", "dtctl runs the job's rendezvous itself: name the "
                      "nodes with -H node1:N,node2:N or --hostfile FILE"},
    {"rdzv-backend", "dtctl runs the job's rendezvous itself: name the "
                     "nodes with -H node1:N,node2:N or --hostfile FILE"},
    {"rdzv-id", "dtctl gives every job its own id (DT_JOB_ID)"},
    {"rdzv-conf", "dtctl runs the job's rendezvous itself (its timeout: "
                  "--set cluster.timeout=60s)"},
    {"module", "write the module after '--': dtctl run -n N -- python3 -m "
               "pkg.mod"},
    {"no-python", "dtctl runs the program after '--' as it is: dtctl run "
                  "-n N -- ./program"},
    {"log-dir", "dtctl prefixes each line with its rank on its own stdout "
                "and stderr: redirect them (dtctl run ... > out 2> err); dt's "
                "trainer writes TensorBoard files with --set train.log_dir=DIR"},
    {"tee", "each worker's stdout and stderr come to dtctl's, prefixed "
            "[rank]: redirect or tee dtctl's own"},
    {"redirects", "each worker's stdout and stderr come to dtctl's, "
                  "prefixed [rank]: redirect dtctl's own"},
    {"monitor-interval", "dtctl notices a worker's end at once (no "
                         "polling interval to set)"},
    {"start-method", "dtctl starts each worker as its own process (no "
                     "start method to choose)"},
    {"role", "every dtctl worker has one role (ROLE_NAME=default)"},
    {"local-addr", "choose the network with --network-interface IF or "
                   "--set cluster.interface=IF"},
    {"start-timeout", "use --set cluster.timeout=60s (how long the "
                      "workers wait on each other at start and later)"},
    {"oversubscribe", "dtctl starts -n workers whatever the cores; give a "
                      "host more slots with -H host:N"},
    {"bind-to", "dt's trainer binds its workers with --set cluster.bind="
                "auto|cores|none; with --launcher=mpi, [launcher.mpi] "
                "extra_args = --bind-to core"},
    {"allow-run-as-root", "dtctl runs as any user (with --launcher=mpi it "
                          "passes --allow-run-as-root to mpirun itself)"},
    {"mpi", "use --launcher=mpi to start the workers with Open MPI's mpirun"},
    {"gloo", "dt's launchers start the workers without MPI already "
             "(--launcher=local or ssh); drop --gloo"},
};

/* Other launchers' one-dash words (mpirun, MPICH, horovodrun) that getopt
 * would misread (-mca as -m ca, -npernode as -n pernode): said with what
 * to write instead. 1 when a is one of them. */
static int mpirun_word(const char *a)
{
    static const struct {
        const char *word, *advice;
    } words[] = {
        {"-mca", "with --launcher=mpi, [launcher.mpi] extra_args = --mca "
                 "btl tcp (dt's own traffic: --transport)"},
        {"--mca", "with --launcher=mpi, [launcher.mpi] extra_args = --mca "
                  "btl tcp (dt's own traffic: --transport)"},
        {"-npernode", "--nproc-per-node N"},
        {"--npernode", "--nproc-per-node N"},
        {"-N", "--nproc-per-node N"},
        {"-map-by", "with --launcher=mpi, [launcher.mpi] map_by"},
        {"--map-by", "with --launcher=mpi, [launcher.mpi] map_by"},
        {"-bind-to", "--set cluster.bind=auto|cores|none"},
        {"-wdir", "--set cluster.workdir=DIR"},
        {"--wdir", "--set cluster.workdir=DIR"},
        {"-genv", "-x NAME=VALUE"},
        {"-oversubscribe", "give a host more slots with -H host:N"},
        {"-p", "the ssh port: port=P on the hostfile line, or --set "
               "launcher.ssh.port=P (launcher.mpi.ssh_port with "
               "--launcher=mpi)"},
        {"--ssh-port", "the ssh port: port=P on the hostfile line, or --set "
                       "launcher.ssh.port=P (launcher.mpi.ssh_port with "
                       "--launcher=mpi)"},
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcmp(a, words[i].word) == 0) {
            dt_error("option '%s' has no dtctl equivalent: %s (an option of "
                     "your program goes after '--' with it: dtctl run -n 2 "
                     "-- python3 train.py %s ...)",
                     a, words[i].advice, a);
            return 1;
        }
    return 0;
}

/* The option codes; OPT_FOREIGN*: other tools' options, refused. */
enum { OPT_HOSTFILE = 256, OPT_LAUNCHER, OPT_TRANSPORT, OPT_STORAGE,
       OPT_CONFIG, OPT_SET, OPT_VERSION, OPT_SIZES, OPT_ITERS, OPT_FACTOR,
       OPT_WARMUP, OPT_STAT, OPT_OP, OPT_NO_STAGE, OPT_METRICS, OPT_RESUME,
       OPT_MAX_RESTARTS, OPT_MIN_NP, OPT_MAX_NP, OPT_NPROC_PER_NODE,
       OPT_NNODES, OPT_INTERFACE, OPT_STANDALONE, OPT_STDIN, OPT_FOREIGN,
       OPT_FOREIGN_ARG };

static int foreign_val(int val)
{
    return val == OPT_FOREIGN || val == OPT_FOREIGN_ARG;
}

static int parse_args(int argc, char **argv, dt_cli_t *cli)
{
    static const struct option longopts[] = {
        {"np", required_argument, NULL, 'n'},
        {"hosts", required_argument, NULL, 'H'},
        {"host", required_argument, NULL, 'H'},
        {"nproc-per-node", required_argument, NULL, OPT_NPROC_PER_NODE},
        {"nnodes", required_argument, NULL, OPT_NNODES},
        {"network-interface", required_argument, NULL, OPT_INTERFACE},
        {"network-interfaces", required_argument, NULL, OPT_INTERFACE},
        {"standalone", no_argument, NULL, OPT_STANDALONE},
        {"master-addr", required_argument, NULL, OPT_FOREIGN_ARG},
        {"master-port", required_argument, NULL, OPT_FOREIGN_ARG},
        {"node-rank", required_argument, NULL, OPT_FOREIGN_ARG},
        {"rdzv-endpoint", required_argument, NULL, OPT_FOREIGN_ARG},
        {"rdzv-backend", required_argument, NULL, OPT_FOREIGN_ARG},
        {"rdzv-id", required_argument, NULL, OPT_FOREIGN_ARG},
        {"rdzv-conf", required_argument, NULL, OPT_FOREIGN_ARG},
        {"module", no_argument, NULL, OPT_FOREIGN},
        {"no-python", no_argument, NULL, OPT_FOREIGN},
        {"log-dir", required_argument, NULL, OPT_FOREIGN_ARG},
        {"tee", required_argument, NULL, OPT_FOREIGN_ARG},
        {"redirects", required_argument, NULL, OPT_FOREIGN_ARG},
        {"monitor-interval", required_argument, NULL, OPT_FOREIGN_ARG},
        {"start-method", required_argument, NULL, OPT_FOREIGN_ARG},
        {"role", required_argument, NULL, OPT_FOREIGN_ARG},
        {"local-addr", required_argument, NULL, OPT_FOREIGN_ARG},
        {"start-timeout", required_argument, NULL, OPT_FOREIGN_ARG},
        {"oversubscribe", no_argument, NULL, OPT_FOREIGN},
        {"bind-to", required_argument, NULL, OPT_FOREIGN_ARG},
        {"allow-run-as-root", no_argument, NULL, OPT_FOREIGN},
        {"mpi", no_argument, NULL, OPT_FOREIGN},
        {"gloo", no_argument, NULL, OPT_FOREIGN},
        {"hostfile", required_argument, NULL, OPT_HOSTFILE},
        {"launcher", required_argument, NULL, OPT_LAUNCHER},
        {"transport", required_argument, NULL, OPT_TRANSPORT},
        {"storage", required_argument, NULL, OPT_STORAGE},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"set", required_argument, NULL, OPT_SET},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, 'h'},
        {"sizes", required_argument, NULL, OPT_SIZES},
        {"iters", required_argument, NULL, OPT_ITERS},
        {"factor", required_argument, NULL, OPT_FACTOR},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"stat", required_argument, NULL, OPT_STAT},
        {"op", required_argument, NULL, OPT_OP},
        {"no-stage", no_argument, NULL, OPT_NO_STAGE},
        {"metrics", required_argument, NULL, OPT_METRICS},
        {"resume", no_argument, NULL, OPT_RESUME},
        {"max-restarts", required_argument, NULL, OPT_MAX_RESTARTS},
        {"min-np", required_argument, NULL, OPT_MIN_NP},
        {"max-np", required_argument, NULL, OPT_MAX_NP},
        {"stdin", required_argument, NULL, OPT_STDIN},
        {NULL, 0, NULL, 0}};
    /* The program after "--" is never parsed as our options: cut it off. */
    int end = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            end = i;
            cli->exec_argv = argv + i + 1;
            cli->exec_argc = argc - i - 1;
            break;
        }
    /* The spellings of mpirun (-np, -host, -hostfile, -machinefile: one
     * dash) and torchrun (--nproc_per_node: underscores) mean dt's. */
    for (int i = 1; i < end; i++) {
        char *a = argv[i];
        if (strcmp(a, "-np") == 0)
            argv[i] = (char *)"--np";
        else if (strcmp(a, "-host") == 0)
            argv[i] = (char *)"--hosts";
        else if (strcmp(a, "-hostfile") == 0 ||
                 strcmp(a, "-machinefile") == 0 ||
                 strcmp(a, "--machinefile") == 0)
            argv[i] = (char *)"--hostfile";
        else {
            if (a[0] == '-' && a[1] == '-')
                for (char *p = a + 2; *p && *p != '='; p++)
                    if (*p == '_')
                        *p = '-';
            if (mpirun_word(a))
                return 2; /* said */
        }
    }
    static const char shortopts[] = ":n:H:x:vqh";
    if (dt_cli_expand_abbrev(end, argv, longopts, shortopts, foreign_val))
        return 2; /* said */
    int c, index = -1;
    opterr = 0;
    while ((c = getopt_long(end, argv, shortopts, longopts, &index)) !=
           -1) {
        switch (c) {
        case 'n': {
            char *e;
            long v = strtol(optarg, &e, 10);
            if (*e || v < 1 || v > DT_CLI_MAX_WORKERS) {
                dt_error("-n/--np wants a number of workers from 1 to %d, "
                         "got '%s'", DT_CLI_MAX_WORKERS, optarg);
                return 2;
            }
            cli->np = (int)v;
            break;
        }
        case 'H': cli->hosts = optarg; break;
        case OPT_HOSTFILE: cli->hostfile = optarg; break;
        case OPT_LAUNCHER: cli->launcher = optarg; break;
        case OPT_TRANSPORT: cli->transport = optarg; break;
        case OPT_STORAGE: cli->storage = optarg; break;
        case OPT_CONFIG: cli->config = optarg; break;
        case OPT_SET: {
            char **n = realloc(cli->sets, (size_t)(cli->nsets + 1) * sizeof *n);
            if (!n)
                return 2;
            cli->sets = n;
            cli->sets[cli->nsets++] = optarg;
            break;
        }
        case 'x': {
            char **n = realloc(cli->exports,
                               (size_t)(cli->nexports + 1) * sizeof *n);
            if (!n)
                return 2;
            cli->exports = n;
            cli->exports[cli->nexports++] = optarg;
            break;
        }
        case OPT_SIZES: cli->bench_sizes = optarg; break;
        case OPT_ITERS: cli->bench_iters = optarg; break;
        case OPT_FACTOR: cli->bench_factor = optarg; break;
        case OPT_WARMUP: cli->bench_warmup = optarg; break;
        case OPT_STAT: cli->bench_stat = optarg; break;
        case OPT_OP: cli->bench_op = optarg; break;
        case OPT_NO_STAGE: cli->no_stage = 1; break;
        case OPT_METRICS: cli->metrics = optarg; break;
        case OPT_RESUME: cli->resume = 1; break;
        case OPT_MAX_RESTARTS: cli->max_restarts = optarg; break;
        case OPT_MIN_NP: cli->min_np = optarg; break;
        case OPT_MAX_NP: cli->max_np = optarg; break;
        case OPT_STDIN:
            /* mpirun's --stdin rank|all|none: dt forwards to rank 0 only */
            if (strcmp(optarg, "none") == 0)
                cli->stdin_none = 1;
            else if (strcmp(optarg, "0") != 0) {
                dt_error("--stdin %s: dtctl gives its standard input to rank "
                         "0 (--stdin 0, the default) or to none (--stdin "
                         "none); a program that wants it on every rank can "
                         "read a file instead",
                         optarg);
                return 2;
            }
            break;
        case OPT_NPROC_PER_NODE:
        case OPT_NNODES: {
            char *e;
            long v = strtol(optarg, &e, 10);
            const char *name = c == OPT_NNODES ? "--nnodes" : "--nproc-per-node";
            if (c == OPT_NPROC_PER_NODE && (strcmp(optarg, "gpu") == 0 ||
                                            strcmp(optarg, "cpu") == 0 ||
                                            strcmp(optarg, "auto") == 0)) {
                cli->nproc_per_node = optarg[0] == 'g'   ? DT_NPROC_GPU
                                      : optarg[0] == 'c' ? DT_NPROC_CPU
                                                         : DT_NPROC_AUTO;
                break;
            }
            if (*e == ':' && c == OPT_NNODES) {
                dt_error("--nnodes %s: give the nodes with -H node1:N,"
                         "node2:N or --hostfile FILE; an elastic job is "
                         "--min-np M (go on with at least M workers when "
                         "hosts fail) and --max-np N, with --max-restarts K",
                         optarg);
                return 2;
            }
            if (*e || v < 1 || v > DT_CLI_MAX_WORKERS) {
                dt_error("%s wants a number from 1 to %d%s, got '%s'", name,
                         DT_CLI_MAX_WORKERS,
                         c == OPT_NPROC_PER_NODE ? ", gpu, cpu or auto" : "",
                         optarg);
                return 2;
            }
            if (c == OPT_NNODES)
                cli->nnodes = (int)v;
            else
                cli->nproc_per_node = (int)v;
            break;
        }
        case OPT_INTERFACE: cli->interface = optarg; break;
        case OPT_STANDALONE: break; /* one node: dt's default already */
        case OPT_FOREIGN:
        case OPT_FOREIGN_ARG:
            for (size_t i = 0;
                 i < sizeof foreign_opts / sizeof *foreign_opts; i++)
                if (index >= 0 &&
                    strcmp(foreign_opts[i].name, longopts[index].name) == 0)
                    dt_error("option '--%s' has no dtctl equivalent: %s",
                             longopts[index].name, foreign_opts[i].advice);
            return 2;
        case 'v': cli->verbose++; break;
        case 'q': cli->quiet = 1; break;
        case OPT_VERSION:
            printf("dtctl (dt) %s\n", PACKAGE_VERSION);
            exit(dt_cli_flush_stdout("--version"));
        case 'h':
            fputs(usage_text, stdout);
            exit(dt_cli_flush_stdout("--help"));
        case ':':
            dt_error("option '%s' needs a value; see dtctl --help",
                     argv[optind - 1]);
            return 2;
        default: {
            /* The nearest of dtctl's own long options, if one is near. */
            char opt[64];
            const char *given = argv[optind - 1], *near = NULL;
            /* --resume=yes: an option of dtctl's, given a value it does
             * not take (getopt's optopt is then its code, not a letter) */
            if (strncmp(given, "--", 2) == 0 && strchr(given, '=')) {
                size_t n = strcspn(given + 2, "=");
                for (size_t i = 0; longopts[i].name; i++)
                    if (longopts[i].has_arg == no_argument &&
                        strlen(longopts[i].name) == n &&
                        strncmp(longopts[i].name, given + 2, n) == 0) {
                        dt_error("option '--%s' takes no value (given "
                                 "'%s'); see dtctl --help",
                                 longopts[i].name, given);
                        return 2;
                    }
            }
            if (optopt == 'm') { /* torchrun -m MODULE */
                dt_error("option '-m' has no dtctl equivalent: write the "
                         "module after '--': dtctl run -n N -- python3 -m "
                         "pkg.mod");
                return 2;
            }
            if (optopt)
                snprintf(opt, sizeof opt, "-%c", optopt);
            else
                snprintf(opt, sizeof opt, "%.*s",
                         (int)strcspn(given, "="), given);
            size_t best = (size_t)-1;
            const char *name = opt + strspn(opt, "-");
            for (size_t i = 0; !optopt && longopts[i].name; i++) {
                int refused = longopts[i].val == OPT_FOREIGN ||
                              longopts[i].val == OPT_FOREIGN_ARG;
                size_t d = edit_distance(name, longopts[i].name);
                if (!refused && d < best) {
                    best = d;
                    near = longopts[i].name;
                }
            }
            size_t len = strlen(name);
            if (near && best <= (len < 6 ? 1 : len / 3))
                dt_error("unknown option '%s'; did you mean '--%s'? (see "
                         "dtctl --help)", opt, near);
            else
                dt_error("unknown option '%s'; see dtctl --help (a program "
                         "and its own options go after '--': dtctl run -n 2 "
                         "-- python3 train.py --lr 0.1)", opt);
            return 2;
        }
        }
        index = -1;
    }
    /* getopt_long moved the positional arguments to argv[optind..end). */
    if (optind < end) {
        if (ends_with(argv[optind], ".ini"))
            cli->command = "run";
        else
            cli->command = argv[optind++];
    }
    cli->args = argv + optind;
    cli->nargs = end - optind;
    return 0;
}

/* -v, -vv, --verbose (count: how much), -q, --quiet (quiet); 0: other. */
static int log_option(const char *a, int *verbose, int *quiet)
{
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
        ++*verbose;
    else if (!strcmp(a, "-vv"))
        *verbose += 2;
    else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
        *quiet = 1;
    else
        return 0;
    return 1;
}

/* dtctl plot and plan parse their own options (cmd_plot.c, cmd_plan.c);
 * -v and -q may come before or after them, as with any command (taken
 * out of what they parse). 0: not one of them. */
/* `dtctl help [COMMAND]`: plot and plan have their own help, every other
 * command is in dtctl's. */
static int help_command(int argc, char **argv)
{
    const char *topic = argc > 1 ? argv[1] : NULL;
    static const char *const known[] = {"run",   "plugins", "config",
                                        "bench", "check",   "stage",
                                        "help",  "--help",  NULL};
    if (topic && (!strcmp(topic, "plot") || !strcmp(topic, "plan"))) {
        char *args[] = {argv[1], "--help", NULL};
        return !strcmp(topic, "plot") ? dt_cmd_plot(2, args)
                                      : dt_cmd_plan(2, args);
    }
    for (int k = 0; topic && known[k]; k++)
        if (!strcmp(topic, known[k]))
            topic = NULL;
    if (topic || argc > 2) {
        dt_error("dtctl help takes one command (run, plugins, config, "
                 "bench, check, stage, plot, plan), not '%s'",
                 argc > 2 ? argv[2] : topic);
        return 2;
    }
    fputs(usage_text, stdout);
    return dt_cli_flush_stdout("help");
}

static int own_options_command(int argc, char **argv, int *rc)
{
    int i = 1, verbose = 0, quiet = 0;
    while (i < argc && log_option(argv[i], &verbose, &quiet))
        i++;
    if (i < argc && strcmp(argv[i], "help") == 0) {
        *rc = help_command(argc - i, argv + i);
        return 1;
    }
    if (i >= argc || (strcmp(argv[i], "plot") && strcmp(argv[i], "plan")))
        return 0;
    int n = 1;
    for (int j = i + 1; j < argc; j++) /* in place: argv is ours */
        if (!log_option(argv[j], &verbose, &quiet))
            argv[i + n++] = argv[j];
    argv[i + n] = NULL;
    argc = i + n;
    dt_log_set_level(quiet ? DT_LOG_ERROR : verbose >= 2 ? DT_LOG_TRACE
                                          : verbose == 1 ? DT_LOG_DEBUG
                                                         : DT_LOG_INFO);
    *rc = strcmp(argv[i], "plot") == 0 ? dt_cmd_plot(argc - i, argv + i)
                                       : dt_cmd_plan(argc - i, argv + i);
    if (*rc == 0) /* plan's table is its result: a lost one is an error */
        *rc = dt_cli_flush_stdout(argv[i]);
    return 1;
}

/* An option of another command is refused, not ignored (dtctl config
 * --sizes 4K exited 0). 0, or 2 (said). */
static int options_fit(const dt_cli_t *cli)
{
    const char *c = cli->command;
    const char *bench = cli->bench_sizes    ? "--sizes"
                        : cli->bench_iters  ? "--iters"
                        : cli->bench_factor ? "--factor"
                        : cli->bench_warmup ? "--warmup"
                        : cli->bench_stat   ? "--stat"
                        : cli->bench_op     ? "--op"
                                            : NULL;
    if (bench && strcmp(c, "bench") != 0) {
        dt_error("%s is an option of dtctl bench, not of dtctl %s", bench,
                 c);
        return 2;
    }
    if (cli->stdin_none && strcmp(c, "run") != 0) {
        dt_error("--stdin is an option of dtctl run, not of dtctl %s", c);
        return 2;
    }
    if (cli->no_stage && strcmp(c, "run") != 0 && strcmp(c, "bench") != 0) {
        dt_error("--no-stage is an option of dtctl run, not of dtctl %s", c);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    dt_cli_t cli = {.np = -1};
    int rc;
    if (dt_std_fds_open() != 0) {
        dt_error("cannot open /dev/null for a closed stdin, stdout or "
                 "stderr: %s (start dtctl with all three open)",
                 strerror(errno));
        return 1;
    }
    if (own_options_command(argc, argv, &rc))
        return rc;
    rc = parse_args(argc, argv, &cli);
    if (rc != 0) {
        free(cli.sets);
        free(cli.exports);
        return rc;
    }
    dt_log_set_level(cli.quiet ? DT_LOG_ERROR
                     : cli.verbose >= 2 ? DT_LOG_TRACE
                     : cli.verbose == 1 ? DT_LOG_DEBUG
                                        : DT_LOG_INFO);
    if (!cli.command && cli.exec_argv)
        cli.command = "run";
    if (cli.command && strcmp(cli.command, "help") != 0)
        dt_warn_if_cwd_gone();
    if (!cli.command) {
        fputs(usage_text, stderr);
        rc = 2;
    } else if ((rc = options_fit(&cli)) != 0) {
        /* said */
    } else if (strcmp(cli.command, "run") == 0) {
        rc = dt_cmd_run(&cli);
    } else if (strcmp(cli.command, "plugins") == 0) {
        rc = dt_cmd_plugins(&cli);
    } else if (strcmp(cli.command, "config") == 0) {
        rc = dt_cmd_config(&cli);
    } else if (strcmp(cli.command, "bench") == 0) {
        rc = dt_cmd_bench(&cli);
    } else if (strcmp(cli.command, "check") == 0) {
        rc = dt_cmd_check(&cli);
    } else if (strcmp(cli.command, "stage") == 0) {
        rc = dt_cmd_stage(&cli);
    } else if (strcmp(cli.command, "help") == 0) {
        /* after options other than -v/-q (own_options_command's) */
        char *argv_help[4] = {"help", cli.nargs > 0 ? cli.args[0] : NULL,
                              cli.nargs > 1 ? cli.args[1] : NULL, NULL};
        rc = help_command(cli.nargs > 2 ? 3 : cli.nargs + 1, argv_help);
    } else if (!strcmp(cli.command, "plot") || !strcmp(cli.command, "plan")) {
        dt_error("dtctl %s takes its own options: put them after '%s' "
                 "(only -v and -q may come before it)", cli.command,
                 cli.command);
        rc = 2;
    } else {
        char hint[512];
        dt_cli_program_hint(&cli, cli.command, hint, sizeof hint);
        dt_error("unknown command '%s' (commands: run, plugins, config, bench, check, stage, plot, plan, help); "
                 "see dtctl --help; to run a program: %s",
                 cli.command, hint);
        rc = 2;
    }
    dt_plugins_unload_all();
    free(cli.sets);
    free(cli.exports);
    return rc;
}
