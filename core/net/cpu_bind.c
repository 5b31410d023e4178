/* cpu_bind.c — [cluster] bind: each worker of a host on its own share of
 * the CPUs it was given.
 *
 * Why: an unbound worker migrates between cores and loses its cache; on
 * the 2-core test machine a 2 MiB allreduce of two unbound ranks took
 * 1.4-2.0 ms and 0.56-1.1 ms bound (Open MPI binds to cores by default for
 * such jobs), and with 4 ranks on 2 cores the 4 KiB allreduce went from
 * 70-125 us to 55-62 us. Binding works inside the mask the process
 * inherited, so a launcher's or scheduler's own binding (mpirun, Slurm
 * --cpu-bind, cgroups) is kept.
 *
 * Whole mask: the inherited mask holds every CPU the process may use (its
 * cgroup's effective cpuset, else every online CPU; isolcpus= ones aside),
 * so nobody bound it and all ranks of the host share it. A narrower mask
 * was chosen for this rank (srun --cpu-bind, mpirun --map-by slot:PE=N or
 * bind-to-socket).
 *
 *   auto  (default) whole mask: rank i of n gets the CPUs i*c/n up to
 *         (i+1)*c/n of its c (uneven splits use every CPU), in CPU order
 *         with SMT siblings together; ranks outnumber them: CPU i mod c.
 *         A narrower mask is kept.
 *   cores as auto, also inside a narrower mask
 *   none  the affinity is left as it was */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/config.h>
#include <dt/log.h>
#include "cpu_bind.h"

/* "0-3,8" style text of a CPU set, for the log. */
static void set_text(const cpu_set_t *set, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && off + 16 < len; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        off += (size_t)snprintf(out + off, len - off,
                                last > c ? "%s%d-%d" : "%s%d", off ? "," : "",
                                c, last);
        c = last;
    }
}

int dt_cpu_list_parse(const char *text, cpu_set_t *set)
{
    CPU_ZERO(set);
    const char *p = text;
    while (*p && *p != '\n') {
        char *stop;
        long lo = strtol(p, &stop, 10), hi = lo;
        if (stop == p)
            return -1;
        p = stop;
        if (*p == '-') {
            hi = strtol(p + 1, &stop, 10);
            if (stop == p + 1)
                return -1;
            p = stop;
        }
        if (lo < 0 || hi < lo || hi >= CPU_SETSIZE)
            return -1;
        for (long c = lo; c <= hi; c++)
            CPU_SET((int)c, set);
        if (*p == ',')
            p++;
        else if (*p && *p != '\n')
            return -1;
    }
    return 0;
}

/* A small file's text; -1 when it cannot be read. */
static int read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return 0;
}

/* A non-empty CPU list read from a file; -1 when there is none. */
static int read_cpus(const char *path, cpu_set_t *set)
{
    char text[4096];
    if (read_text(path, text, sizeof text) != 0 ||
        dt_cpu_list_parse(text, set) != 0 || CPU_COUNT(set) < 1)
        return -1;
    return 0;
}

/* The cpuset (file) of cgroup path under mount, or of its nearest ancestor
 * that has one: a cgroup without the cpuset controller follows its parent,
 * and a container's v1 mount shows its own cgroup at the top though
 * /proc/self/cgroup names the host's path. */
static int cgroup_cpus(const char *mount, const char *path, const char *file,
                       cpu_set_t *set)
{
    char dir[PATH_MAX], name[PATH_MAX + 64];
    size_t top = strlen(mount);
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", mount, path) >= sizeof dir)
        return -1;
    for (;;) {
        size_t len = strlen(dir);
        while (len > top && dir[len - 1] == '/')
            dir[--len] = '\0';
        snprintf(name, sizeof name, "%s/%s", dir, file);
        if (read_cpus(name, set) == 0)
            return 0;
        char *slash = strrchr(dir + top, '/');
        if (!slash)
            return -1;
        *slash = '\0';
    }
}

