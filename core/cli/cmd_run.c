/* cmd_run.c — `dtctl run [JOB.ini] [-- PROGRAM ARGS...]`: configuration,
 * hosts and placement, plugins, the worker environment, launch, then the
 * supervisor decides the exit code.
 *
 * With [cluster] max_restarts (--max-restarts) the whole launch runs again
 * after a worker failure (run_restart.c decides, logs and waits).
 *
 * Exit codes: 0 all workers succeeded; the root failure's code (the rank
 * the workers named as failed first, else a rank killed by a signal, else
 * the first to fail; 128+N when killed by signal N; 124 when the named
 * rank hung; supervise.h) of the last attempt; 128+N when dtctl got
 * signal N; 75 the job was preempted and is resumable; 78 a worker runs
 * another dt (protocol) than dtctl; 2 bad usage,
 * configuration or plugin; 127 the workers could not be started; 1 any
 * other failure of dtctl itself. */
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <sys/resource.h>

#include <dt/log.h>
#include "cli.h"
#include "oom_counts.h"
#include "crash_site.h"
#include "output_lines.h"
#include "plugin/plugin_loader.h"
#include "program_hint.h"
#include "run_env.h"
#include "run_checks.h"
#include "run_culprit.h"
#include "run_members.h"
#include "run_rendezvous.h"
#include "run_restart.h"
#include "run_stage.h"
#include "run_test_hold.h"
#include "run_trainer.h"
#include "std_fds.h"
#include "stop_signals.h"
#include "supervise.h"

#define EXIT_USAGE 2
#define EXIT_CANNOT_START 127

/* Everything one run owns, released in one place. */
typedef struct run_state {
    dt_config_t *cfg;
    dt_hostlist_t hosts;
    dt_placement_t *placement;
    int np;
    run_members_t members;      /* who takes part in each attempt      */
    /* This attempt's hosts, placement and workers: the configured ones,
     * or with [cluster] min_np those run_members_select chose. */
    const dt_hostlist_t *att_hosts;
    dt_placement_t *att_place;  /* owned when != placement    */
    int att_np;
    run_job_t job;
    env_list_t common;
    env_list_t *per_rank;       /* att_np lists            */
    const char *const **rank_env;
    const dt_launcher_ops_t *ops;
    void *ctx;
    output_lines_t *lines;
    crash_sites_t *crashes;     /* the plugin op each rank crashed in */
    dt_store_server_t *store;   /* the job's rendezvous store */
    char rendezvous[160];       /* its "host:port" (DT_RENDEZVOUS) */
    int trainer;                /* the workers run dt-train   */
    int nworkers, nservers;     /* [train] mode = async: np = workers +
                                   servers; else nservers 0  */
    int signals;                /* stop_signals installed     */
    int one_machine;            /* local launcher: all ranks here */
    int suspends;               /* its signal op stops and continues
                                   the workers (Ctrl-Z)           */
    char no_suspend[160];       /* else why not, for Ctrl-Z's message */
    int signals_as_is;          /* its signal op sends SIGINT itself to
                                   the workers' groups (local, ssh) */
} run_state_t;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The job file, if any; a clear error for what run cannot do. */
static int check_usage(const dt_cli_t *cli, const char **job_file)
{
    *job_file = NULL;
    if (cli->nargs > 1) {
        dt_error("dtctl run takes at most one job file, got '%s' and '%s'; "
                 "put the program to run after '--'",
                 cli->args[0], cli->args[1]);
        return EXIT_USAGE;
    }
    if (cli->nargs == 1) {
        if (!ends_with(cli->args[0], ".ini")) {
            /* torchrun's habit (torchrun train.py) */
            char hint[512];
            dt_cli_program_hint(cli, cli->args[0], hint, sizeof hint);
            dt_error("'%s' is not a job file (JOB.ini); to run a program put "
                     "it after '--': %s ...",
                     cli->args[0], hint);
            return EXIT_USAGE;
        }
        *job_file = cli->args[0];
    }
    /* A job file alone: the built-in trainer. Neither a job file nor a
     * program: the configuration may still describe a job (a cluster file
     * with [model]); job_in_config decides once it is loaded. */
    return 0;
}

