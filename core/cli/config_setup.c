/* config_setup.c — dtctl's effective configuration: built-in defaults,
 * cluster file, job file, environment and options, in that precedence; and
 * the job's host list derived from it. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/hosts.h>
#include <dt/log.h>
#include "cli.h"
#include "run_env.h"
#include "nn/gpu_inventory.h"
#include "plugin/plugin_loader.h"

#define DEFAULT_CLUSTER_FILE "conf/cluster.ini"


/* -x NAME[=VALUE]: appended to [cluster] env_vars as single-quoted sh
 * words (a value may hold blanks, commas, quotes). */
static dt_status_t add_exports(dt_config_t *cfg, const dt_cli_t *cli)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return DT_ERR_NOMEM;
    const char *old = dt_config_get(cfg, "cluster", "env_vars");
    /* What is there is said with its own origin before it becomes -x's. */
    if (old && *old && run_env_user(cfg, NULL) != DT_OK) {
        fclose(f);
        free(text);
        return DT_ERR_CONFIG;
    }
    if (old && *old)
        fprintf(f, "%s", old);
    for (int i = 0; i < cli->nexports; i++) {
        fputs(ftell(f) ? " '" : "'", f);
        for (const char *c = cli->exports[i]; *c; c++)
            if (*c == '\'')
                fputs("'\\''", f);
            else
                fputc(*c, f);
        fputc('\'', f);
    }
    if (fclose(f) != 0) {
        free(text);
        return DT_ERR_NOMEM;
    }
    dt_status_t st =
        dt_config_set(cfg, "cluster", "env_vars", text, DT_SRC_CLI, "-x");
    free(text);
    return st;
}

static dt_status_t load_cluster_file(const dt_cli_t *cli, dt_config_t *cfg)
{
    const char *env = getenv("DT_CONFIG");
    const char *path = NULL, *from = NULL;
    if (cli->config) {
        path = cli->config;
        from = "--config";
    } else if (env && *env) {
        path = env;
        from = "$DT_CONFIG";
    } else if (access(DEFAULT_CLUSTER_FILE, F_OK) == 0) {
        path = DEFAULT_CLUSTER_FILE;
        from = "the default location";
    }
    if (!path) {
        dt_debug("no cluster file (no --config, $DT_CONFIG or ./%s): "
                 "built-in defaults",
                 DEFAULT_CLUSTER_FILE);
        return DT_OK;
    }
    dt_debug("cluster file %s (from %s)", path, from);
    dt_status_t st = dt_config_load_file(cfg, path, DT_SRC_CLUSTER_FILE);
    if (st == DT_ERR_NOT_FOUND)
        dt_error("the cluster file named by %s does not exist: %s; fix the "
                 "path or drop %s to use the built-in defaults",
                 from, path, from);
    return st;
}

char *dt_cli_absolute_path(const char *path)
{
    char cwd[4096];
    char *out = NULL;
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        return strdup(path);
    if (asprintf(&out, "%s/%s", cwd, path) < 0)
        return NULL;
    return out;
}

int dt_cli_flush_stdout(const char *command)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return 0;
    /* errno 0: an earlier write failed, its cause no longer known */
    dt_error("dtctl %s: cannot write its output to standard output: %s; "
             "check where it goes (a full disk, a closed pipe)",
             command, errno ? strerror(errno) : "a write failed");
    return 1;
}

/* Options that are short forms of [cluster] keys (and the trainer's). */
static dt_status_t load_options(const dt_cli_t *cli, dt_config_t *cfg)
{
    const struct {
        const char *key, *value, *opt;
    } opts[] = {{"launcher", cli->launcher, "--launcher"},
                {"transport", cli->transport, "--transport"},
                {"storage", cli->storage, "--storage"},
                {"hosts", cli->hosts, "-H/--hosts"},
                {"hostfile", cli->hostfile, "--hostfile"},
                {"max_restarts", cli->max_restarts, "--max-restarts"},
                {"min_np", cli->min_np, "--min-np"},
                {"max_np", cli->max_np, "--max-np"},
                {"interface", cli->interface, "--network-interface"}};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (opts[i].value)
            DT_CHECK(dt_config_set(cfg, "cluster", opts[i].key, opts[i].value,
                                   DT_SRC_CLI, opts[i].opt));
    if (cli->np > 0) {
        char np[32];
        snprintf(np, sizeof np, "%d", cli->np);
        DT_CHECK(dt_config_set(cfg, "cluster", "np", np, DT_SRC_CLI,
                               "-n/--np"));
    }
    if (cli->metrics) {
        /* Absolute: the workers may run in another directory. */
        char *abs = dt_cli_absolute_path(cli->metrics);
        if (!abs)
            return DT_ERR_NOMEM;
        dt_status_t one = dt_config_set(cfg, "train", "metrics", abs,
                                        DT_SRC_CLI, "--metrics");
        free(abs);
        DT_CHECK(one);
    }
    if (cli->resume)
        DT_CHECK(dt_config_set(cfg, "train", "resume", "yes", DT_SRC_CLI,
                               "--resume"));
    dt_status_t st = DT_OK;
    for (int i = 0; i < cli->nsets; i++) {
        dt_status_t one = dt_config_set_assignment(cfg, cli->sets[i],
                                                   DT_SRC_CLI);
        if (one == DT_ERR_NOMEM)
            return one;
        if (one != DT_OK)
            st = one; /* report every bad --set before stopping */
    }
    return st;
}