/* Does a /proc/self/cgroup controller list ("cpu,cpuset") name cpuset? */
static int names_cpuset(const char *list, size_t len)
{
    for (size_t i = 0; i + 6 <= len; i++)
        if (strncmp(list + i, "cpuset", 6) == 0 &&
            (i == 0 || list[i - 1] == ',') &&
            (i + 6 == len || list[i + 6] == ','))
            return 1;
    return 0;
}

/* The effective cpuset of this process's cgroup, v1 or v2 (also the
 * hybrid layout's unified mount); -1 when none. */
static int cgroup_cpuset(const char *root, cpu_set_t *set)
{
    char path[PATH_MAX], v1[PATH_MAX], v2[PATH_MAX], v2h[PATH_MAX];
    char text[8192];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    snprintf(v1, sizeof v1, "%s/sys/fs/cgroup/cpuset", root);
    snprintf(v2, sizeof v2, "%s/sys/fs/cgroup", root);
    snprintf(v2h, sizeof v2h, "%s/sys/fs/cgroup/unified", root);
    if (read_text(path, text, sizeof text) != 0)
        return -1;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        /* "id:controllers:path"; v2 is "0::path". */
        char *ctl = strchr(l, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!cg)
            continue;
        if (names_cpuset(ctl + 1, (size_t)(cg - ctl - 1))) {
            if (cgroup_cpus(v1, cg + 1, "cpuset.effective_cpus", set) == 0 ||
                cgroup_cpus(v1, cg + 1, "cpuset.cpus", set) == 0)
                return 0;
        } else if (strncmp(l, "0::", 3) == 0) {
            if (cgroup_cpus(v2, cg + 1, "cpuset.cpus.effective", set) == 0 ||
                cgroup_cpus(v2h, cg + 1, "cpuset.cpus.effective", set) == 0)
                return 0;
        }
    }
    return -1;
}

/* The process may use its cgroup's cpuset, else the online CPUs. */
static void usable_cpus(const char *root, cpu_set_t *set)
{
    char path[PATH_MAX];
    if (cgroup_cpuset(root, set) == 0)
        return;
    snprintf(path, sizeof path, "%s/sys/devices/system/cpu/online", root);
    if (read_cpus(path, set) == 0)
        return;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CPU_ZERO(set);
    for (long c = 0; c < online && c < CPU_SETSIZE; c++)
        CPU_SET((int)c, set);
}

void dt_cpu_allowed(const char *root, cpu_set_t *allowed)
{
    char path[PATH_MAX];
    cpu_set_t isolated;
    usable_cpus(root, allowed);
    /* isolcpus= CPUs are in no default affinity: a mask without them was
     * narrowed by nobody. */
    snprintf(path, sizeof path, "%s/sys/devices/system/cpu/isolated", root);
    if (read_cpus(path, &isolated) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &isolated))
                CPU_CLR(c, allowed);
}

void dt_cpu_cores(const char *root, const cpu_set_t *given, int *core)
{
    char path[PATH_MAX];
    for (int c = 0; c < CPU_SETSIZE; c++) {
        cpu_set_t sib;
        core[c] = c;
        if (!CPU_ISSET(c, given))
            continue;
        snprintf(path, sizeof path,
                 "%s/sys/devices/system/cpu/cpu%d/topology/"
                 "thread_siblings_list",
                 root, c);
        if (read_cpus(path, &sib) != 0)
            continue;
        for (int s = 0; s < c; s++)
            if (CPU_ISSET(s, &sib)) {
                core[c] = s;
                break;
            }
    }
}

/* The CPUs of given in the order shares are cut from: ascending, each
 * followed by its SMT siblings, so a share holds whole cores (Intel numbers
 * siblings i and i + cores: plain order would put two ranks on the same
 * cores). */
static void cpu_order(const cpu_set_t *given, const int *core, int *order)
{
    int n = 0;
    cpu_set_t placed;
    CPU_ZERO(&placed);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, given) || CPU_ISSET(c, &placed))
            continue;
        for (int d = c; d < CPU_SETSIZE; d++)
            if (CPU_ISSET(d, given) && !CPU_ISSET(d, &placed) &&
                (d == c || (core && core[d] == core[c]))) {
                CPU_SET(d, &placed);
                order[n++] = d;
            }
    }
}