/* No job file and no program: dt's trainer when the configuration (a
 * cluster file with the job's sections, the environment, --set) has
 * [model] layers; else nothing to run. */
static int job_in_config(const dt_config_t *cfg)
{
    const char *layers = dt_config_get(cfg, "model", "layers");
    const char *where = "default";
    if (layers && *layers) {
        dt_config_origin(cfg, "model", "layers", NULL, &where);
        dt_debug("no job file: the configuration describes the job ([model] "
                 "layers from %s); running dt's trainer", where);
        return 0;
    }
    dt_error("nothing to run: give a job file for dt's trainer (dtctl run "
             "-n 2 conf/examples/fashion-mnist-mlp.ini), a cluster file "
             "with the job's [model], [data] and [train], or a program "
             "after '--', e.g. dtctl run -n 4 -- python train.py (see "
             "dtctl --help)");
    return EXIT_USAGE;
}

/* Start the job's rendezvous store; its address and the workers' config
 * join the common environment. */
static dt_status_t start_rendezvous(run_state_t *s)
{
    char **extra = NULL;
    DT_CHECK(run_start_rendezvous(s->cfg, s->att_hosts, s->job.token,
                                  &s->store, &extra));
    dt_status_t st = DT_OK;
    for (char **e = extra; st == DT_OK && *e; e++) {
        char *eq = strchr(*e, '=');
        *eq = '\0';
        if (strcmp(*e, "DT_RENDEZVOUS") == 0)
            snprintf(s->rendezvous, sizeof s->rendezvous, "%s", eq + 1);
        st = env_list_addf(&s->common, *e, "%s", eq + 1);
    }
    dt_strv_free(extra);
    return st;
}

/* The hostfile's weight=W per host: each worker's weight, in rank order,
 * reaches the workers as [cluster] work_load (unequal shares). */
static dt_status_t host_weights(run_state_t *s)
{
    const dt_hostlist_t *h = s->att_hosts;
    int any = 0;
    for (size_t i = 0; i < h->n; i++)
        any |= h->hosts[i].weight > 0;
    if (!any)
        return DT_OK;
    if (dt_config_get(s->cfg, "cluster", "work_load")) {
        const char *where = "default";
        dt_config_origin(s->cfg, "cluster", "work_load", NULL, &where);
        dt_error("%s: [cluster] work_load is set and the hostfile gives "
                 "weight= too; keep one", where);
        return DT_ERR_CONFIG;
    }
    size_t cap = (size_t)s->att_np * 24 + 1, at = 0;
    char *list = malloc(cap);
    if (!list)
        return DT_ERR_NOMEM;
    list[0] = '\0';
    for (int r = 0; r < s->att_np; r++) {
        double w = h->hosts[s->att_place[r].host].weight;
        at += (size_t)snprintf(list + at, cap - at, "%s%.17g", r ? "," : "",
                               w > 0 ? w : 1.0);
    }
    dt_info("hostfile weights: work_load = %s", list);
    dt_status_t st = env_list_addf(&s->common, "DT_CLUSTER_WORK_LOAD", "%s",
                                   list);
    free(list);
    return st;
}

