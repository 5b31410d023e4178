/* cmd_check.c — `dtctl check [JOB.ini]`: a preflight of the job's hosts
 * before anything is started. For every host: the launcher's own checks
 * (reachable, host key known, login, its tools: the plugin's `check` op),
 * the [cluster] interface present there, the rendezvous port on this
 * machine reachable from there, and its GPUs, driver and CUDA libraries
 * (dt-train --gpus there) against the job's device and transport. Once,
 * what dtctl run refuses before it starts anything (run_checks.h): the
 * transport and storage plugins, the placement of the workers, the
 * [cluster] settings, the job. Prints one table row per host and check,
 * with how to fix each failure. Exit 0: all passed; 1: something failed
 * (or the table could not be written); 2: bad usage, or a configuration
 * the check cannot start from (the host list, the launcher). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/log.h>
#include "check_gpu.h"
#include "check_iface.h"
#include "job_memory.h"
#include "cli.h"
#include <dt/netif.h>
#include "plugin/plugin_loader.h"
#include "run_checks.h"
#include "run_trainer.h"

enum { CHK_OK = 0, CHK_FAIL = 1, CHK_SKIP = 2 };

typedef struct row {
    char *host, *check, *detail;
    int result;
} row_t;

typedef struct table {
    row_t *v;
    size_t n;
    int failed;
    const dt_hostlist_t *hosts;
    unsigned char *bad; /* per host: the launcher could not reach it */
    /* The first problem the launcher reported under no listed host
     * ("slurmctld", "mpirun"): it concerns every host. */
    char wide[64];
    const char *launcher; /* its name, for the rows */
    int one_machine;      /* every worker runs on this machine */
} table_t;

static void add_row(table_t *t, const char *host, const char *check,
                    int result, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void add_row(table_t *t, const char *host, const char *check,
                    int result, const char *fmt, ...)
{
    row_t *nv = realloc(t->v, (t->n + 1) * sizeof *nv);
    if (!nv)
        return;
    t->v = nv;
    row_t *r = &t->v[t->n];
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&r->detail, fmt, ap) < 0)
        r->detail = NULL;
    va_end(ap);
    r->host = strdup(host);
    r->check = strdup(check);
    r->result = result;
    if (!r->host || !r->check || !r->detail) {
        free(r->host);
        free(r->check);
        free(r->detail);
        return;
    }
    t->n++;
    t->failed |= result == CHK_FAIL;
}

static void on_problem(void *arg, const char *host, const char *problem)
{
    table_t *t = arg;
    int listed = 0;
    for (size_t i = 0; host && i < t->hosts->n; i++)
        if (strcmp(t->hosts->hosts[i].name, host) == 0)
            t->bad[i] = listed = 1;
    if (!listed && !t->wide[0])
        snprintf(t->wide, sizeof t->wide, "%s", host ? host : "-");
    add_row(t, host ? host : "-", "launcher", CHK_FAIL, "%s", problem);
}

static void launcher_checks(table_t *t, const dt_plugin_t *p, void *ctx)
{
    const dt_launcher_ops_t *ops = p->ops;
    if (!DT_OPS_HAS(ops, dt_launcher_ops_t, check)) {
        for (size_t i = 0; i < t->hosts->n; i++)
            add_row(t, t->hosts->hosts[i].name, "launcher", CHK_SKIP,
                    "the %s launcher has no preflight of its own", p->name);
        return;
    }
    if (ops->check(ctx, t->hosts, on_problem, t) != DT_OK) {
        add_row(t, "-", "launcher", CHK_FAIL,
                "the %s launcher's preflight failed (see above)", p->name);
        if (!t->wide[0])
            snprintf(t->wide, sizeof t->wide, "-");
    }
    /* A problem of the launcher itself (its controller down, a tool
     * missing) leaves no host ready, however it answered. */
    for (size_t i = 0; i < t->hosts->n; i++)
        if (t->bad[i])
            continue;
        else if (t->wide[0])
            add_row(t, t->hosts->hosts[i].name, "launcher", CHK_SKIP,
                    "%s: cannot start workers until its own problem is "
                    "fixed (the '%s' launcher row)", p->name, t->wide);
        else
            add_row(t, t->hosts->hosts[i].name, "launcher", CHK_OK,
                    "%s: reachable, ready to start workers", p->name);
}

static dt_status_t run_remote(const dt_launcher_ops_t *ops, void *ctx,
                              const dt_host_t *h, const char *script,
                              const char *a1, const char *a2, char **out)
{
    const char *argv[] = {"sh", "-c", script, "dt-check", a1, a2, NULL};
    int code = 0;
    return ops->run_on_host(ctx, h, argv, out, &code);
}

