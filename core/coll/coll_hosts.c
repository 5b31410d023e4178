/* coll_hosts.c — which ranks share a host, and the shared-memory segment
 * and cross-host group built from that (coll_host.h).
 *
 * Ranks that bind to the same address ([cluster] interface's choice) are
 * on one host. A job whose launcher puts every rank on this host
 * (local_size == size) needs no addresses. Otherwise each rank publishes
 * its address in the store; with L >= 2 ranks on each of H >= 2 hosts the
 * ranks of a host share a segment and the ranks of the same local index
 * form the cross-host group. Each host then sends (H-1)/H of the vector
 * out instead of the flat ring's 2(N-1)/N through its slowest link, and
 * L rings of 1/L each share the network (docs/PERFORMANCE.md#hierarchy).
 * Every rank must agree, or none uses it: a segment one host could not
 * open leaves the whole job on the flat algorithms. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <dt/config.h>
#include <dt/log.h>
#include <dt/store.h>
#include "coll_host.h"
#include "coll_internal.h"

/* Every key of one dt_init's setup starts with "coll/N" (ns), N this
 * rank's count of setups: a second dt_init in the same job (after
 * dt_finalize) must not read the first one's addresses, agreement counts
 * and segment names. Every rank sets up as many times. */
static dt_status_t key_space(const dt_comm_hosts_args_t *a, int rank,
                             char *ns, size_t len)
{
    char key[48];
    int64_t n = 0;
    snprintf(key, sizeof key, "coll/inits/%d", rank);
    DT_CHECK(dt_store_add(a->store, key, 1, &n));
    snprintf(ns, len, "coll/%lld", (long long)n);
    return DT_OK;
}

/* c->path: what a plugin author reads in `dtctl bench` to know whether
 * the transport was timed at all (on one host it is not, by default). */
static void set_path(dt_comm_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_path(dt_comm_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->path, sizeof c->path, fmt, ap);
    va_end(ap);
}

/* "transport tcp", or "the transport" when the caller did not name it. */
static const char *transport_words(const dt_comm_hosts_args_t *a, char *buf,
                                   size_t len)
{
    if (!a->transport)
        return "the transport";
    snprintf(buf, len, "transport %s", a->transport);
    return buf;
}

/* Ranks whose addresses one store round trip looks up (dt_store_lookup):
 * one get each made N * N requests of the job's one store server. */
#define HOSTS_LOOKUP_AHEAD 64

/* Every rank's bind address, from the store (addrs[p] malloc'd): looked up
 * HOSTS_LOOKUP_AHEAD at a time; one not yet published is waited for. */
static dt_status_t gather_addrs(const dt_comm_hosts_args_t *a,
                                const char *ns, int rank, int size,
                                char **addrs)
{
    char key[96];
    snprintf(key, sizeof key, "%s/host/%d", ns, rank);
    DT_CHECK(dt_store_set(a->store, key, a->bind_addr, strlen(a->bind_addr)));
    for (int base = 0; base < size; base += HOSTS_LOOKUP_AHEAD) {
        int k = size - base < HOSTS_LOOKUP_AHEAD ? size - base
                                                 : HOSTS_LOOKUP_AHEAD;
        char keys[HOSTS_LOOKUP_AHEAD][96];
        const char *kp[HOSTS_LOOKUP_AHEAD];
        void *vals[HOSTS_LOOKUP_AHEAD];
        size_t lens[HOSTS_LOOKUP_AHEAD];
        for (int i = 0; i < k; i++) {
            snprintf(keys[i], sizeof keys[i], "%s/host/%d", ns, base + i);
            kp[i] = keys[i];
        }
        /* On failure every entry is NULL: the gets below report it. */
        dt_store_lookup(a->store, kp, (size_t)k, vals, lens);
        for (int i = 0; i < k; i++) /* NUL-terminated by the client */
            addrs[base + i] = vals[i];
        for (int i = 0; i < k; i++) {
            if (addrs[base + i])
                continue;
            void *v = NULL;
            size_t len = 0;
            dt_status_t st = dt_store_get(a->store, kp[i], a->timeout, &v,
                                          &len);
            if (st != DT_OK) {
                dt_error("collectives: rank %d: rank %d did not publish its "
                         "address within %.0f s",
                         rank, base + i, a->timeout);
                return st;
            }
            addrs[base + i] = v;
        }
    }
    return DT_OK;
}

/* From the addresses: this rank's local index and count, and the global
 * rank of each host's rank with that index (cross, H entries, hosts in
 * the order of their lowest rank). 0 when hosts differ in rank count. */