/* The sections of the chosen plugins get their schema now, so that their
 * defaults show in `dtctl config` and DT_TRANSPORT_TCP_* variables apply.
 * A plugin that is not there is reported by `dtctl run`, not here. */
static void add_selected_plugin_schemas(dt_config_t *cfg)
{
    /* [train] optimizer too: its [optimizer.NAME] keys from the
     * environment were read by local workers only and never checked. */
    static const char *const kinds[] = {"launcher", "transport", "storage",
                                        "optimizer"};
    static const char *const of[] = {"cluster", "cluster", "cluster",
                                     "train"};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        const char *name = dt_config_get(cfg, of[i], kinds[i]);
        char section[160];
        if (!name || !*name ||
            snprintf(section, sizeof section, "%s.%s", kinds[i], name) >=
                (int)sizeof section ||
            dt_config_schema(cfg, section))
            continue;
        const dt_key_spec_t *keys = dt_plugin_schema_lookup(section, NULL);
        if (keys)
            dt_config_add_schema(cfg, section, keys);
    }
}

/* --nproc-per-node gpu|cpu|auto: the workers of this machine, as torchrun
 * counts them (its GPUs; its CPUs, those dtctl may run on; GPUs where it
 * has any, else CPUs), said; 0 when gpu finds none (said too). */
static int count_here(int which)
{
    const char *word = which == DT_NPROC_GPU   ? "gpu"
                       : which == DT_NPROC_CPU ? "cpu"
                                               : "auto";
    dt_gpu_inventory_t inv = {0};
    if (which != DT_NPROC_CPU) {
        dt_gpu_inventory(&inv);
        if (inv.count > 0) {
            dt_info("--nproc-per-node %s: %d GPU%s here (%s): %d worker%s",
                    word, inv.count, inv.count == 1 ? "" : "s",
                    inv.gpu[0].name, inv.count, inv.count == 1 ? "" : "s");
            return inv.count;
        }
        if (which == DT_NPROC_GPU) {
            dt_error("--nproc-per-node gpu: no GPU here (%s); give a number "
                     "of workers instead (or cpu: one per CPU)",
                     inv.why);
            return 0;
        }
    }
    cpu_set_t cpus;
    long n = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus)
                                                           : 0;
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > DT_CLI_MAX_WORKERS)
        n = DT_CLI_MAX_WORKERS;
    dt_info("--nproc-per-node %s: %ld CPU%s here%s%s%s: %ld worker%s", word,
            n, n == 1 ? "" : "s", which == DT_NPROC_AUTO ? " (no GPU: " : "",
            which == DT_NPROC_AUTO ? inv.why : "",
            which == DT_NPROC_AUTO ? ")" : "", n, n == 1 ? "" : "s");
    return (int)n;
}

/* torchrun's --nproc-per-node N and --nnodes K, once the host list is
 * known: on one host (no host list) N is the number of workers; with
 * -H/--hostfile/[cluster] hosts every host gets N slots and the job N per
 * host (unless -n says otherwise); K must be the number of hosts. */