/* Someone narrowed the mask for this rank when it lacks a CPU the process
 * may use; a mask holding them all is shared by every rank of the host. */
static int narrowed(const cpu_set_t *given, const cpu_set_t *allowed)
{
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, allowed) && !CPU_ISSET(c, given))
            return 1;
    return 0;
}

dt_status_t dt_cpu_bind_plan(const cpu_set_t *given, const cpu_set_t *allowed,
                             const int *core, const char *mode, int local_rank,
                             int local_size, cpu_set_t *out, int *changed)
{
    *changed = 0;
    int ncpu = CPU_COUNT(given);
    if (strcmp(mode, "none") == 0 || local_size < 2 || ncpu < 1 ||
        local_rank < 0 || local_rank >= local_size)
        return DT_OK;
    /* A launcher's mask is this rank's alone: splitting it again would
     * leave all but a local_size-th of it idle. */
    if (strcmp(mode, "auto") == 0 && narrowed(given, allowed))
        return DT_OK;
    /* The [first, end) indices (in cpu_order) of this rank's share; the
     * bounds round down, so the remainder is spread, never left idle. */
    long first = (long)local_rank * ncpu / local_size;
    long end = (long)(local_rank + 1) * ncpu / local_size;
    if (local_size > ncpu) {
        first = local_rank % ncpu;
        end = first + 1;
    }
    int order[CPU_SETSIZE];
    cpu_order(given, core, order);
    CPU_ZERO(out);
    for (long i = first; i < end; i++)
        CPU_SET(order[i], out);
    *changed = !CPU_EQUAL(out, given);
    return DT_OK;
}

dt_status_t dt_cpu_bind(const dt_config_t *cfg, int local_rank,
                        int local_size)
{
    const char *mode = "auto";
    DT_CHECK(dt_config_get_string(cfg, "cluster", "bind", &mode));
    if (strcmp(mode, "auto") && strcmp(mode, "cores") && strcmp(mode, "none")) {
        const char *where = "default";
        dt_config_source_t src;
        dt_config_origin(cfg, "cluster", "bind", &src, &where);
        dt_error("%s: [cluster] bind = '%s': use auto, cores or none", where,
                 mode);
        return DT_ERR_CONFIG;
    }
    if (strcmp(mode, "none") == 0 || local_size < 2)
        return DT_OK; /* spare the sysfs reads below */
    cpu_set_t given, mine;
    if (sched_getaffinity(0, sizeof given, &given) != 0) {
        dt_warn("local rank %d: cannot read the CPU affinity (%s); running "
                "unbound",
                local_rank, strerror(errno));
        return DT_OK;
    }
    int changed = 0;
    cpu_set_t allowed;
    int core[CPU_SETSIZE];
    dt_cpu_allowed("", &allowed);
    dt_cpu_cores("", &given, core);
    DT_CHECK(dt_cpu_bind_plan(&given, &allowed, core, mode, local_rank,
                              local_size, &mine, &changed));
    char text[256];
    if (!changed) {
        if (strcmp(mode, "auto") == 0 && local_size > 1 &&
            narrowed(&given, &allowed)) {
            set_text(&given, text, sizeof text);
            dt_debug("local rank %d of %d keeps CPUs %s: a launcher or "
                     "scheduler bound it to fewer than the process may use "
                     "([cluster] bind = cores splits them anyway)",
                     local_rank, local_size, text);
        }
        return DT_OK;
    }
    set_text(&mine, text, sizeof text);
    if (sched_setaffinity(0, sizeof mine, &mine) != 0) {
        dt_warn("local rank %d: cannot bind to CPUs %s (%s); running unbound "
                "([cluster] bind = none silences this)",
                local_rank, text, strerror(errno));
        return DT_OK;
    }
    dt_debug("local rank %d of %d bound to CPUs %s ([cluster] bind = %s)",
             local_rank, local_size, text, mode);
    return DT_OK;
}