static dt_status_t build_env(run_state_t *s)
{
    /* The store first: its address is MASTER_ADDR for other hosts when
     * rank 0's host is only a loopback name. */
    DT_CHECK(start_rendezvous(s));
    run_job_reach_master(&s->job, s->rendezvous);
    DT_CHECK(run_env_common(&s->job, &s->common));
    /* The user's variables over what dtctl derives ([cluster] interface);
     * then, for a program, the defaults the user did not give. */
    if (!s->trainer)
        DT_CHECK(run_env_interface(s->cfg, &s->common));
    DT_CHECK(run_env_user(s->cfg, &s->common));
    if (!s->trainer)
        DT_CHECK(run_env_program(
            &s->job, DT_LAUNCHER_FLAGS(s->ops) & DT_LAUNCHER_PLACES_RANKS,
            &s->common));
    DT_CHECK(host_weights(s));
    s->per_rank = calloc((size_t)s->att_np, sizeof *s->per_rank);
    s->rank_env = calloc((size_t)s->att_np, sizeof *s->rank_env);
    if (!s->per_rank || !s->rank_env)
        return DT_ERR_NOMEM;
    if (s->nservers) {
        DT_CHECK(env_list_addf(&s->common, "DT_NUM_SERVERS", "%d",
                               s->nservers));
        DT_CHECK(env_list_addf(&s->common, "DT_NUM_WORKERS", "%d",
                               s->nworkers));
    }
    for (int r = 0; r < s->att_np; r++) {
        DT_CHECK(run_env_rank(&s->job, r, &s->per_rank[r]));
        if (s->nservers)
            DT_CHECK(env_list_addf(&s->per_rank[r], "DT_ROLE", "%s",
                                   r < s->nworkers ? "worker" : "server"));
        s->rank_env[r] = env_list_strv(&s->per_rank[r]);
    }
    return DT_OK;
}

/* Hostfile weights reach the workers as [cluster] work_load, one per
 * rank, which async refuses (every push is one worker's whole batch):
 * said here, before anything starts, rather than by each worker. */
static int refuse_async_weights(const run_state_t *s, const char *mode_where)
{
    size_t i = 0;
    while (i < s->hosts.n && !(s->hosts.hosts[i].weight > 0))
        i++;
    if (i == s->hosts.n)
        return 0;
    char where[600];
    run_weight_line(s->cfg, where, sizeof where);
    dt_error("%s: weight=%g on host %s sets [cluster] work_load (unequal "
             "shares), which [train] mode = async (%s) does not take: every "
             "push is one worker's whole batch; drop weight= from the "
             "hostfile or use mode = sync",
             where, s->hosts.hosts[i].weight, s->hosts.hosts[i].name,
             mode_where);
    return EXIT_USAGE;
}

/* [train] mode = async: S parameter servers ([cluster] servers, default
 * one per host) join the W workers as ranks W..W+S-1, server i on host
 * i mod hosts (beside the workers' slots: a server is mostly waiting).
 * Replaces s->placement and s->np. */
static int place_servers(const dt_cli_t *cli, run_state_t *s)
{
    const char *mode = dt_config_get(s->cfg, "train", "mode");
    if (!mode || strcmp(mode, "async") != 0)
        return 0;
    const char *where = "default";
    dt_config_origin(s->cfg, "train", "mode", NULL, &where);
    if (cli->exec_argc > 0) {
        dt_error("%s: [train] mode = async is a mode of dt's trainer (a job "
                 "file without a program); a program after '--' uses the "
                 "collectives of dt.h, which are synchronous", where);
        return EXIT_USAGE;
    }
    if (dt_config_get(s->cfg, "cluster", "min_np")) {
        dt_error("%s: [train] mode = async cannot yet run with elastic "
                 "membership ([cluster] min_np)", where);
        return EXIT_USAGE;
    }
    if (refuse_async_weights(s, where) != 0)
        return EXIT_USAGE;
    long long S = (long long)s->hosts.n;
    if (dt_config_get(s->cfg, "cluster", "servers") &&
        dt_config_get_int(s->cfg, "cluster", "servers", &S) != DT_OK)
        return EXIT_USAGE;
    if (S < 1 || S > 4096) {
        const char *sw = "default";
        dt_config_origin(s->cfg, "cluster", "servers", NULL, &sw);
        dt_error("%s: [cluster] servers = %lld: async training takes 1 to "
                 "4096 parameter servers", sw, S);
        return EXIT_USAGE;
    }
    int W = s->np, n = W + (int)S;
    dt_placement_t *p = calloc((size_t)n, sizeof *p);
    if (!p)
        return 1;
    memcpy(p, s->placement, (size_t)W * sizeof *p);
    int nodes = W ? p[W - 1].num_nodes : 0;
    for (int i = 0; i < (int)S; i++) {
        size_t h = (size_t)i % s->hosts.n;
        int node = -1, local = 0;
        for (int r = 0; r < W + i; r++)
            if (p[r].host == h) {
                node = p[r].node_rank;
                local++;
            }
        if (node < 0)
            node = nodes++;
        p[W + i] = (dt_placement_t){.rank = W + i, .host = h,
                                    .local_rank = local,
                                    .node_rank = node};
    }
    for (int r = 0; r < n; r++) {
        int here = 0;
        for (int q = 0; q < n; q++)
            here += p[q].host == p[r].host;
        p[r].local_size = here;
        p[r].num_nodes = nodes;
    }
    free(s->placement);
    s->placement = p;
    s->nworkers = W;
    s->nservers = (int)S;
    s->np = n;
    supervise_set_first_server(W);
    dt_info("async: %d worker%s and %lld parameter server%s (ranks %d..%d)",
            W, W == 1 ? "" : "s", S, S == 1 ? "" : "s", W, n - 1);
    return 0;
}