static dt_status_t apply_per_node(const dt_cli_t *cli_in, dt_config_t *cfg)
{
    int counted = cli_in->nproc_per_node == DT_NPROC_GPU ||
                  cli_in->nproc_per_node == DT_NPROC_CPU ||
                  cli_in->nproc_per_node == DT_NPROC_AUTO;
    if (cli_in->nproc_per_node <= 0 && !counted && cli_in->nnodes <= 0)
        return DT_OK;
    const char *spec = dt_config_get(cfg, "cluster", "hosts");
    const char *file = dt_config_get(cfg, "cluster", "hostfile");
    int listed = (spec && *spec) || (file && *file);
    dt_cli_t counted_cli;
    const dt_cli_t *cli = cli_in;
    if (counted) {
        /* Counted here, on this machine: the hosts of a list may differ
         * (dtctl check shows each host's GPUs). */
        if (listed) {
            const char *what = cli_in->nproc_per_node == DT_NPROC_GPU ? "GPUs"
                               : cli_in->nproc_per_node == DT_NPROC_CPU
                                   ? "CPUs"
                                   : "GPUs (or CPUs)";
            dt_error("--nproc-per-node %s counts this machine's %s; with "
                     "a host list give each host's slots (-H host:N or "
                     "the hostfile's slots=; `dtctl check` lists each "
                     "host's GPUs)",
                     cli_in->nproc_per_node == DT_NPROC_GPU   ? "gpu"
                     : cli_in->nproc_per_node == DT_NPROC_CPU ? "cpu"
                                                              : "auto",
                     what);
            return DT_ERR_CONFIG;
        }
        counted_cli = *cli_in;
        counted_cli.nproc_per_node = count_here(cli_in->nproc_per_node);
        if (counted_cli.nproc_per_node < 1)
            return DT_ERR_CONFIG;
        cli = &counted_cli;
    }
    if (!listed) {
        if (cli->nnodes > 1) {
            dt_error("--nnodes %d: dtctl starts the workers of every node "
                     "itself, from this one command: name the nodes with "
                     "-H node1:N,node2:N or --hostfile FILE",
                     cli->nnodes);
            return DT_ERR_CONFIG;
        }
        if (cli->nproc_per_node <= 0)
            return DT_OK;
        if (cli->np > 0 && cli->np != cli->nproc_per_node) {
            dt_error("-n %d and --nproc-per-node %d disagree on a job of one "
                     "host; give one of them",
                     cli->np, cli->nproc_per_node);
            return DT_ERR_CONFIG;
        }
        char np[32];
        snprintf(np, sizeof np, "%d", cli->nproc_per_node);
        return dt_config_set(cfg, "cluster", "np", np, DT_SRC_CLI,
                             "--nproc-per-node");
    }
    dt_hostlist_t hosts = {0};
    int np = 0;
    DT_CHECK(dt_cli_job_hosts(cfg, &hosts, &np));
    dt_status_t st = DT_OK;
    char *list = NULL;
    size_t len = 0;
    FILE *f = NULL;
    if (cli->nnodes > 0 && (size_t)cli->nnodes != hosts.n) {
        dt_error("--nnodes %d, but the host list names %zu host%s; dtctl "
                 "runs on the hosts it is given (-H, --hostfile)",
                 cli->nnodes, hosts.n, hosts.n == 1 ? "" : "s");
        st = DT_ERR_CONFIG;
        goto out;
    }
    if (cli->nproc_per_node <= 0)
        goto out;
    if (!(f = open_memstream(&list, &len))) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < hosts.n; i++) {
        if (hosts.hosts[i].port) {
            dt_error("--nproc-per-node cannot rewrite host %s: the host "
                     "list gives it an ssh port; write its slots in the "
                     "hostfile (%s slots=%d port=%d) instead",
                     hosts.hosts[i].name, hosts.hosts[i].name,
                     cli->nproc_per_node, hosts.hosts[i].port);
            st = DT_ERR_CONFIG;
            goto out;
        }
        if (hosts.hosts[i].weight > 0) { /* the name:N list has no weights */
            dt_error("--nproc-per-node cannot rewrite host %s: the hostfile "
                     "gives its workers weight=%g; write its slots in the "
                     "hostfile (%s slots=%d weight=%g) instead",
                     hosts.hosts[i].name, hosts.hosts[i].weight,
                     hosts.hosts[i].name, cli->nproc_per_node,
                     hosts.hosts[i].weight);
            st = DT_ERR_CONFIG;
            goto out;
        }
        /* An IPv6 address needs brackets: "fd00::7:1" is another
         * address, not fd00::7 with one slot. */
        const char *name = hosts.hosts[i].name;
        int v6 = strchr(name, ':') != NULL;
        fprintf(f, "%s%s%s%s:%d", i ? "," : "", v6 ? "[" : "", name,
                v6 ? "]" : "", cli->nproc_per_node);
    }
    if (fclose(f) != 0) {
        f = NULL;
        st = DT_ERR_NOMEM;
        goto out;
    }
    f = NULL;
    /* The rewritten list replaces hosts and hostfile alike. */
    st = dt_config_set(cfg, "cluster", "hosts", list, DT_SRC_CLI,
                       "--nproc-per-node");
    if (st == DT_OK && file && *file)
        st = dt_config_set(cfg, "cluster", "hostfile", "", DT_SRC_CLI,
                           "--nproc-per-node");
    if (st == DT_OK && cli->np <= 0) {
        char total[32];
        snprintf(total, sizeof total, "%lld",
                 (long long)cli->nproc_per_node * (long long)hosts.n);
        st = dt_config_set(cfg, "cluster", "np", total, DT_SRC_CLI,
                           "--nproc-per-node");
    }
