/* run_job.c — per-job decisions made before any worker starts: the job
 * secret, a job id, and where torch-style rendezvous (MASTER_ADDR/PORT)
 * points. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
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

static dt_status_t pick_master(const dt_config_t *cfg, run_job_t *job)
{
    if (all_hosts_local(job->hosts, job->placement, job->np)) {
        snprintf(job->master_addr, sizeof job->master_addr, "127.0.0.1");
        return run_free_port(job->master_addr, &job->master_port);
    }
    snprintf(job->master_addr, sizeof job->master_addr, "%s",
             job->hosts->hosts[job->placement[0].host].name);
    long long port = DT_DEFAULT_MASTER_PORT;
    dt_status_t st = dt_config_get_int(cfg, "cluster", "master_port", &port);
    if (st != DT_OK && st != DT_ERR_NOT_FOUND)
        return st;
    if (port < 1 || port > 65535) {
        dt_error("[cluster] master_port = %lld is not a TCP port (1-65535)",
                 port);
        return DT_ERR_CONFIG;
    }
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

void run_job_wipe(run_job_t *job)
{
    explicit_bzero(job->token, sizeof job->token);
    explicit_bzero(job->token_hex, sizeof job->token_hex);
}