/* Configuration, hosts, placement and plugins: 0 or an exit code. */
static int prepare(const dt_cli_t *cli, const char *job_file, run_state_t *s)
{
    const dt_plugin_t *launcher, *transport;
    if (dt_cli_load_config(cli, job_file, &s->cfg) != DT_OK ||
        run_check_cluster_keys(s->cfg) != DT_OK ||
        dt_cli_job_hosts(s->cfg, &s->hosts, &s->np) != DT_OK ||
        dt_place_ranks(&s->hosts, s->np, &s->placement) != DT_OK)
        return EXIT_USAGE;
    /* The transport is only used by the workers, but a wrong name, or a
     * plugin without the ops its kind requires (the loader checks them),
     * should fail here, before anything starts. */
    if (run_load_plugin(s->cfg, DT_KIND_TRANSPORT, "transport",
                        &transport) != DT_OK ||
        run_load_plugin(s->cfg, DT_KIND_LAUNCHER, "launcher", &launcher) !=
            DT_OK)
        return EXIT_USAGE;
    /* The storage plugin where the job stages a data set (as dtctl config
     * checks it): a misspelt name is a usage error (2), found before the
     * launcher is set up, not a failure of the staging (1). */
    const char *data = dt_config_get(s->cfg, "data", "path");
    const dt_plugin_t *storage = NULL;
    if (data && *data &&
        run_load_plugin(s->cfg, DT_KIND_STORAGE, "storage", &storage) !=
            DT_OK)
        return EXIT_USAGE;
    s->ops = launcher->ops;
    if (run_check_placed_by(s->cfg, &s->hosts, launcher) != DT_OK)
        return EXIT_USAGE;
    int code = place_servers(cli, s);
    if (code != 0)
        return code;
    s->one_machine = strcmp(launcher->name, "local") == 0;
    /* ssh's STOP continues each host's watchdog at once, and waits for
     * its channel to close (sshd's MaxSessions leaves room for two);
     * slurm's is scancel --signal=STOP of our step; mpi's is relayed by
     * each rank's prologue (mpirun's own SIGTSTP would stop the prologue
     * shell, not the worker in its session) and confirmed. yarn's
     * signal op ends the job whatever the signal. */
    s->suspends = s->one_machine || strcmp(launcher->name, "ssh") == 0 ||
                  strcmp(launcher->name, "mpi") == 0 ||
                  strcmp(launcher->name, "slurm") == 0;
    /* mpi's SIGINT makes mpirun end the job at once (SIGTERM, SIGKILL
     * 1 s later); slurm, sge and yarn end their job whatever the signal */
    s->signals_as_is = s->one_machine || strcmp(launcher->name, "ssh") == 0;
    if (!s->suspends && strcmp(launcher->name, "sge") == 0)
        /* sge_execd marks the job suspended before it signals it, then
         * passes over its qrsh -inherit tasks as "already suspended"
         * (SGE 8.1.9, execd_signal_queue.c). qmod -sq reaches them, but
         * needs an operator and stops every job in the queue. */
        snprintf(s->no_suspend, sizeof s->no_suspend,
                 "the sge launcher cannot stop them: qmod -sj stops the "
                 "job script, not the workers qrsh -inherit started");
    else if (!s->suspends)
        snprintf(s->no_suspend, sizeof s->no_suspend,
                 "the %s launcher cannot stop them: a signal to its job "
                 "ends it",
                 launcher->name);
    if (s->one_machine)
        run_place_one_machine(&s->hosts, s->placement, s->np, 1);
    dt_debug("run: %d worker%s, launcher %s, transport %s", s->np,
             s->np == 1 ? "" : "s", launcher->name, transport->name);
    return 0;
}