out:
    if (f)
        fclose(f);
    free(list);
    dt_hostlist_free(&hosts);
    return st;
}

dt_status_t dt_cli_load_config(const dt_cli_t *cli, const char *job_file,
                               dt_config_t **out)
{
    dt_config_t *cfg = NULL;
    dt_status_t st = dt_config_new(&cfg);
    if (st != DT_OK)
        goto out;
    /* A syntax error or a bad --set is logged and remembered, and loading
     * goes on so that one run reports every problem. */
    dt_status_t bad = load_cluster_file(cli, cfg);
    if (bad != DT_OK && bad != DT_ERR_CONFIG) {
        st = bad;
        goto out;
    }
    if (job_file) {
        dt_status_t one = dt_config_load_file(cfg, job_file, DT_SRC_JOB_FILE);
        if (one == DT_ERR_NOT_FOUND)
            dt_error("job file %s does not exist; check the path (dtctl "
                     "config JOB.ini shows what a job file sets)",
                     job_file);
        if (one != DT_OK && one != DT_ERR_CONFIG) {
            st = one;
            goto out;
        }
        if (one != DT_OK)
            bad = one;
    }
    dt_status_t one = load_options(cli, cfg);
    if (one == DT_ERR_NOMEM) {
        st = one;
        goto out;
    }
    if (one != DT_OK)
        bad = one;
    /* Environment before and after the plugin schemas: DT_TRANSPORT may
     * choose the plugin whose own DT_TRANSPORT_<NAME>_* keys then apply. */
    if ((st = dt_config_load_env(cfg, NULL)) != DT_OK)
        goto out;
    add_selected_plugin_schemas(cfg);
    if ((st = dt_config_validate(cfg, dt_plugin_schema_lookup, NULL)) !=
        DT_OK)
        goto out;
    if ((st = dt_config_load_env(cfg, NULL)) != DT_OK)
        goto out;
    dt_config_check_env(cfg, NULL);
    /* Values from the environment are checked like the rest. */
    st = dt_config_validate(cfg, dt_plugin_schema_lookup, NULL);
    if (st == DT_OK)
        st = bad;
    /* After the environment: -x adds to an env_vars from any layer. */
    if (st == DT_OK && cli->nexports)
        st = add_exports(cfg, cli);
    if (st == DT_OK)
        st = apply_per_node(cli, cfg);
out:
    if (st != DT_OK) {
        dt_config_free(cfg);
        return st == DT_ERR_NOMEM ? st : DT_ERR_CONFIG;
    }
    *out = cfg;
    return DT_OK;
}

/* A relative hostfile named in an ini file is relative to that file. */
static char *resolve_hostfile(const char *path, dt_config_source_t src,
                              const char *where)
{
    const char *colon = strrchr(where, ':'), *slash = NULL;
    if (path[0] != '/' &&
        (src == DT_SRC_CLUSTER_FILE || src == DT_SRC_JOB_FILE) && colon) {
        for (const char *c = where; c < colon; c++)
            if (*c == '/')
                slash = c;
        if (slash) {
            char *full = NULL;
            if (asprintf(&full, "%.*s/%s", (int)(slash - where), where,
                         path) < 0)
                return NULL;
            return full;
        }
    }
    return strdup(path);
}

/* In -H the number after ':' is always slots, while a hostfile reads
 * 22 or >= 1024 there as the ssh port: "node:2222" most likely meant the
 * port, and would start 2222 workers there. */
