/* oom_counts.c — out-of-memory kill counts, host and cgroup (oom_counts.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oom_counts.h"

/* The "oom_kill N" line of /proc/vmstat, memory.events (v2) and
 * memory.oom_control (v1) alike; -1 when the file or line is missing.
 * ("oom_kill_disable 0" and "oom_group_kill 0" do not match.) */
static long long read_oom_kill(const char *file)
{
    FILE *f = fopen(file, "r");
    char line[256];
    long long n = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "oom_kill %lld", &n) == 1)
            break;
    fclose(f);
    return n;
}

static const char *host_file(void)
{
    const char *t = getenv("DT_TEST_OOM_VMSTAT");
    return t && *t ? t : "/proc/vmstat";
}

/* /proc/self/cgroup's line for v2 ("0::/path") or v1's memory controller
 * ("4:memory:/path", or memory among others "4:cpu,memory:/path") ->
 * the file under /sys/fs/cgroup with that cgroup's oom_kill. A v2 line
 * whose memory.events is missing (a hybrid host, the root cgroup) leaves
 * the v1 line to try. 0: found and readable. */
static int find_cgroup_file(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024], v1[1024] = "", v2[1024] = "";
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (strcmp(line, "0") == 0 && *ctrls == '\0') {
            snprintf(v2, sizeof v2, "%s", path);
            continue;
        }
        char list[512];
        snprintf(list, sizeof list, ",%s,", ctrls);
        if (strstr(list, ",memory,"))
            snprintf(v1, sizeof v1, "%s", path);
    }
    fclose(f);
    int w = -1;
    if (*v2) {
        w = snprintf(out, len, "/sys/fs/cgroup%s/memory.events",
                     strcmp(v2, "/") == 0 ? "" : v2);
        if (w > 0 && (size_t)w < len && read_oom_kill(out) >= 0)
            return 0;
    }
    if (*v1) {
        w = snprintf(out, len, "/sys/fs/cgroup/memory%s/memory.oom_control",
                     strcmp(v1, "/") == 0 ? "" : v1);
        if (w > 0 && (size_t)w < len && read_oom_kill(out) >= 0)
            return 0;
    }
    return -1;
}

void oom_counts_read(oom_counts_t *c, int in_my_cgroup)
{
    const char *t = getenv("DT_TEST_OOM_CGROUP_EVENTS");
    c->host = read_oom_kill(host_file());
    c->cgroup = -1;
    c->cgroup_file[0] = '\0';
    if (!in_my_cgroup)
        return;
    if (t && *t)
        snprintf(c->cgroup_file, sizeof c->cgroup_file, "%s", t);
    else if (find_cgroup_file(c->cgroup_file, sizeof c->cgroup_file) != 0)
        c->cgroup_file[0] = '\0';
    if (c->cgroup_file[0])
        c->cgroup = read_oom_kill(c->cgroup_file);
}

void oom_counts_again(const oom_counts_t *at_start, oom_counts_t *now)
{
    now->host = read_oom_kill(host_file());
    snprintf(now->cgroup_file, sizeof now->cgroup_file, "%s",
             at_start->cgroup_file);
    now->cgroup = now->cgroup_file[0] ? read_oom_kill(now->cgroup_file) : -1;
}