static void interface_check(table_t *t, const dt_launcher_ops_t *ops,
                            void *ctx, size_t i, char **spec, size_t n,
                            const char *spec_text)
{
    const dt_host_t *h = &t->hosts->hosts[i];
    if (n == 0) {
        add_row(t, h->name, "interface", CHK_SKIP,
                "[cluster] interface is not set: workers use their route "
                "to this machine");
        return;
    }
    char *out = NULL, found[512];
    if (run_remote(ops, ctx, h,
                   "ip -o addr show up 2>/dev/null || "
                   "/sbin/ip -o addr show up",
                   NULL, NULL, &out) != DT_OK) {
        free(out);
        add_row(t, h->name, "interface", CHK_FAIL,
                "could not list the interfaces there (see above)");
        return;
    }
    int m = check_iface_match(out, spec, n, found, sizeof found);
    free(out);
    if (m == 1)
        add_row(t, h->name, "interface", CHK_OK, "%s matches '%s'", found,
                spec_text);
    else if (m == 2 && t->one_machine)
        add_row(t, h->name, "interface", CHK_OK, "%s matches '%s' (loopback: "
                "every worker is on this machine)", found, spec_text);
    else if (m == 2)
        add_row(t, h->name, "interface", CHK_FAIL,
                "[cluster] interface = '%s' matches only loopback (%s) "
                "there: other hosts cannot reach it; name an interface the "
                "hosts share", spec_text, found);
    else if (m == 0)
        add_row(t, h->name, "interface", CHK_FAIL,
                "no interface matches [cluster] interface = '%s' (there: "
                "%s); fix the setting, or the host's network",
                spec_text, found);
    else
        add_row(t, h->name, "interface", CHK_FAIL,
                "cannot list its interfaces: install iproute2 (the ip "
                "command) there");
}