/* Every worker here (local launcher), each with [train] threads compute
 * threads: more than this machine's CPUs and they take turns (2 workers
 * x 64 threads on 2 cores trained, slowly, without a word). */
static void say_oversubscribed(const run_state_t *s)
{
    long long threads = 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *device = dt_config_get(s->cfg, "train", "device");
    if (!s->trainer || !s->one_machine || cpus < 1 ||
        (device && strcmp(device, "cuda") == 0) ||
        dt_config_get_int(s->cfg, "train", "threads", &threads) != DT_OK ||
        threads <= 1 || threads * s->np <= cpus)
        return;
    const char *where = "default";
    dt_config_origin(s->cfg, "train", "threads", NULL, &where);
    dt_warn("%s: [train] threads = %lld for each of %d workers on this "
            "machine: %lld compute threads on %ld CPUs take turns (slower, "
            "not faster); at most %ld each", where, threads, s->np,
            threads * s->np, cpus, cpus / s->np > 0 ? cpus / s->np : 1);
}

/* What one attempt built for its workers, dropped before the next. */
static void drop_attempt_env(run_state_t *s)
{
    for (int r = 0; s->per_rank && r < s->att_np; r++)
        env_list_free(&s->per_rank[r]);
    free(s->per_rank);
    free(s->rank_env);
    s->per_rank = NULL;
    s->rank_env = NULL;
    env_list_free(&s->common);
    run_job_wipe(&s->job);
}

/* The end of an attempt: the launcher's fini kills and reaps anything
 * left; the store stops. */
static void end_attempt(run_state_t *s)
{
    if (s->ctx)
        s->ops->fini(s->ctx);
    s->ctx = NULL;
    dt_store_server_stop(s->store);
    s->store = NULL;
    s->rendezvous[0] = '\0'; /* the next attempt has a store of its own */
    output_lines_flush_all(s->lines);
}

/* supervise_args_t.refused: the store met a worker of another dt. */
static int store_refused(void *store)
{
    return dt_store_server_refused(store);
}

/* One complete launch of the job: a fresh token, job id, store and
 * launcher context, staging, the workers, supervision until all ended.
 * *launched: the workers were started. */
/* This attempt's hosts and workers (elastic membership: run_members.h;
 * otherwise the configured ones). 0, or an exit code: *no_members when
 * too few slots are left. */
static int choose_members(run_state_t *s, const run_restart_t *rs,
                          int *no_members)
{
    const dt_hostlist_t *hosts;
    int np;
    dt_status_t st = run_members_select(&s->members, rs->used, rs->max,
                                        s->ops, s->ctx, &hosts, &np);
    if (st == DT_ERR_NOT_FOUND)
        *no_members = 1;
    if (st != DT_OK)
        return st == DT_ERR_NOT_FOUND ? EXIT_CANNOT_START : 1;
    if (s->att_place != s->placement)
        free(s->att_place);
    s->att_place = NULL;
    s->att_hosts = hosts;
    s->att_np = np;
    if (hosts == &s->hosts && np == s->np) {
        s->att_place = s->placement;
        return 0;
    }
    if (dt_place_ranks(hosts, np, &s->att_place) != DT_OK)
        return 1;
    if (s->one_machine)
        run_place_one_machine(hosts, s->att_place, np, 0);
    return 0;
}

