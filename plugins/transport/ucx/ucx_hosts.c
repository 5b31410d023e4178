/* ucx_hosts.c — a job across hosts: which ranks share a host, and the
 * hierarchical allreduce's two groups for this rank.
 *
 * Ranks that bind to the same address ([cluster] interface's choice) are
 * on one host. With L >= 2 ranks on each of H >= 2 hosts, the ranks of a
 * host share a segment (shm_coll.h), and the ranks with the same local
 * index form the cross-host group. The allreduce then reduces within the
 * host (each local rank ends with one L-th of the host's sum), reduces
 * that L-th across hosts over UCX, and gathers within the host again:
 * each host sends (H-1)/H of the vector out instead of the flat ring's
 * 2(N-1)/N through its slowest link, and L rings of 1/L each share the
 * network. Every rank of the job must agree, or none uses it. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include <dt/store.h>
#include "ucx.h"

#define KEY_ADDR "ucx/host/%d"

/* Every rank's bind address, from the store (addrs[p] malloc'd). */
static dt_status_t gather_addrs(ucx_ctx_t *c, const dt_transport_args_t *a,
                                char **addrs)
{
    char key[64];
    snprintf(key, sizeof key, KEY_ADDR, a->rank);
    DT_CHECK(dt_store_set(a->store, key, a->bind_addr, strlen(a->bind_addr)));
    for (int p = 0; p < a->size; p++) {
        void *v = NULL;
        size_t len = 0;
        snprintf(key, sizeof key, KEY_ADDR, p);
        dt_status_t st = dt_store_get(a->store, key, c->timeout, &v, &len);
        if (st != DT_OK) {
            dt_error("ucx: rank %d: rank %d did not publish its address "
                     "within %.0f s",
                     a->rank, p, c->timeout);
            return st;
        }
        addrs[p] = calloc(1, len + 1);
        if (!addrs[p]) {
            free(v);
            return DT_ERR_NOMEM;
        }
        memcpy(addrs[p], v, len);
        free(v);
    }
    return DT_OK;
}

/* From the addresses: this rank's local index and count, and the global
 * rank of each host's rank with that index (cross, H entries, hosts in
 * the order of their lowest rank). 0 when hosts differ in rank count. */
static int place(const dt_transport_args_t *a, char *const *addrs,
                 int *index, int *count, int *cross, int *hosts)
{
    int n = a->size, l = 0, h = 0;
    for (int p = 0; p < n; p++)
        if (strcmp(addrs[p], addrs[a->rank]) == 0) {
            if (p == a->rank)
                *index = l;
            l++;
        }
    *count = l;
    for (int p = 0; p < n; p++) {
        int first = 1, members = 0;
        for (int q = 0; q < p && first; q++)
            first = strcmp(addrs[q], addrs[p]) != 0;
        if (!first)
            continue;
        for (int q = p; q < n; q++) {
            if (strcmp(addrs[q], addrs[p]) != 0)
                continue;
            if (members == *index)
                cross[h] = q;
            members++;
        }
        if (members != l)
            return 0;
        h++;
    }
    *hosts = h;
    return 1;
}

/* Both kinds of group must work on every rank of every host. */
static dt_status_t agree(ucx_ctx_t *c, const dt_transport_args_t *a, int ok,
                         int *all)
{
    int64_t total = 0;
    DT_CHECK(dt_store_add(a->store, "ucx/hier/ok", ok, NULL));
    DT_CHECK(dt_store_barrier(a->store, "ucx/hier/agreed", a->size,
                              c->timeout));
    DT_CHECK(dt_store_add(a->store, "ucx/hier/ok", 0, &total));
    *all = total == a->size;
    return DT_OK;
}

dt_status_t ucx_hier_setup(ucx_ctx_t *c, const dt_transport_args_t *a,
                           const dt_shm_args_t *sa)
{
    char **addrs = calloc((size_t)a->size, sizeof *addrs);
    int *cross = calloc((size_t)a->size, sizeof *cross);
    dt_status_t st = addrs && cross ? DT_OK : DT_ERR_NOMEM;
    int index = 0, count = 0, hosts = 0, ok = 0, all = 0;
    char prefix[64];
    if (st == DT_OK)
        st = gather_addrs(c, a, addrs);
    if (st == DT_OK)
        ok = place(a, addrs, &index, &count, cross, &hosts) && count >= 2 &&
             hosts >= 2;
    if (st == DT_OK && ok) {
        /* One segment per host: its ranks meet under the host's index. */
        int host = 0;
        for (int h = 0; h < hosts; h++)
            if (cross[h] == a->rank)
                host = h;
        snprintf(prefix, sizeof prefix, "ucx/shm/host%d", host);
        dt_shm_args_t hs = *sa;
        hs.prefix = prefix;
        hs.rank = index;
        hs.size = count;
        st = dt_shm_open(&hs, &c->shm);
        ok = st == DT_OK && c->shm;
        if (st == DT_OK)
            st = agree(c, a, ok, &all);
        c->cross = (dt_comm_t){.rank = 0, .size = hosts, .timeout_ms = -1};
        for (int h = 0; h < hosts; h++)
            if (cross[h] == a->rank)
                c->cross.rank = h;
    } else if (st == DT_OK) {
        st = agree(c, a, 0, &all);
    }
    for (int p = 0; addrs && p < a->size; p++)
        free(addrs[p]);
    free(addrs);
    if (st != DT_OK || !all) {
        dt_shm_close(c->shm);
        c->shm = NULL;
        free(cross);
        if (st == DT_OK)
            dt_debug("ucx: rank %d: collectives over UCX (the hosts do not "
                     "all have the same number, at least 2, of ranks able "
                     "to share memory)",
                     a->rank);
        return st;
    }
    c->hier = 1;
    c->local_index = index;
    c->local_count = count;
    c->cross_ranks = cross;
    dt_debug("ucx: rank %d: hierarchical allreduce: %d ranks on each of %d "
             "hosts, within the host through shared memory (local rank %d), "
             "across hosts over UCX",
             a->rank, count, hosts, index);
    return DT_OK;
}
