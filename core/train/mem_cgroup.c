/* mem_cgroup.c — the room the tightest memory limit over a worker's
 * cgroup and its ancestors leaves (mem_budget.h). A limit set on a parent
 * (a job's slice, a scheduler's allocation over per-task cgroups) binds
 * the children as much as their own, and the swap a cgroup allows adds to
 * its room as SwapFree adds to the host's. When a file cannot be read,
 * the level counts as unlimited: a worker is never refused on a guess. */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_budget.h"

/* Limits at or above this are "none" (cgroup v1 writes 2^63 rounded to
 * a page for no limit). */
#define NO_LIMIT (1ull << 62)
/* How deep a level's subtree is searched for the workers under it. */
#define MAX_DEPTH 8

unsigned long long dt_mem_cgroup_level_room(const dt_mem_cgroup_level_t *l,
                                            unsigned long long host_swap_free)
{
    if (!l->limit || l->limit >= NO_LIMIT)
        return 0;
    unsigned long long mem = l->limit > l->anon ? l->limit - l->anon : 0;
    unsigned long long swap =
        l->swap_limit > l->swap_used ? l->swap_limit - l->swap_used : 0;
    if (swap > host_swap_free)
        swap = host_swap_free;
    if (swap > ULLONG_MAX - mem) /* host swap unknown, "max" allowed */
        return ULLONG_MAX;
    return mem + swap > 0 ? mem + swap : 1;
}

/* A number file's value (v2's "max", a missing or unreadable file: none,
 * ULLONG_MAX). */
static unsigned long long read_number(const char *dir, const char *name)
{
    char file[4352], text[64], *end;
    snprintf(file, sizeof file, "%s/%s", dir, name);
    if (dt_mem_read_text(file, text, sizeof text) != 0)
        return ULLONG_MAX;
    unsigned long long v = strtoull(text, &end, 10);
    return end == text ? ULLONG_MAX : v;
}

/* One level's files into l; 0 when it has a limit. */
static int read_level(const char *dir, int v2, dt_mem_cgroup_level_t *l)
{
    char file[4352], text[8192];
    memset(l, 0, sizeof *l);
    l->limit = read_number(dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    if (l->limit >= NO_LIMIT)
        return -1;
    snprintf(file, sizeof file, "%s/memory.stat", dir);
    if (dt_mem_read_text(file, text, sizeof text) == 0)
        dt_mem_stat_field(text, v2 ? "anon" : "total_rss", &l->anon);
    if (v2) {
        l->swap_limit = read_number(dir, "memory.swap.max");
        unsigned long long used = read_number(dir, "memory.swap.current");
        l->swap_used = used == ULLONG_MAX ? 0 : used;
        return 0;
    }
    /* v1 counts memory and swap together (memsw): the swap allowed is
     * that limit less the memory limit, the swap used the difference of
     * the two usages (both count the page cache) */
    unsigned long long memsw = read_number(dir, "memory.memsw.limit_in_bytes"),
                       memsw_used =
                           read_number(dir, "memory.memsw.usage_in_bytes"),
                       used = read_number(dir, "memory.usage_in_bytes");
    l->swap_limit = memsw >= NO_LIMIT ? ULLONG_MAX
                    : memsw > l->limit ? memsw - l->limit
                                       : 0;
    l->swap_used = memsw_used != ULLONG_MAX && used != ULLONG_MAX &&
                           memsw_used > used
                       ? memsw_used - used
                       : 0;
    return 0;
}

/* The processes running this program in dir and the cgroups below it,
 * this process not counted. A cgroup of many processes lists more than
 * text holds: those left out are not counted, which only makes the check
 * less strict. */
static int others_under(const char *dir, int depth)
{
    char file[4352], text[8192];
    int n = 0;
    snprintf(file, sizeof file, "%s/cgroup.procs", dir);
    if (dt_mem_read_text(file, text, sizeof text) == 0)
        n += dt_mem_cgroup_sharers(text, INT_MAX) - 1;
    DIR *d = depth < MAX_DEPTH ? opendir(dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if ((e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) ||
            e->d_name[0] == '.')
            continue;
        char sub[4352];
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) <
            sizeof sub)
            n += others_under(sub, depth + 1);
    }
    if (d)
        closedir(d);
    return n;
}

unsigned long long dt_mem_cgroup_room(const char *root, const char *path,
                                      int v2,
                                      unsigned long long host_swap_free,
                                      int local_workers, int *sharers,
                                      char *what, size_t len)
{
    char dir[4096];
    unsigned long long best = 0;
    int k = local_workers < 1 ? 1 : local_workers;
    *sharers = 1;
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", root, path) >= sizeof dir)
        return 0;
    size_t rootlen = strlen(root);
    /* from the worker's own cgroup up to the root, "/a/b/" as "/a/b" */
    while (strlen(dir) > rootlen && dir[strlen(dir) - 1] == '/')
        dir[strlen(dir) - 1] = '\0';
    for (;;) {
        dt_mem_cgroup_level_t l;
        if (read_level(dir, v2, &l) == 0) {
            unsigned long long room = dt_mem_cgroup_level_room(&l,
                                                               host_swap_free);
            int n = 1 + others_under(dir, 0);
            n = n > k ? k : n;
            if (!best || room / (unsigned)n < best / (unsigned)*sharers) {
                unsigned long long mem = l.limit > l.anon ? l.limit - l.anon
                                                          : 0;
                char swap[64] = "";
                if (room > mem)
                    snprintf(swap, sizeof swap, ", with %.2f GiB of swap",
                             (double)(room - mem) / (1ull << 30));
                best = room;
                *sharers = n;
                snprintf(what, len, "what the cgroup's memory limit of "
                         "%.2f GiB allows beyond the %.2f GiB its processes "
                         "hold%s: %.200s/%s", (double)l.limit / (1ull << 30),
                         (double)l.anon / (1ull << 30), swap, dir,
                         v2 ? "memory.max" : "memory.limit_in_bytes");
            }
        }
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= rootlen || !slash || slash < dir + rootlen)
            break;
        *slash = '\0';
        /* v1 without use_hierarchy: a parent's limit does not bind */
        if (!v2 && read_number(dir, "memory.use_hierarchy") == 0)
            break;
    }
    return best;
}