/* dtctl holds a few descriptors per worker (its output pipes, the
 * store's connections): the usual soft limit of 1024 stops a launch at
 * about 300 local workers where the hard limit allows more. Raised only
 * as far as the job needs (programs that still use select() keep working
 * below FD_SETSIZE); -1 when even the hard limit is too low (said). */
static int ensure_fd_room(int np)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)np * 4 + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        dt_error("%d workers need about %llu open files here (dtctl holds "
                 "4 descriptors a worker, and 64), and the hard limit is "
                 "%llu (ulimit -Hn): raise it where dtctl starts (as root, "
                 "`ulimit -Hn %llu` in that shell; for a user, nofile in "
                 "/etc/security/limits.conf, or LimitNOFILE= for a systemd "
                 "service) or start fewer workers on this host (-n)",
                 np, (unsigned long long)need,
                 (unsigned long long)rl.rlim_max, (unsigned long long)need);
        return -1;
    }
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        dt_warn("cannot raise the open-file limit to %llu: %s",
                (unsigned long long)need, strerror(errno));
    return 0;
}

static int run_attempt(const dt_cli_t *cli, run_state_t *s,
                       run_restart_t *rs, const char *workdir,
                       double kill_grace, supervise_result_t *res,
                       int *launched, int *no_members)
{
    memset(res, 0, sizeof *res);
    res->root_rank = -1;
    crash_sites_clear(s->crashes); /* an earlier attempt's ranks */
    *launched = 0;
    *no_members = 0;
    if (s->ops->init(s->cfg, &s->ctx) != DT_OK) {
        dt_error("the launcher could not be set up (see above)");
        s->ctx = NULL;
        end_attempt(s);
        return 1;
    }
    int chosen = choose_members(s, rs, no_members);
    if (chosen != 0) {
        end_attempt(s);
        return chosen;
    }
    /* Before staging or any start: a limit too low for the job is bad
     * input (exit 2), not workers that failed to start (127). */
    if (ensure_fd_room(s->att_np) != 0) {
        end_attempt(s);
        return rs->used == 0 ? EXIT_USAGE : 1;
    }
    dt_status_t st = run_job_prepare(s->cfg, s->att_hosts, s->att_place,
                                     s->att_np, &s->job);
    if (st == DT_OK)
        st = build_env(s);
    if (st == DT_OK)
        st = run_restart_env(rs, s->job.job_id, &s->common);
    if (st != DT_OK) {
        end_attempt(s);
        /* a value refused ([cluster] interface matching nothing) before
         * any worker ran; later (a restart) it is a failure like another */
        return st == DT_ERR_CONFIG && rs->used == 0 ? EXIT_USAGE : 1;
    }
    /* From staging on, stop signals are requests (also between attempts:
     * they cancel a restart): a copy is ended, not left running. */
    if (!s->signals && stop_signals_install() != DT_OK) {
        end_attempt(s);
        return 1;
    }
    s->signals = 1;
    /* The data set before the workers (through the launcher's hosts). */
    run_stage_args_t stage = {
        .cfg = s->cfg,
        .hosts = s->att_hosts,
        .launcher = s->ops,
        .launcher_ctx = s->ctx,
        .job_id = s->job.job_id,
        .mode = cli->no_stage ? RUN_STAGE_SKIP : RUN_STAGE_COPY,
        .stop = stop_signals_pending};
    dt_status_t staged = run_stage_env(&stage, &s->common);
    if (staged != DT_OK || stop_signals_pending()) {
        int signo = stop_signals_pending() ? stop_signals_take() : 0;
        if (staged == DT_OK && signo)
            dt_warn("received %s while staging: not starting the workers",
                    strsignal(signo));
        res->stop_signo = signo; /* no restart after a stop */
        end_attempt(s);
        return signo ? 128 + signo : 1;
    }
    dt_launch_spec_t spec = {
        .hosts = s->att_hosts,
        .np = s->att_np,
        .placement = s->att_place,
        .argv = (const char *const *)cli->exec_argv,
        .workdir = workdir,
        .env = env_list_strv(&s->common),
        .rank_env = s->rank_env,
        .output = output_lines_callback,
        .output_arg = s->lines,
        .stop_requested = stop_signals_pending,
        /* A program's rank 0 reads dtctl's stdin, as under mpirun (pdb,
         * input(), `cat data | dtctl run`); dt's trainer reads none, and
         * leaves it to whoever reads dtctl's stdin after it, as does
         * --stdin none (`while read x; do dtctl run ...; done`). /dev/null
         * holds nothing to pass (and the ssh launcher would spend a
         * session on it). */
        .forward_stdin = !s->trainer && !cli->stdin_none &&
                         !dt_stdin_is_dev_null(),
    };
    int code;
    /* Local workers are dtctl's children, in its cgroup. */
    oom_counts_t oom_at_start;
    oom_counts_read(&oom_at_start, s->one_machine);
    /* A Ctrl-Z from here on waits for the supervisor, which stops the
     * workers with dtctl: stopped alone, dtctl left them running
     * unwatched (and its start could miss its deadline). */
    stop_signals_tstp_mode(STOP_TSTP_KEEP);
    dt_status_t started = s->ops->launch(s->ctx, &spec);
    if (started != DT_OK)
        stop_signals_tstp_mode(STOP_TSTP_ALONE); /* no supervisor comes */
    if (started == DT_ERR_INTERRUPTED && stop_signals_pending()) {
        int signo = stop_signals_take();
        dt_warn("received %s while starting the workers: stopped those "
                "already started",
                strsignal(signo));
        res->stop_signo = signo; /* no restart after a stop */
        code = 128 + signo;
    } else if (started != DT_OK) {
        dt_error("the workers could not be started (see above); nothing is "
                 "left running");
        code = EXIT_CANNOT_START;
    } else {
        *launched = 1;
        dt_debug("job %s: %d workers started", s->job.job_id, s->att_np);
        /* This attempt's store: a restart starts a new one (new token and
         * port), so a failure record never outlives its attempt. */
        run_culprit_t rc = {s->rendezvous, s->job.token, s->att_hosts,
                            s->att_place, s->att_np, NULL};
        double linger = 60.0; /* [cluster] timeout, checked before launch */
        dt_config_get_duration(s->cfg, "cluster", "timeout", &linger);
        supervise_args_t sa = {.ops = s->ops,
                               .ctx = s->ctx,
                               .lines = s->lines,
                               .kill_grace = kill_grace,
                               .culprit = run_culprit_lookup,
                               .culprit_arg = &rc,
                               .refused = store_refused,
                               .refused_arg = s->store,
                               .result = res,
                               .trainer = s->trainer,
                               .show_prompts = !s->trainer &&
                                               isatty(STDIN_FILENO) &&
                                               isatty(STDOUT_FILENO),
                               .suspends = s->suspends,
                               .no_suspend = s->no_suspend,
                               .interrupts = !s->trainer &&
                                             s->signals_as_is,
                               .oom_at_start = oom_at_start,
                               .crashes = s->crashes,
                               .finalized = s->trainer ? run_finalized_all
                                                       : NULL,
                               .finalized_arg = &rc,
                               .linger = linger,
                               .np = s->att_np};
        run_test_hold_start();
        code = supervise_job(&sa);
        run_culprit_close(&rc);
    }
    end_attempt(s);
    return code;
}

