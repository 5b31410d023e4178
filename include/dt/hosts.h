/* dt/hosts.h — host lists (from -H, a hostfile or a scheduler) and the
 * placement of ranks on them.
 *
 * Hostfile lines ('#' starts a comment, blank lines are skipped):
 *   node1 slots=4         Open MPI / Horovod / DeepSpeed style
 *   node1 slots=4 port=2222
 *   node2:4               host:slots
 *   node3                 a bare host: one slot
 *   10.0.0.5:2222         MXNet style ip:sshport
 *   node4 slots=2 weight=0.5   each worker there gets weight 0.5 of the
 *                         [cluster] work_load split (unequal shares)
 * After ':' a number N is the ssh port when N == 22 or N >= 1024 (MXNet's
 * "ip:port"), otherwise the slot count. The same host twice (the name,
 * ignoring case, and the port) is an error with both file:lines; one
 * address with two ports is two hosts. Names are never resolved.
 */
#ifndef DT_HOSTS_H
#define DT_HOSTS_H

#include <stddef.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dt_host {
    char *name;  /* host name or address                      */
    int slots;   /* worker processes it may run (>= 1)        */
    int port;    /* ssh port, 0 for the launcher's default    */
    double weight; /* weight=W: work_load of its workers (0: unset) */
} dt_host_t;

typedef struct dt_hostlist {
    dt_host_t *hosts;
    size_t n;
} dt_hostlist_t;

/* "h1:2,h2:4,h3" (slots after ':'; default 1). Errors name the bad item. */
dt_status_t dt_hosts_parse(const char *spec, dt_hostlist_t *out);
/* A hostfile; errors (a duplicate host, a bad slots value) say file:line. */
dt_status_t dt_hostfile_parse(const char *path, dt_hostlist_t *out);
void dt_hostlist_free(dt_hostlist_t *list);
size_t dt_hostlist_slots(const dt_hostlist_t *list);

/* Where one rank runs. Ranks fill hosts in order, slot by slot. */
typedef struct dt_placement {
    int rank;
    size_t host;     /* index into the host list */
    int local_rank;
    int local_size;  /* ranks on the same host   */
    int node_rank;   /* index among used hosts   */
    int num_nodes;   /* hosts that got a rank    */
} dt_placement_t;

/* Place np ranks on the hosts; DT_ERR_INVALID (logged) when np exceeds the
 * slots. *out is an array of np entries, free() it. */
dt_status_t dt_place_ranks(const dt_hostlist_t *list, int np,
                           dt_placement_t **out);

/* 1 for "localhost", loopback addresses (127.x.y.z, ::1) and this
 * machine's own host name (full or short); 0 otherwise. Never resolves
 * names (no DNS: it must not block). Launchers use it to run a local
 * host's workers without a remote shell. */
int dt_host_is_local(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* DT_HOSTS_H */