static int place(int rank, int n, char *const *addrs, int *index, int *count,
                 int *cross, int *hosts)
{
    int l = 0, h = 0;
    for (int p = 0; p < n; p++)
        if (strcmp(addrs[p], addrs[rank]) == 0) {
            if (p == rank)
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

/* Whether every rank could open its host's segment. */
static dt_status_t agree(const dt_comm_hosts_args_t *a, const char *ns,
                         int size, int ok, int *all)
{
    int64_t total = 0;
    char ok_key[96], agreed[96];
    snprintf(ok_key, sizeof ok_key, "%s/hier/ok", ns);
    snprintf(agreed, sizeof agreed, "%s/hier/agreed", ns);
    DT_CHECK(dt_store_add(a->store, ok_key, ok, NULL));
    DT_CHECK(dt_store_barrier(a->store, agreed, size, a->timeout));
    DT_CHECK(dt_store_add(a->store, ok_key, 0, &total));
    *all = total == size;
    return DT_OK;
}

dt_status_t dt_coll_shm_keys(const dt_config_t *cfg, int *on,
                            dt_shm_args_t *sa)
{
    const char *mode = "auto", *where = "[collectives]";
    uint64_t chunk = DT_SHM_DEFAULT_CHUNK;
    double spin = 200e-6;
    if (cfg) {
        DT_CHECK(dt_config_get_string(cfg, "collectives", "shm", &mode));
        DT_CHECK(dt_config_get_size(cfg, "collectives", "shm_chunk", &chunk));
        DT_CHECK(
            dt_config_get_duration(cfg, "collectives", "shm_spin", &spin));
    }
    if (strcasecmp(mode, "auto") != 0 && strcasecmp(mode, "off") != 0) {
        if (cfg)
            dt_config_origin(cfg, "collectives", "shm", NULL, &where);
        dt_error("%s: [collectives] shm = '%s': use auto (shared memory for "
                 "the ranks of one host) or off (always the transport)",
                 where, mode);
        return DT_ERR_CONFIG;
    }
    if (chunk < 4096 || chunk > ((uint64_t)64 << 20)) {
        if (cfg)
            dt_config_origin(cfg, "collectives", "shm_chunk", NULL, &where);
        dt_error("%s: [collectives] shm_chunk = %llu bytes: give a size "
                 "from 4K to 64M (default 256K)",
                 where, (unsigned long long)chunk);
        return DT_ERR_CONFIG;
    }
    *on = strcasecmp(mode, "auto") == 0;
    sa->chunk = (size_t)chunk;
    sa->spin = spin;
    return DT_OK;
}

/* H hosts of L ranks: this host's segment and the cross-host group. */
static dt_status_t setup_hier(dt_comm_t *c, const dt_comm_hosts_args_t *a,
                              const char *ns, dt_shm_args_t *sa,
                              dt_coll_host_t *h)
{
    char **addrs = calloc((size_t)c->size, sizeof *addrs);
    int *cross = calloc((size_t)c->size, sizeof *cross);
    dt_status_t st = addrs && cross ? DT_OK : DT_ERR_NOMEM;
    int ok = 0, all = 0;
    char prefix[96];
    if (st == DT_OK)
        st = gather_addrs(a, ns, c->rank, c->size, addrs);
    if (st == DT_OK)
        ok = place(c->rank, c->size, addrs, &h->local_index,
                   &h->local_count, cross, &h->hosts) &&
             h->local_count >= 2 && h->hosts >= 2;
    if (st == DT_OK && ok) {
        /* One segment per host: its ranks meet under the host's index. */
        int host = 0;
        for (int i = 0; i < h->hosts; i++)
            if (cross[i] == c->rank)
                host = i;
        snprintf(prefix, sizeof prefix, "%s/shm/host%d", ns, host);
        sa->prefix = prefix;
        sa->rank = h->local_index;
        sa->size = h->local_count;
        /* The job's rank of each local index: the segment's messages and
         * the failure record name ranks of the job, not of the host. */
        int *local = malloc((size_t)h->local_count * sizeof *local);
        int l = 0;
        for (int p = 0; local && p < c->size; p++)
            if (strcmp(addrs[p], addrs[c->rank]) == 0)
                local[l++] = p;
        sa->global = local;
        st = local ? dt_shm_open(sa, &h->shm) : DT_ERR_NOMEM;
        sa->global = NULL;
        free(local);
        ok = st == DT_OK && h->shm;
        h->cross = *c;
        h->cross.rank = host;
        h->cross.size = h->hosts;
        h->cross.scratch = NULL;
        h->cross.scratch_len = 0;
        h->cross.host = NULL;
        h->cross.ef = NULL; /* its own residuals: its own buffers */
    }
    if (st == DT_OK)
        st = agree(a, ns, c->size, ok, &all);
    for (int p = 0; addrs && p < c->size; p++)
        free(addrs[p]);
    free(addrs);
    if (st != DT_OK || !all) {
        free(cross);
        char tw[80];
        if (st == DT_OK)
            set_path(c, "%s (the hosts do not all have the same number, at "
                        "least 2, of ranks that share memory)",
                     transport_words(a, tw, sizeof tw));
        if (st == DT_OK)
            dt_debug("collectives: rank %d: flat across hosts (the hosts do "
                     "not all have the same number, at least 2, of ranks "
                     "able to share memory)",
                     c->rank);
        return st == DT_OK ? DT_DECLINED : st;
    }
    h->group = (dt_coll_group_t){.ops = c->ops, .ctx = c->ctx,
                                 .ranks = cross};
    h->cross.ops = &dt_coll_group_ops;
    h->cross.ctx = &h->group;
    dt_debug("collectives: rank %d: hierarchical allreduce: %d ranks on "
             "each of %d hosts, within the host through shared memory "
             "(local index %d), across hosts over the transport",
             c->rank, h->local_count, h->hosts, h->local_index);
    char tw[80];
    set_path(c, "%s across %d hosts; allreduce within each host (%d ranks) "
                "through shared memory",
             transport_words(a, tw, sizeof tw), h->hosts, h->local_count);
    return DT_OK;
}

static void host_free(dt_coll_host_t *h)
{
    if (!h)
        return;
    dt_shm_close(h->shm);
    free(h->group.ranks);
    free(h->cross.scratch);
    dt_coll_feedback_free(&h->cross);
    free(h);
}

dt_status_t dt_comm_setup_hosts(dt_comm_t *c, const dt_config_t *cfg,
                                const dt_comm_hosts_args_t *a)
{
    dt_shm_args_t sa = {.name = "collectives", .store = a->store,
                        .rank = c->rank,
                        .size = c->size, .timeout = a->timeout};
    int on = 0;
    DT_CHECK(dt_coll_shm_keys(cfg, &on, &sa));
    /* dt_init asked the transport already: caps is asked once. */
    if (!c->caps_asked)
        dt_comm_query_caps(c, NULL);
    uint32_t caps = c->caps;
    int whole = a->local_size == c->size;
    const char *why = c->size < 2                ? "one rank"
                      : !on                      ? "[collectives] shm = off"
                      : caps & DT_CAP_NO_SHM     ? "the transport asks to "
                                                   "carry every byte"
                      : !a->store                ? "no rendezvous store"
                      : !whole && (!a->bind_addr || !*a->bind_addr)
                          ? "no bind address to tell hosts apart"
                          : NULL;
    char tw[80];
    const char *tr = transport_words(a, tw, sizeof tw);
    set_path(c, "%s (%s)", tr,
             why ? why : "no shared-memory segment could be set up");
    if (why) {
        dt_debug("collectives: rank %d: over the transport (%s)", c->rank,
                 why);
        return DT_OK;
    }
    char ns[48], prefix[96];
    DT_CHECK(key_space(a, c->rank, ns, sizeof ns));
    snprintf(prefix, sizeof prefix, "%s/shm", ns);
    sa.prefix = prefix;
    dt_coll_host_t *h = calloc(1, sizeof *h);
    if (!h)
        return DT_ERR_NOMEM;
    dt_status_t st;
    if (whole) {
        h->whole_job = 1;
        h->local_index = c->rank;
        h->local_count = c->size;
        h->hosts = 1;
        st = dt_shm_open(&sa, &h->shm);
        if (st == DT_OK && !h->shm)
            st = DT_DECLINED; /* every rank got NULL, and said why */
        else if (st == DT_OK)
            dt_debug("collectives: rank %d: through shared memory (all %d "
                     "ranks on this host)",
                     c->rank, c->size);
        if (st == DT_OK)
            set_path(c, "shared memory: all %d ranks on this host; %s "
                        "carries none of it ([collectives] shm = off puts "
                        "it there)",
                     c->size, tr);
    } else {
        st = setup_hier(c, a, ns, &sa, h);
    }
    if (st != DT_OK) {
        host_free(h);
        return st == DT_DECLINED ? DT_OK : st;
    }
    c->host = h;
    return DT_OK;
}

void dt_comm_release_hosts(dt_comm_t *c)
{
    host_free(c->host);
    c->host = NULL;
}