/* fd is a terminal where progress bars redraw in place: not a "dumb"
 * one (Emacs' shell), which shows "\033[K" as text. */
static int bar_terminal(int fd)
{
    const char *term = getenv("TERM");
    return isatty(fd) && !(term && strcmp(term, "dumb") == 0);
}

static int launch_and_supervise(const dt_cli_t *cli, run_state_t *s)
{
    double kill_grace;
    const char *workdir;
    if (run_read_supervision(s->cfg, &kill_grace, &workdir) != DT_OK)
        return EXIT_USAGE;
    run_restart_t rs;
    if (run_restart_init(s->cfg, s->trainer, workdir, &rs) != DT_OK)
        return EXIT_USAGE;
    if (run_members_init(s->cfg, &s->hosts, s->np, rs.max, &s->members) !=
        DT_OK) {
        run_restart_free(&rs);
        return EXIT_USAGE;
    }
    if (output_lines_new(run_members_capacity(&s->members), STDOUT_FILENO,
                         STDERR_FILENO, OUTPUT_MAX_LINE, &s->lines) !=
            DT_OK ||
        crash_sites_new(run_members_capacity(&s->members), &s->crashes) !=
            DT_OK) {
        run_restart_free(&rs);
        return 1;
    }
    output_lines_set_watch(s->lines, crash_sites_see, s->crashes);
    output_lines_set_stop_check(s->lines, stop_signals_pending);
    output_lines_set_terminal(s->lines, bar_terminal(STDOUT_FILENO),
                              bar_terminal(STDERR_FILENO));
    int code, launched, no_members, last = 0;
    supervise_result_t res;
    do {
        if (rs.used > 0)
            drop_attempt_env(s);
        code = run_attempt(cli, s, &rs, workdir, kill_grace, &res,
                           &launched, &no_members);
        /* Too few hosts left (min_np): the job ends with the last
         * attempt's failure (127 when none ran). */
        if (no_members) {
            if (last)
                code = last;
            break;
        }
        /* A first attempt that could not even start is not retried. */
        if (!launched && rs.used == 0)
            break;
        if (launched && code != 0 && !res.stop_signo)
            run_members_failed(&s->members, &res, s->att_place,
                               s->att_np);
        last = code;
    } while (run_restart_next(&rs, &res, launched, &code));
    if (s->signals)
        stop_signals_restore();
    s->signals = 0;
    run_restart_free(&rs);
    return code;
}

