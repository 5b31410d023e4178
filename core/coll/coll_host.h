/* coll_host.h — the ranks of this host, for collectives that bypass the
 * transport within a host (internal to core/coll).
 *
 * When every rank of the job is on this host, allreduce, reduce-scatter,
 * allgather, broadcast and barrier on host memory go through one
 * shared-memory segment (coll/shm). When the job spans H >= 2 hosts with
 * the same number L >= 2 of ranks on each, allreduce is hierarchical:
 * within the host through the segment, across hosts over the transport
 * among the ranks of the same local index (coll_hier.c), within the host
 * again. Set up by dt_comm_setup_hosts (coll_hosts.c). */
#ifndef DT_COLL_HOST_H
#define DT_COLL_HOST_H

#include "coll.h"
#include "shm/shm_coll.h"

/* The cross-host group's view of the transport: its rank h is global rank
 * ranks[h]; point-to-point calls go to the job's transport. */
typedef struct dt_coll_group {
    const dt_transport_ops_t *ops;
    void *ctx;
    int *ranks;
} dt_coll_group_t;

struct dt_coll_host {
    dt_shm_t *shm;            /* this host's ranks                        */
    int whole_job;            /* 1: every rank is here (all collectives)  */
    int local_index;          /* this rank among the host's ranks         */
    int local_count;          /* ranks on each host                       */
    int hosts;                /* H                                        */
    dt_comm_t cross;          /* whole_job 0: one rank per host           */
    dt_coll_group_t group;    /* cross's transport                        */
};

/* [collectives] shm, shm_chunk, shm_spin into the segment's arguments;
 * *on 0 when shm = off. DT_ERR_CONFIG, said with the key's origin, for
 * a value out of range. cfg NULL: the defaults. */
dt_status_t dt_coll_shm_keys(const dt_config_t *cfg, int *on,
                             dt_shm_args_t *sa);

/* coll_hier.c: the cross-host group's ops, and the allreduce. */
extern const dt_transport_ops_t dt_coll_group_ops;
dt_status_t dt_coll_hier_allreduce(dt_comm_t *c, const void *send,
                                   void *recv, size_t count, dt_dtype_t t,
                                   dt_redop_t op);

/* Whether a call of this comm may go through the host's segment: host
 * memory, every rank here (whole: for the collectives other than
 * allreduce, which also runs hierarchically). */
static inline int dt_coll_host_whole(const dt_comm_t *c)
{
    return c->host && c->host->whole_job;
}

#endif /* DT_COLL_HOST_H */
