/* run_job.c — per-job decisions made before any worker starts: the job
 * secret, a job id, and where torch-style rendezvous (MASTER_ADDR/PORT)
 * points. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/hosts.h>
#include "run_env.h"

static int all_hosts_local(const dt_hostlist_t *hosts,
                           const dt_placement_t *placement, int np)
{
    for (int r = 0; r < np; r++)
        if (!dt_host_is_local(hosts->hosts[placement[r].host].name))
            return 0;
    return 1;
}

/* MASTER_ADDR/PORT. A job on this machine alone takes a free port unless
 * [cluster] master_port is set (a script or a firewall may expect it:
 * it was ignored there); a job across hosts cannot probe the others, so
 * master_port, else 29500. */
static dt_status_t pick_master(const dt_config_t *cfg, run_job_t *job)
{
    long long port = DT_DEFAULT_MASTER_PORT;
    dt_status_t st = dt_config_get_int(cfg, "cluster", "master_port", &port);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    int set = st == DT_OK;
    if (port < 1 || port > 65535) /* run_check_cluster_keys said it */
        return DT_ERR_CONFIG;
    if (all_hosts_local(job->hosts, job->placement, job->np)) {
        snprintf(job->master_addr, sizeof job->master_addr, "127.0.0.1");
        if (set && run_port_taken(job->master_addr, (int)port)) {
            /* another local job's (a master_port meant for jobs across
             * hosts, in a shared cluster file): its store would fail */
            const char *where = "[cluster] master_port";
            dt_config_origin(cfg, "cluster", "master_port", NULL, &where);
            dt_warn("%s: [cluster] master_port = %lld is in use on this "
                    "machine (another job?): MASTER_PORT is a free port "
                    "instead",
                    where, port);
            set = 0;
        }
        if (!set)
            return run_free_port(job->master_addr, &job->master_port);
        job->master_port = (int)port;
        return DT_OK;
    }
    snprintf(job->master_addr, sizeof job->master_addr, "%s",
             job->hosts->hosts[job->placement[0].host].name);
    job->master_port = (int)port;
    return DT_OK;
}

dt_status_t run_job_prepare(const dt_config_t *cfg, const dt_hostlist_t *hosts,
                            const dt_placement_t *placement, int np,
                            run_job_t *job)
{
    memset(job, 0, sizeof *job);
    job->np = np;
    job->hosts = hosts;
    job->placement = placement;
    job->num_nodes = np > 0 ? placement[0].num_nodes : 0;
    if (dt_token_generate(job->token) != DT_OK) {
        dt_error("cannot generate the job token: the system's random number "
                 "generator failed");
        return DT_ERR_INTERNAL;
    }
    dt_token_to_hex(job->token, job->token_hex);
    uint8_t id[6];
    if (getrandom(id, sizeof id, 0) != (ssize_t)sizeof id) {
        dt_error("cannot make a job id: getrandom: %s", strerror(errno));
        return DT_ERR_IO;
    }
    for (size_t i = 0; i < sizeof id; i++)
        snprintf(job->job_id + 2 * i, 3, "%02x", id[i]);
    return pick_master(cfg, job);
}

/* A name that means "the machine reading it" wherever it is read: given to
 * a worker on another host it names that host, not rank 0's. */
static int loopback_name(const char *name)
{
    static const char *const names[] = {"localhost", "localhost.localdomain",
                                        "ip6-localhost", "ip6-loopback"};
    unsigned char a[sizeof(struct in6_addr)];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(name, names[i]) == 0)
            return 1;
    if (inet_pton(AF_INET, name, a) == 1)
        return a[0] == 127;
    return inet_pton(AF_INET6, name, a) == 1 &&
           IN6_IS_ADDR_LOOPBACK((struct in6_addr *)a);
}

void run_job_reach_master(run_job_t *job, const char *rendezvous)
{
    if (all_hosts_local(job->hosts, job->placement, job->np) ||
        !loopback_name(job->master_addr) || !rendezvous)
        return;
    /* "addr:port" or "[v6addr]:port": the address, without the port. */
    const char *start = rendezvous + (rendezvous[0] == '[');
    const char *end = rendezvous[0] == '[' ? strchr(start, ']')
                                           : strrchr(start, ':');
    char addr[sizeof job->master_addr];
    if (!end || (size_t)(end - start) >= sizeof addr)
        return;
    snprintf(addr, sizeof addr, "%.*s", (int)(end - start), start);
    if (loopback_name(addr))
        return; /* nothing better to offer: the store is on loopback too */
    dt_debug("MASTER_ADDR: rank 0's host '%s' is a loopback name the other "
             "hosts cannot use; giving them %s, this machine's address "
             "facing them (the rendezvous store's)",
             job->master_addr, addr);
    snprintf(job->master_addr, sizeof job->master_addr, "%s", addr);
}

/* Room kept at the end of the names for " and 1048576 more". */
#define MORE_ROOM 24

/* "'a', 'b'": the names of the hosts that got ranks, in list order. Whole
 * names only, then "and K more" for those that do not fit: a list of a
 * few hundred loopback names ended the line mid-name ("..., '"). */
static void used_names(const dt_hostlist_t *hosts,
                       const dt_placement_t *placement, int np, char *out,
                       size_t len)
{
    size_t at = 0, more = 0;
    out[0] = '\0';
    unsigned char *used = calloc(hosts->n ? hosts->n : 1, 1);
    if (!used || len <= MORE_ROOM) {
        free(used);
        return;
    }
    for (int r = 0; r < np; r++) /* one pass: np x hosts was quadratic */
        used[placement[r].host] = 1;
    for (size_t h = 0; h < hosts->n; h++) {
        if (!used[h])
            continue;
        int w = more ? -1
                     : snprintf(out + at, len - MORE_ROOM - at, "%s'%s'",
                                at ? ", " : "", hosts->hosts[h].name);
        if (w < 0 || (size_t)w >= len - MORE_ROOM - at) {
            out[at] = '\0'; /* this name did not fit: none after it */
            more++;
            continue;
        }
        at += (size_t)w;
    }
    if (more)
        snprintf(out + at, len - at, "%sand %zu more", at ? " " : "", more);
    free(used);
}

void run_place_one_machine(const dt_hostlist_t *hosts,
                           dt_placement_t *placement, int np, int say)
{
    /* A host elsewhere: the local launcher refuses the job, naming it. */
    if (np < 1 || placement[0].num_nodes < 2 ||
        !all_hosts_local(hosts, placement, np))
        return;
    if (say) {
        char names[512];
        used_names(hosts, placement, np, names, sizeof names);
        dt_info("hosts %s all name this machine (the local launcher "
                "runs every worker here): their %d workers are numbered as "
                "on one host, LOCAL_RANK 0-%d, GROUP_RANK 0, and DT_HOST "
                "keeps each entry's name (-H localhost:%d says it in one "
                "entry)", names, np, np - 1, np);
    }
    for (int r = 0; r < np; r++) {
        placement[r].local_rank = r;
        placement[r].local_size = np;
        placement[r].node_rank = 0;
        placement[r].num_nodes = 1;
    }
}

void run_job_wipe(run_job_t *job)
{
    explicit_bzero(job->token, sizeof job->token);
    explicit_bzero(job->token_hex, sizeof job->token_hex);
}
