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
 *   auto  (default) ranks fit the inherited CPUs: rank i of this host gets
 *         the i-th equal share of them; ranks outnumber them and nobody
 *         narrowed the mask (it holds every online CPU): CPU i mod n;
 *         else (a launcher bound us already) nothing changes
 *   cores as auto, and round robin also inside a narrowed mask
 *   none  the affinity is left as it was */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
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

dt_status_t dt_cpu_bind_plan(const cpu_set_t *given, int online,
                             const char *mode, int local_rank, int local_size,
                             cpu_set_t *out, int *changed)
{
    *changed = 0;
    int ncpu = CPU_COUNT(given);
    if (strcmp(mode, "none") == 0 || local_size < 2 || ncpu < 1)
        return DT_OK;
    int oversubscribed = local_size > ncpu;
    if (oversubscribed && strcmp(mode, "auto") == 0 && ncpu < online)
        return DT_OK;
    /* The first..last index (in mask order) of this rank's share. */
    int share = oversubscribed ? 1 : ncpu / local_size;
    int first = oversubscribed ? local_rank % ncpu : local_rank * share;
    CPU_ZERO(out);
    for (int c = 0, i = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, given))
            continue;
        if (i >= first && i < first + share)
            CPU_SET(c, out);
        i++;
    }
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
    cpu_set_t given, mine;
    if (sched_getaffinity(0, sizeof given, &given) != 0) {
        dt_warn("local rank %d: cannot read the CPU affinity (%s); running "
                "unbound",
                local_rank, strerror(errno));
        return DT_OK;
    }
    int changed = 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    DT_CHECK(dt_cpu_bind_plan(&given, online > 0 ? (int)online : 1, mode,
                              local_rank, local_size, &mine, &changed));
    if (!changed)
        return DT_OK;
    char text[256];
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