/* A listening socket on addr, port chosen by the kernel. */
static int listen_on(const char *addr, int *port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    int fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
    if (fam == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
            return -1;
        len = sizeof *s4;
    } else {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
            return -1;
        len = sizeof *s6;
    }
    int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(fam == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                 : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

/* Connects to $1 port $2 with bash's /dev/tcp, else nc. */
static const char reach_script[] =
    "t=; command -v timeout >/dev/null 2>&1 && t='timeout 10'; "
    "if command -v bash >/dev/null 2>&1; then "
    "$t bash -c 'exec 3<>\"/dev/tcp/$0/$1\"' \"$1\" \"$2\" 2>/dev/null "
    "&& echo DT-REACH-OK || echo DT-REACH-FAIL; "
    "elif command -v nc >/dev/null 2>&1; then "
    "nc -z -w 10 \"$1\" \"$2\" && echo DT-REACH-OK || echo DT-REACH-FAIL; "
    "else echo DT-REACH-NOTOOL; fi";

static void rendezvous_check(table_t *t, const dt_launcher_ops_t *ops,
                             void *ctx, size_t i, char **spec, size_t n)
{
    const dt_host_t *h = &t->hosts->hosts[i];
    char addr[DT_NETIF_ADDR_LEN], port_text[16];
    const char *peer = dt_netif_is_local(h->name) ? NULL : h->name;
    if (dt_netif_select(spec, n, peer, "cluster.interface", addr,
                        sizeof addr) != DT_OK) {
        add_row(t, h->name, "rendezvous", CHK_FAIL,
                "no address of this machine faces the host (see above); "
                "set [cluster] interface");
        return;
    }
    int port = 0, fd = listen_on(addr, &port);
    if (fd < 0) {
        add_row(t, h->name, "rendezvous", CHK_FAIL,
                "cannot listen on %s here: %m", addr);
        return;
    }
    snprintf(port_text, sizeof port_text, "%d", port);
    char *out = NULL;
    dt_status_t st = run_remote(ops, ctx, h, reach_script, addr, port_text,
                                &out);
    close(fd);
    if (st != DT_OK)
        add_row(t, h->name, "rendezvous", CHK_FAIL,
                "could not run the probe there (see above)");
    else if (strstr(out, "DT-REACH-OK"))
        add_row(t, h->name, "rendezvous", CHK_OK,
                "reaches this machine at %s (TCP port %d)", addr, port);
    else if (strstr(out, "DT-REACH-NOTOOL"))
        add_row(t, h->name, "rendezvous", CHK_SKIP,
                "neither bash nor nc there to test a TCP connection to %s",
                addr);
    else
        add_row(t, h->name, "rendezvous", CHK_FAIL,
                "cannot connect to this machine at %s (TCP, ephemeral "
                "port): a firewall between them, or the wrong interface; "
                "allow TCP from the host or set [cluster] interface",
                addr);
    free(out);
}

/* "the slurm launcher could not run dt-train there: FIRST LINE", the
 * first line being the launcher's output, else where its error is (and
 * the launcher's own problem, the likely cause). */
static void launcher_failed(const table_t *t, const char *out, char *buf,
                            size_t len)
{
    while (out && *out == '\n')
        out++;
    if (out && *out)
        snprintf(buf, len, "the %s launcher could not run dt-train there: "
                 "%.*s", t->launcher, (int)strcspn(out, "\n"), out);
    else
        snprintf(buf, len, "the %s launcher could not run dt-train there: "
                 "its error is above the table%s%s%s", t->launcher,
                 t->wide[0] ? "; fix the '" : "", t->wide,
                 t->wide[0] ? "' launcher row first" : "");
}

/* dt-train --gpus on the host: its GPUs and libraries for this job. */
static void gpu_check(table_t *t, const dt_launcher_ops_t *ops, void *ctx,
                      size_t i, const check_gpu_job_t *job)
{
    const dt_host_t *h = &t->hosts->hosts[i];
    char trainer[4096], detail[2048], why[640];
    dt_cli_worker_program("core", "dt-train", trainer, sizeof trainer);
    const char *argv[] = {trainer, "--gpus", NULL};
    char *out = NULL;
    int code = 0, r;
    if (ops->run_on_host(ctx, h, argv, &out, &code) != DT_OK) {
        /* not a missing dt: nothing ran there */
        launcher_failed(t, out, why, sizeof why);
        r = check_gpu_unknown(why, "fix the launcher's access to the host",
                              job, detail, sizeof detail);
    } else {
        r = check_gpu_judge(code == 0 ? out : NULL, job, detail,
                            sizeof detail);
    }
    free(out);
    add_row(t, h->name, "gpu", r == CHECK_GPU_OK     ? CHK_OK
                               : r == CHECK_GPU_FAIL ? CHK_FAIL
                                                     : CHK_SKIP,
            "%s", detail);
}

static void print_table(const table_t *t)
{
    static const char *const names[] = {"ok", "FAIL", "skip"};
    int hw = 4;
    for (size_t i = 0; i < t->n; i++)
        if ((int)strlen(t->v[i].host) > hw)
            hw = (int)strlen(t->v[i].host);
    printf("%-*s  %-10s  %-6s  %s\n", hw, "HOST", "CHECK", "RESULT",
           "DETAIL / HOW TO FIX");
    /* Host by host, in host-list order; rows naming no listed host last. */
    for (size_t h = 0; h <= t->hosts->n; h++)
        for (size_t i = 0; i < t->n; i++) {
            size_t k = 0;
            while (k < t->hosts->n &&
                   strcmp(t->hosts->hosts[k].name, t->v[i].host) != 0)
                k++;
            if (k == h)
                printf("%-*s  %-10s  %-6s  %s\n", hw, t->v[i].host,
                       t->v[i].check, names[t->v[i].result],
                       t->v[i].detail);
        }
    size_t nf = 0;
    for (size_t i = 0; i < t->n; i++)
        nf += t->v[i].result == CHK_FAIL;
    if (nf)
        printf("%zu check%s failed: fix them as described and run dtctl "
               "check again\n",
               nf, nf == 1 ? "" : "s");
    else
        printf("all checks passed\n");
}

/* A job file, or [model] layers in the configuration: dt's trainer. */
static int has_job(const dt_config_t *cfg, const char *job_file)
{
    const char *layers = dt_config_get(cfg, "model", "layers");
    return job_file || (layers && *layers);
}

/* A job (a job file, or [model] layers): the checks dtctl run makes of
 * it before any worker starts (its [train] settings, the model against
 * the data, the trainer program here) — a job check passed that run
 * refused at once. */
static void job_check(table_t *t, const dt_config_t *cfg,
                      const char *job_file, int np)
{
    if (!has_job(cfg, job_file))
        return;
    char trainer[4200];
    if (run_trainer_prepare(cfg, np, trainer, sizeof trainer) != DT_OK) {
        add_row(t, "localhost", "job", CHK_FAIL,
                "dtctl run would refuse this job: see the error above");
        return;
    }
    add_row(t, "localhost", "job", CHK_OK, "settings valid for %d "
            "worker%s; trainer %s", np, np == 1 ? "" : "s", trainer);
    char line[512], fit[768];
    size_t per_worker = 0;
    if (job_memory_line(cfg, line, sizeof line, &per_worker) != DT_OK)
        return;
    /* Workers on this machine using its memory (not a GPU's): what they
     * would find at their start is known here. */
    const char *device = dt_config_get(cfg, "train", "device");
    int host_memory = !(device && strcmp(device, "cuda") == 0);
    if (t->one_machine && host_memory &&
        !job_memory_fits_here(per_worker, np, fit, sizeof fit)) {
        char *promise = strstr(line, "; each worker refuses");
        if (promise)
            *promise = '\0'; /* the row says what they would do */
        add_row(t, "localhost", "memory", CHK_FAIL, "%s; %s", line, fit);
    } else {
        add_row(t, "localhost", "memory", CHK_OK, "%s", line);
    }
}

/* A plugin a [cluster] key names, loaded here as dtctl run loads it
 * before anything starts (the storage plugin even when the job stages
 * nothing: the name is wrong either way). */
static void plugin_check(table_t *t, const dt_config_t *cfg, dt_kind_t kind,
                         const char *key)
{
    const dt_plugin_t *p = NULL;
    const char *name = dt_config_get(cfg, "cluster", key), *where = "default";
    dt_config_origin(cfg, "cluster", key, NULL, &where);
    if (run_load_plugin(cfg, kind, key, &p) == DT_OK)
        add_row(t, "localhost", key, CHK_OK, "%s %s loads here", p->name,
                p->version);
    else
        add_row(t, "localhost", key, CHK_FAIL,
                "dtctl run would refuse %s = '%s' (%s): see the error above; "
                "dtctl plugins lists those that can run here", key,
                name ? name : "", where);
}

/* np ranks on the hosts' slots, as dtctl run places them (*placement:
 * NULL when they do not fit). */
static void placement_check(table_t *t, int np, dt_placement_t **placement)
{
    size_t slots = dt_hostlist_slots(t->hosts);
    if (dt_place_ranks(t->hosts, np, placement) == DT_OK) {
        add_row(t, "localhost", "placement", CHK_OK,
                "%d worker%s on %zu host%s (%zu slot%s)", np,
                np == 1 ? "" : "s", t->hosts->n, t->hosts->n == 1 ? "" : "s",
                slots, slots == 1 ? "" : "s");
        return;
    }
    *placement = NULL;
    add_row(t, "localhost", "placement", CHK_FAIL,
            "dtctl run would refuse %d workers on %zu slot%s: give more "
            "slots (-H host:N, slots=N in the hostfile) or fewer workers "
            "(-n %zu)", np, slots, slots == 1 ? "" : "s", slots);
}

/* [cluster] timeout, restarts and elastic membership; what the
 * launcher's own placement of the ranks rules out. */
static void cluster_check(table_t *t, const dt_config_t *cfg, int np,
                          int trainer, const dt_plugin_t *launcher)
{
    /* all, so that every error is said */
    int bad = run_check_cluster_keys(cfg) != DT_OK;
    bad |= run_check_restarts(cfg, t->hosts, np, trainer) != DT_OK;
    bad |= run_check_placed_by(cfg, t->hosts, launcher) != DT_OK;
    if (bad)
        add_row(t, "localhost", "cluster", CHK_FAIL,
                "dtctl run would refuse these settings: see the error above");
    else
        add_row(t, "localhost", "cluster", CHK_OK,
                "timeout, restarts and membership settings valid");
}

/* Ranks the job places on host i; without a placement (more workers
 * than slots) every slot is taken. */
static int ranks_on(const table_t *t, const dt_placement_t *placement,
                    int np, size_t i)
{
    if (!placement)
        return t->hosts->hosts[i].slots;
    int n = 0;
    for (int r = 0; r < np; r++)
        n += placement[r].host == i;
    return n;
}

/* Every worker on this machine (the local launcher, or every host names
 * it): loopback reaches them all. */
static int one_machine(const dt_plugin_t *launcher,
                       const dt_hostlist_t *hosts)
{
    if (strcmp(launcher->name, "local") == 0)
        return 1;
    for (size_t i = 0; i < hosts->n; i++)
        if (!dt_netif_is_local(hosts->hosts[i].name))
            return 0;
    return 1;
}

/* What dtctl check takes: one job file, no program. */
static int check_usage(const dt_cli_t *cli, const char **job_file)
{
    *job_file = NULL;
    if (cli->nargs > 1 || (cli->nargs == 1 &&
                           !strstr(cli->args[0], ".ini"))) {
        dt_error("usage: dtctl check [JOB.ini] [--launcher=NAME] [-H ...|"
                 "--hostfile FILE]");
        return 2;
    }
    /* The program's own host, PATH and working directory are the
     * workers', not a probe's: only the run can tell. */
    if (cli->exec_argv) {
        dt_error("dtctl check does not check a program; drop the part "
                 "after '--' (dtctl run starts it)");
        return 2;
    }
    if (cli->nargs == 1)
        *job_file = cli->args[0];
    return 0;
}

int dt_cmd_check(dt_cli_t *cli)
{
    const char *job_file = NULL;
    if (check_usage(cli, &job_file) != 0)
        return 2;
    dt_config_t *cfg = NULL;
    dt_hostlist_t hosts = {NULL, 0};
    const dt_plugin_t *p = NULL;
    dt_placement_t *placement = NULL;
    void *ctx = NULL;
    char **spec = NULL;
    size_t n = 0;
    table_t t = {0};
    int code = 2, np = 0;
    if (dt_cli_load_config(cli, job_file, &cfg) != DT_OK ||
        dt_cli_job_hosts(cfg, &hosts, &np) != DT_OK ||
        run_load_plugin(cfg, DT_KIND_LAUNCHER, "launcher", &p) != DT_OK)
        goto out;
    if (dt_config_get(cfg, "cluster", "interface") &&
        dt_config_get_list(cfg, "cluster", "interface", &spec, &n) != DT_OK)
        goto out;
    const dt_launcher_ops_t *ops = p->ops;
    if (!ops->init || ops->init(cfg, &ctx) != DT_OK) {
        dt_error("the %s launcher could not be set up (see above)", p->name);
        ctx = NULL;
        goto out;
    }
    t.hosts = &hosts;
    t.launcher = p->name;
    t.one_machine = one_machine(p, &hosts);
    t.bad = calloc(hosts.n ? hosts.n : 1, 1);
    if (!t.bad)
        goto out;
    code = 1;
    dt_info("checking %zu host%s with the %s launcher", hosts.n,
            hosts.n == 1 ? "" : "s", p->name);
    launcher_checks(&t, p, ctx);
    plugin_check(&t, cfg, DT_KIND_TRANSPORT, "transport");
    plugin_check(&t, cfg, DT_KIND_STORAGE, "storage");
    placement_check(&t, np, &placement);
    cluster_check(&t, cfg, np, has_job(cfg, job_file), p);
    job_check(&t, cfg, job_file, np);
    int can_run = DT_OPS_HAS(ops, dt_launcher_ops_t, run_on_host);
    const char *spec_text = dt_config_get(cfg, "cluster", "interface");
    const char *device = dt_config_get(cfg, "train", "device");
    const char *transport = dt_config_get(cfg, "cluster", "transport");
    check_gpu_job_t job = {
        .want_cuda = device && strcmp(device, "cuda") == 0,
        .nccl = transport && strcmp(transport, "nccl") == 0};
    for (size_t i = 0; i < hosts.n; i++) {
        const char *h = hosts.hosts[i].name;
        job.ranks = ranks_on(&t, placement, np, i);
        if (t.bad[i] || !can_run) {
            const char *why = t.bad[i] ? "the launcher cannot reach the host"
                                       : "the launcher cannot run commands "
                                         "on hosts";
            add_row(&t, h, "interface", CHK_SKIP, "%s", why);
            add_row(&t, h, "rendezvous", CHK_SKIP, "%s", why);
            add_row(&t, h, "gpu", CHK_SKIP, "%s", why);
            continue;
        }
        interface_check(&t, ops, ctx, i, spec, n, spec_text ? spec_text : "");
        rendezvous_check(&t, ops, ctx, i, spec, n);
        gpu_check(&t, ops, ctx, i, &job);
    }
    print_table(&t);
    code = t.failed ? 1 : 0;
    if (dt_cli_flush_stdout("check") != 0)
        code = 1;
out:
    if (ctx && ((const dt_launcher_ops_t *)p->ops)->fini)
        ((const dt_launcher_ops_t *)p->ops)->fini(ctx);
    for (size_t i = 0; i < t.n; i++) {
        free(t.v[i].host);
        free(t.v[i].check);
        free(t.v[i].detail);
    }
    free(t.v);
    free(t.bad);
    free(placement);
    dt_strv_free(spec);
    dt_hostlist_free(&hosts);
    dt_config_free(cfg);
    return code;
}