static void release(run_state_t *s)
{
    if (s->ctx)
        s->ops->fini(s->ctx);
    dt_store_server_stop(s->store);
    output_lines_free(s->lines);
    crash_sites_free(s->crashes);
    for (int r = 0; s->per_rank && r < s->att_np; r++)
        env_list_free(&s->per_rank[r]);
    free(s->per_rank);
    free(s->rank_env);
    env_list_free(&s->common);
    run_job_wipe(&s->job);
    if (s->att_place != s->placement)
        free(s->att_place);
    free(s->placement);
    run_members_free(&s->members);
    dt_hostlist_free(&s->hosts);
    dt_config_free(s->cfg);
}

int dt_cmd_run(dt_cli_t *cli)
{
    const char *job_file;
    int code = check_usage(cli, &job_file);
    if (code != 0)
        return code;
    run_state_t s;
    memset(&s, 0, sizeof s);
    code = prepare(cli, job_file, &s);
    if (code == 0 && cli->exec_argc == 0 && !job_file)
        code = job_in_config(s.cfg);
    /* No program after '--': every worker runs dt's trainer. */
    char trainer[4200];
    char *trainer_argv[2] = {trainer, NULL};
    if (code == 0 && cli->exec_argc == 0) {
        s.trainer = 1;
        if (run_trainer_prepare(s.cfg, s.nservers ? s.nworkers : s.np,
                                trainer, sizeof trainer) != DT_OK)
            code = EXIT_USAGE;
        cli->exec_argv = trainer_argv;
        cli->exec_argc = 1;
        if (code == 0)
            say_oversubscribed(&s);
    }
    if (code == 0)
        code = launch_and_supervise(cli, &s);
    release(&s);
    return code;
}