static void warn_port_like_slots(const dt_hostlist_t *hosts,
                                 const char *where)
{
    for (size_t i = 0; i < hosts->n; i++) {
        const dt_host_t *h = &hosts->hosts[i];
        if (h->slots < 1024)
            continue;
        dt_warn("%s: host %s gets %d slots: in -H and [cluster] hosts the "
                "number after ':' is the slot count, never the ssh port; "
                "for a port write '%s port=%d' in a hostfile (--hostfile) "
                "or set [launcher.ssh] port", where, h->name, h->slots,
                h->name, h->slots);
    }
}

dt_status_t dt_cli_job_hosts(const dt_config_t *cfg, dt_hostlist_t *hosts,
                             int *np)
{
    if (!cfg || !hosts || !np)
        return DT_ERR_INVALID;
    long long want = 0;
    dt_config_source_t np_src = DT_SRC_DEFAULT, h_src = DT_SRC_DEFAULT,
                       f_src = DT_SRC_DEFAULT;
    const char *np_where = "default", *h_where = NULL, *f_where = NULL;
    DT_CHECK(dt_config_get_int(cfg, "cluster", "np", &want));
    dt_config_origin(cfg, "cluster", "np", &np_src, &np_where);
    if (want < 1 || want > DT_CLI_MAX_WORKERS) {
        dt_error("[cluster] np = %lld (from %s) is not a usable number of "
                 "workers; want 1 to %d",
                 want, np_where, DT_CLI_MAX_WORKERS);
        return DT_ERR_CONFIG;
    }
    const char *spec = dt_config_get(cfg, "cluster", "hosts");
    const char *file = dt_config_get(cfg, "cluster", "hostfile");
    if (spec && !*spec)
        spec = NULL;
    if (file && !*file)
        file = NULL;
    if (spec)
        dt_config_origin(cfg, "cluster", "hosts", &h_src, &h_where);
    if (file)
        dt_config_origin(cfg, "cluster", "hostfile", &f_src, &f_where);
    if (spec && file) {
        if (h_src == f_src) {
            dt_error("both hosts (%s) and hostfile (%s) are set; keep one",
                     h_where, f_where);
            return DT_ERR_CONFIG;
        }
        /* The one from the higher source wins, like any other value. */
        if (h_src > f_src)
            file = NULL;
        else
            spec = NULL;
    }
    dt_status_t st;
    struct stat sb;
    /* MXNet's launch.py -H and mpirun's -hostfile habits: -H FILE */
    if (spec && h_src == DT_SRC_CLI && !strpbrk(spec, ":,") &&
        stat(spec, &sb) == 0 && S_ISREG(sb.st_mode) &&
        !dt_host_is_local(spec)) {
        if (strchr(spec, '/'))
            dt_error("%s: '%s' is a file; a host file goes with --hostfile "
                     "%s (-H takes host names: node1:4,node2:4)",
                     h_where, spec, spec);
        else
            dt_error("%s: '%s' is a file here; a host file goes with "
                     "--hostfile %s (-H takes host names: node1:4,node2:4; "
                     "a host of that name: -H %s:1)",
                     h_where, spec, spec, spec);
        return DT_ERR_CONFIG;
    }
    if (spec) {
        st = dt_hosts_parse(spec, hosts);
        if (st != DT_OK)
            dt_error("[cluster] hosts is set by %s", h_where);
        else if (strcmp(h_where, "--nproc-per-node") != 0)
            warn_port_like_slots(hosts, h_where);
    } else if (file) {
        char *path = resolve_hostfile(file, f_src, f_where);
        st = path ? dt_hostfile_parse(path, hosts) : DT_ERR_NOMEM;
        if (st == DT_ERR_NOT_FOUND)
            dt_error("[cluster] hostfile is set by %s", f_where);
        free(path);
    } else {
        /* A local job: one host with exactly the slots it needs. */
        st = dt_hosts_parse("localhost", hosts);
        if (st == DT_OK)
            hosts->hosts[0].slots = (int)want;
    }
    if (st != DT_OK)
        return st == DT_ERR_NOMEM ? st : DT_ERR_CONFIG;
    if ((spec || file) && np_src == DT_SRC_DEFAULT) {
        size_t slots = dt_hostlist_slots(hosts);
        /* the same bound as -n (a sum of slots=1048576 lines wrapped) */
        if (slots > (size_t)DT_CLI_MAX_WORKERS) {
            dt_error("%s gives %zu slots in all: more than the %d workers "
                     "a job may have; give -n, or fewer slots",
                     file ? file : "the host list", slots,
                     DT_CLI_MAX_WORKERS);
            return DT_ERR_CONFIG;
        }
        want = (long long)slots;
    }
    *np = (int)want;
    return DT_OK;
}
