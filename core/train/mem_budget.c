/* mem_budget.c — how much memory this worker may still take on its host
 * (mem_budget.h). Each source is read as text and parsed apart from the
 * reading, so that the tests give the parsers texts of their own. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/proc_status.h"
#include "mem_budget.h"

/* Limits at or above this are "none" (cgroup v1 writes 2^63 rounded to
 * a page for no limit). */
#define NO_LIMIT (1ull << 62)

/* The number after "key" at a line's start (then a unit of kB when
 * kb). */
static int field(const char *text, const char *key, int kb,
                 unsigned long long *value)
{
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        if (strncmp(p, key, n) != 0 || (p[n] != ' ' && p[n] != ':' &&
                                         p[n] != '\t'))
            continue;
        const char *v = p + n + (p[n] == ':');
        char *end;
        unsigned long long x = strtoull(v, &end, 10);
        if (end == v)
            return -1;
        *value = kb ? x * 1024 : x;
        return 0;
    }
    return -1;
}

int dt_mem_meminfo_available(const char *text, unsigned long long *bytes)
{
    unsigned long long avail, swap = 0;
    if (field(text, "MemAvailable", 1, &avail) != 0)
        return -1;
    field(text, "SwapFree", 1, &swap); /* none: no swap */
    *bytes = avail + swap;
    return 0;
}

unsigned long long dt_mem_meminfo_swap_free(const char *text)
{
    unsigned long long swap = 0;
    field(text, "SwapFree", 1, &swap);
    return swap;
}

int dt_mem_stat_field(const char *text, const char *key,
                      unsigned long long *value)
{
    return field(text, key, 0, value);
}

int dt_mem_cgroup_path(const char *text, char *path, size_t len, int *v2)
{
    int found = -1;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        const char *c1 = strchr(p, ':'), *nl = strchr(p, '\n');
        const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c1 || !c2 || (nl && c2 > nl))
            continue;
        size_t plen = nl ? (size_t)(nl - c2 - 1) : strlen(c2 + 1);
        int is_v2 = strncmp(p, "0::", 3) == 0;
        /* v1: "memory" among the controllers between the colons */
        int is_v1 = 0;
        for (const char *q = c1 + 1; q + 6 <= c2; q++)
            if (strncmp(q, "memory", 6) == 0 && (q == c1 + 1 || q[-1] == ',') &&
                (q + 6 == c2 || q[6] == ','))
                is_v1 = 1;
        if ((!is_v2 && !is_v1) || plen + 1 > len)
            continue;
        memcpy(path, c2 + 1, plen);
        path[plen] = '\0';
        *v2 = is_v2;
        found = 0;
        if (is_v1) /* v1's memory controller, where both are listed */
            return 0;
    }
    return found;
}

int dt_mem_cgroup_sharers(const char *procs, int local_workers)
{
    struct stat self, other;
    int n = 1; /* this process */
    if (stat("/proc/self/exe", &self) != 0)
        return 1;
    pid_t me = getpid();
    for (const char *p = procs; p && *p;
         p = strchr(p, '\n'), p = p ? p + 1 : p) {
        char *end, exe[64];
        long pid = strtol(p, &end, 10);
        /* a whole line only: a text cut short may end in part of a pid */
        if (end == p || *end != '\n' || pid <= 0 || pid == (long)me)
            continue;
        snprintf(exe, sizeof exe, "/proc/%ld/exe", pid);
        if (stat(exe, &other) == 0 && other.st_dev == self.st_dev &&
            other.st_ino == self.st_ino)
            n++;
    }
    return n < local_workers ? n : local_workers < 1 ? 1 : local_workers;
}

void dt_mem_budget_pick(unsigned long long host, const char *host_what,
                        unsigned long long as, const char *as_what,
                        unsigned long long cgroup, const char *cgroup_what,
                        int cgroup_workers, int local_workers,
                        dt_mem_budget_t *out)
{
    int k = local_workers < 1 ? 1 : local_workers;
    int kc = cgroup_workers < 1 ? 1 : cgroup_workers > k ? k : cgroup_workers;
    struct {
        unsigned long long bytes;
        int workers;
        const char *what;
    } c[3] = {[DT_MEM_HOST_AVAILABLE] = {host, k, host_what},
              [DT_MEM_ADDRESS_SPACE] = {as, 1, as_what},
              [DT_MEM_CGROUP] = {cgroup, kc, cgroup_what}};
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 3; i++) {
        if (!c[i].bytes)
            continue;
        /* the least share of one worker wins */
        if (!out->bytes || c[i].bytes / (unsigned)c[i].workers <
                               out->bytes / (unsigned)out->workers) {
            out->bytes = c[i].bytes;
            out->workers = c[i].workers;
            out->kind = i;
            snprintf(out->what, sizeof out->what, "%s",
                     c[i].what ? c[i].what : "");
        }
    }
}

int dt_mem_read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return 0;
}

/* Room the address space limit leaves: RLIMIT_AS less what is mapped. */
static unsigned long long as_room(char *what, size_t len)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= NO_LIMIT)
        return 0;
    unsigned long long mapped = dt_proc_mapped_bytes();
    unsigned long long room =
        rl.rlim_cur > mapped ? rl.rlim_cur - mapped : 1;
    snprintf(what, len, "the address space RLIMIT_AS (ulimit -v) allows "
             "this worker beyond the %.2f GiB it already maps, of %.2f GiB",
             (double)mapped / (1ull << 30), (double)rl.rlim_cur / (1ull << 30));
    return room;
}

void dt_mem_measure_shared(int local_workers, dt_mem_shared_t *out)
{
    char text[8192], path[3900];
    int v2;
    memset(out, 0, sizeof *out);
    out->measured = 1;
    out->cgroup_workers = 1;
    int meminfo = dt_mem_read_text("/proc/meminfo", text, sizeof text) == 0;
    if (!meminfo)
        text[0] = '\0';
    if (dt_mem_meminfo_available(text, &out->host) != 0)
        out->host = 0;
    /* unreadable: the host's swap unknown, a cgroup's allowed swap
     * counted whole (never a refusal on a guess) */
    unsigned long long swap_free =
        meminfo ? dt_mem_meminfo_swap_free(text) : ULLONG_MAX;
    if (dt_mem_read_text("/proc/self/cgroup", text, sizeof text) == 0 &&
        dt_mem_cgroup_path(text, path, sizeof path, &v2) == 0)
        out->cgroup = dt_mem_cgroup_room(
            v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", path, v2,
            swap_free, local_workers, &out->cgroup_workers,
            out->cgroup_what, sizeof out->cgroup_what);
}

void dt_mem_budget(const dt_mem_shared_t *shared, int local_workers,
                   dt_mem_budget_t *out)
{
    dt_mem_shared_t now;
    if (!shared || !shared->measured) {
        dt_mem_measure_shared(local_workers, &now);
        shared = &now;
    }
    char as_what[320] = "";
    unsigned long long as = as_room(as_what, sizeof as_what);
    dt_mem_budget_pick(shared->host, "MemAvailable + SwapFree in "
                       "/proc/meminfo", as, as_what, shared->cgroup,
                       shared->cgroup_what, shared->cgroup_workers,
                       local_workers, out);
}
