/* mem_budget.c — how much memory this worker may still take on its host
 * (mem_budget.h). Each source is read as text and parsed apart from the
 * reading, so that the tests give the parsers texts of their own. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* A small file's text (a /proc or /sys file: its size reads as 0 or a
 * page) into buf; -1 when it cannot be read. */
static int slurp(const char *path, char *buf, size_t len)
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
    char text[8192];
    unsigned long long mapped = 0;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= NO_LIMIT)
        return 0;
    if (slurp("/proc/self/status", text, sizeof text) == 0)
        field(text, "VmSize", 1, &mapped);
    unsigned long long room =
        rl.rlim_cur > mapped ? rl.rlim_cur - mapped : 1;
    snprintf(what, len, "the address space RLIMIT_AS (ulimit -v) allows "
             "this worker beyond the %.2f GiB it already maps, of %.2f GiB",
             (double)mapped / (1ull << 30), (double)rl.rlim_cur / (1ull << 30));
    return room;
}

/* Room the cgroup's memory limit leaves: the limit less the anonymous
 * memory charged to it (its page cache can be reclaimed); *sharers: the
 * local workers under that limit (dt_mem_cgroup_sharers). */
static unsigned long long cgroup_room(int local_workers, int *sharers,
                                      char *what, size_t len)
{
    char text[8192], dir[4096], file[4200], path[3900];
    int v2;
    unsigned long long limit, anon = 0;
    if (slurp("/proc/self/cgroup", text, sizeof text) != 0 ||
        dt_mem_cgroup_path(text, path, sizeof path, &v2) != 0)
        return 0;
    snprintf(dir, sizeof dir, "/sys/fs/cgroup%s%s", v2 ? "" : "/memory",
             path);
    snprintf(file, sizeof file, "%s/%s", dir,
             v2 ? "memory.max" : "memory.limit_in_bytes");
    char *end;
    if (slurp(file, text, sizeof text) != 0)
        return 0;
    limit = strtoull(text, &end, 10); /* v2's "max": no number, no limit */
    if (end == text || limit >= NO_LIMIT)
        return 0;
    snprintf(file, sizeof file, "%s/memory.stat", dir);
    if (slurp(file, text, sizeof text) == 0)
        dt_mem_stat_field(text, v2 ? "anon" : "total_rss", &anon);
    /* a cgroup of many processes lists more than text holds: those left
     * out are not counted, which only makes the check less strict */
    snprintf(file, sizeof file, "%s/cgroup.procs", dir);
    *sharers = slurp(file, text, sizeof text) == 0
                   ? dt_mem_cgroup_sharers(text, local_workers)
                   : 1;
    snprintf(what, len, "what the cgroup's memory limit of %.2f GiB "
             "allows beyond the %.2f GiB its processes hold: %.200s/%s",
             (double)limit / (1ull << 30), (double)anon / (1ull << 30), dir,
             v2 ? "memory.max" : "memory.limit_in_bytes");
    return limit > anon ? limit - anon : 1;
}

void dt_mem_budget(int local_workers, dt_mem_budget_t *out)
{
    char text[8192], as_what[320] = "", cg_what[320] = "";
    unsigned long long host = 0;
    if (slurp("/proc/meminfo", text, sizeof text) != 0 ||
        dt_mem_meminfo_available(text, &host) != 0)
        host = 0;
    int sharers = 1;
    unsigned long long as = as_room(as_what, sizeof as_what),
                       cg = cgroup_room(local_workers, &sharers, cg_what,
                                        sizeof cg_what);
    dt_mem_budget_pick(host, "MemAvailable + SwapFree in /proc/meminfo", as,
                       as_what, cg, cg_what, sharers, local_workers, out);
}
