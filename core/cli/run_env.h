/* run_env.h — the environment every worker of a job gets: the job-wide
 * part (world size, master address, job token) and each rank's part
 * (DT_RANK, LOCAL_RANK, ...). dt's names and torchrun's both, so a PyTorch
 * script with init_method="env://" runs unchanged. The table is in
 * docs/LAUNCHERS.md. */
#ifndef DT_CLI_RUN_ENV_H
#define DT_CLI_RUN_ENV_H

#include <dt/config.h>
#include <dt/hosts.h>
#include <dt/store.h>
#include "env_list.h"

#define DT_DEFAULT_MASTER_PORT 29500

/* What dtctl decided about one job before starting it. */
typedef struct run_job {
    int np;
    const dt_hostlist_t *hosts;
    const dt_placement_t *placement; /* np entries                   */
    int num_nodes;                   /* hosts that got a rank        */
    char job_id[13];                 /* short random hex: DT_JOB_ID  */
    uint8_t token[DT_TOKEN_BYTES];   /* the job secret               */
    char token_hex[2 * DT_TOKEN_BYTES + 1];
    char master_addr[256];           /* MASTER_ADDR                  */
    int master_port;                 /* MASTER_PORT                  */
} run_job_t;

/* Fill job: token, job id, MASTER_ADDR/PORT (127.0.0.1 and a free port
 * when every host is this machine; else rank 0's host and [cluster]
 * master_port or 29500). */
dt_status_t run_job_prepare(const dt_config_t *cfg, const dt_hostlist_t *hosts,
                            const dt_placement_t *placement, int np,
                            run_job_t *job);
/* When rank 0's host is a loopback name (localhost, 127.0.0.1, ::1) and
 * some rank runs on another host, MASTER_ADDR becomes the address of the
 * rendezvous store ("addr:port" or "[v6]:port": this machine's address
 * facing the other hosts), which they can reach; unchanged otherwise. */
void run_job_reach_master(run_job_t *job, const char *rendezvous);
/* The local launcher runs every worker here, whatever names the host list
 * gives this machine (localhost, 127.0.0.1, its name): number the ranks as
 * on one host (local rank = rank, one node), so no two share a LOCAL_RANK
 * (a GPU, CPU cores). Each rank keeps its host entry (DT_HOST, weight).
 * say: log the renumbering once. */
void run_place_one_machine(const dt_hostlist_t *hosts,
                           dt_placement_t *placement, int np, int say);
/* Forget the secret. */
void run_job_wipe(run_job_t *job);

/* The variables every worker of the job gets. This is the one place that
 * builds them: the rendezvous store's address (DT_RENDEZVOUS) belongs
 * here too. */
dt_status_t run_env_common(const run_job_t *job, env_list_t *env);
/* The variables of one rank. */
dt_status_t run_env_rank(const run_job_t *job, int rank, env_list_t *env);

/* For a program (not dt's trainer, whose transports choose themselves):
 * NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME and UCX_NET_DEVICES from
 * [cluster] interface. With the local launcher the interface dt itself
 * uses here; elsewhere a list of interface names as it is (networks,
 * addresses and exclusions differ per host: nothing is set, -v says so).
 * A variable dtctl's environment has keeps its value and is put in the
 * job's variables as it is, so launchers that do not pass dtctl's
 * environment (ssh, yarn) carry it too. Nothing when the key is unset. */
dt_status_t run_env_interface(const dt_config_t *cfg, env_list_t *env);

/* For a program: what torchrun's workers get and dtctl's pipes would
 * otherwise change. PYTHONUNBUFFERED=1 (a worker's stdout is a pipe to
 * dtctl, where Python holds print() output in 8 KB blocks until exit or
 * loses it when the rank is killed), and, where several workers share a
 * host, OMP_NUM_THREADS (this machine's CPUs / its workers when every
 * worker is here, else 1 as torchrun sets; not where the scheduler places
 * the ranks, scheduler_places: dtctl's placement is not theirs, and the
 * scheduler sets its own): each only when env does not hold it yet (-x,
 * [cluster] env_vars: run_env_user first) and dtctl's environment does
 * not set it (then its value is passed on as it is). */
dt_status_t run_env_program(const run_job_t *job, int scheduler_places,
                            env_list_t *env);

/* [cluster] env_vars (and -x): NAME takes dtctl's value (warned and left
 * out when dtctl's environment lacks it), NAME=VALUE its value; they
 * replace what dtctl derived ([cluster] interface's variables) and come
 * before a program's defaults (run_env_program). A name
 * that is not an sh variable name, or that dt sets for the job (DT_*,
 * RANK, MASTER_ADDR, ...: docs/LAUNCHERS.md), is refused with the key's
 * origin (DT_ERR_CONFIG). env NULL: only check. */
dt_status_t run_env_user(const dt_config_t *cfg, env_list_t *env);

/* A TCP port free on addr right now (bind to port 0 and ask). */
dt_status_t run_free_port(const char *addr, int *port);
/* 1 when something listens on (or holds) addr:port now. */
int run_port_taken(const char *addr, int port);

#endif /* DT_CLI_RUN_ENV_H */
