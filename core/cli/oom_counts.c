/* oom_counts.c — out-of-memory kill counts, host and cgroup (oom_counts.h). */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oom_counts.h"

#define CGROUP_V2_ROOT "/sys/fs/cgroup"
#define CGROUP_V1_ROOT "/sys/fs/cgroup/memory"
#define V1_FILE "memory.oom_control"
#define V2_FILE "memory.events"
/* Cgroups summed at most for one count (v1), and how deep: far beyond a
 * job's; beyond them the count is unknown rather than slow. */
#define V1_WALK_MAX 4096
#define V1_DEPTH_MAX 32

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

static const char *test_cgroup_file(void)
{
    const char *t = getenv("DT_TEST_OOM_CGROUP_EVENTS");
    return t && *t ? t : NULL;
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
        w = snprintf(out, len, CGROUP_V2_ROOT "%s/" V2_FILE,
                     strcmp(v2, "/") == 0 ? "" : v2);
        if (w > 0 && (size_t)w < len && read_oom_kill(out) >= 0)
            return 0;
    }
    if (*v1) {
        w = snprintf(out, len, CGROUP_V1_ROOT "%s/" V1_FILE,
                     strcmp(v1, "/") == 0 ? "" : v1);
        if (w > 0 && (size_t)w < len && read_oom_kill(out) >= 0)
            return 0;
    }
    return -1;
}

/* v1 counts each cgroup's own kills: the cgroup at path (len chars of a
 * PATH_MAX buffer) and every cgroup below it but `skip` (a child's name,
 * summed already; NULL: none), added to *sum. -1: its own count
 * unreadable, or too many cgroups; one below removed meanwhile counts
 * nothing. */
static int sum_v1(char *path, size_t len, const char *skip, int depth,
                  int *budget, long long *sum)
{
    if (--*budget < 0 || depth > V1_DEPTH_MAX ||
        len + sizeof "/" V1_FILE > PATH_MAX)
        return -1;
    memcpy(path + len, "/" V1_FILE, sizeof "/" V1_FILE);
    long long n = read_oom_kill(path);
    path[len] = '\0';
    if (n < 0)
        return depth == 0 ? -1 : 0;
    *sum += n;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 ||
            strcmp(e->d_name, "..") == 0 ||
            (skip && strcmp(e->d_name, skip) == 0))
            continue;
        if (len + 1 + nl >= PATH_MAX) {
            rc = -1;
            break;
        }
        path[len] = '/';
        memcpy(path + len + 1, e->d_name, nl + 1);
        rc = sum_v1(path, len + 1 + nl, NULL, depth + 1, budget, sum);
        path[len] = '\0';
    }
    closedir(d);
    return rc;
}

/* The kills in the cgroup directory dir (len chars of a PATH_MAX buffer)
 * and the cgroups below it, given `below`: the kills of its child `skip`
 * and the cgroups below that, read already (skip NULL: none). -1:
 * unknown. v2's memory.events counts those below already; v1's are
 * summed, within one budget shared by the whole tree. */
static long long kills_in(char *dir, size_t len, int v1, const char *skip,
                          long long below, int *budget)
{
    if (!v1) {
        if (len + sizeof "/" V2_FILE > PATH_MAX)
            return -1;
        memcpy(dir + len, "/" V2_FILE, sizeof "/" V2_FILE);
        long long n = read_oom_kill(dir);
        dir[len] = '\0';
        return n;
    }
    if (skip && below < 0)
        return -1;
    long long sum = skip ? below : 0;
    return sum_v1(dir, len, skip, 0, budget, &sum) == 0 ? sum : -1;
}

/* c->cgroup and c->above from c->cgroup_file's directory and those above
 * it, up to (not with) the hierarchy's root: its count is any process's,
 * which /proc/vmstat says already. Each cgroup's file is read once (v1):
 * an enclosing cgroup's sum is the one below it plus its own count and
 * its other children's (a walk per ancestor read /user.slice's thousands
 * of cgroups up to 17 times). A cgroup below removed after a kill takes
 * its count with it: the sum can fall, or stay while a kill happened
 * (oom_hint then finds no kill there and says at most "possibly"). */
static void read_tree(oom_counts_t *c)
{
    char dir[PATH_MAX];
    const char *root = c->v1 ? CGROUP_V1_ROOT : CGROUP_V2_ROOT;
    int budget = V1_WALK_MAX;
    c->above_n = 0;
    c->cgroup = -1;
    if (snprintf(dir, sizeof dir, "%s", c->cgroup_file) >= (int)sizeof dir)
        return;
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    c->cgroup = kills_in(dir, strlen(dir), c->v1, NULL, 0, &budget);
    long long below = c->cgroup;
    while (c->above_n < OOM_ABOVE_MAX && (slash = strrchr(dir, '/')) &&
           (size_t)(slash - dir) > strlen(root)) {
        char child[NAME_MAX + 1]; /* dir's tail is overwritten below */
        snprintf(child, sizeof child, "%s", slash + 1);
        *slash = '\0';
        below = kills_in(dir, strlen(dir), c->v1, child, below, &budget);
        c->above[c->above_n++] = below;
    }
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

void oom_counts_read(oom_counts_t *c, int in_my_cgroup)
{
    const char *t = test_cgroup_file();
    c->host = read_oom_kill(host_file());
    c->cgroup = -1;
    c->cgroup_file[0] = '\0';
    c->v1 = 0;
    c->above_n = 0;
    if (!in_my_cgroup)
        return;
    if (t) {
        snprintf(c->cgroup_file, sizeof c->cgroup_file, "%s", t);
        c->cgroup = read_oom_kill(c->cgroup_file);
        return;
    }
    if (find_cgroup_file(c->cgroup_file, sizeof c->cgroup_file) != 0) {
        c->cgroup_file[0] = '\0';
        return;
    }
    c->v1 = ends_with(c->cgroup_file, "/" V1_FILE);
    /* dtctl in the hierarchy's root (v1 "memory:/"): its count is every
     * process's on this machine, like /proc/vmstat's, and is said as
     * that one (hedged: whose kill, dtctl cannot tell). */
    const char *root = c->v1 ? CGROUP_V1_ROOT "/" V1_FILE
                             : CGROUP_V2_ROOT "/" V2_FILE;
    if (strcmp(c->cgroup_file, root) == 0) {
        c->cgroup_file[0] = '\0';
        return;
    }
    read_tree(c);
}

void oom_counts_again(const oom_counts_t *at_start, oom_counts_t *now)
{
    now->host = read_oom_kill(host_file());
    snprintf(now->cgroup_file, sizeof now->cgroup_file, "%s",
             at_start->cgroup_file);
    now->v1 = at_start->v1;
    now->above_n = 0;
    now->cgroup = -1;
    if (!now->cgroup_file[0])
        return;
    if (test_cgroup_file())
        now->cgroup = read_oom_kill(now->cgroup_file);
    else
        read_tree(now);
}

void oom_counts_above_dir(const oom_counts_t *c, int i, char *out,
                          size_t len)
{
    snprintf(out, len, "%s", c->cgroup_file);
    for (int cut = 0; cut <= i + 1; cut++) {
        char *slash = strrchr(out, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
}
