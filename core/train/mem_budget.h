/* mem_budget.h — how much memory this worker may still take on its host:
 * the least of the host's available memory shared by the workers on it
 * (/proc/meminfo), the address space its RLIMIT_AS leaves (ulimit -v) and
 * what its cgroup's memory limit leaves. The trainer compares its
 * estimate of a job's need with it before the large allocations
 * (train_memory_check.c). */
#ifndef DT_TRAIN_MEM_BUDGET_H
#define DT_TRAIN_MEM_BUDGET_H

#include <stddef.h>

typedef struct dt_mem_budget {
    /* The binding limit: bytes a group of `workers` processes may take
     * together (workers 1: this process alone). bytes 0 and what[0] 0:
     * nothing known, no limit to check. */
    unsigned long long bytes;
    int workers;
    enum { DT_MEM_HOST_AVAILABLE, DT_MEM_ADDRESS_SPACE, DT_MEM_CGROUP } kind;
    char what[320]; /* e.g. "MemAvailable + SwapFree (/proc/meminfo)" */
} dt_mem_budget_t;

/* MemAvailable + SwapFree in bytes from /proc/meminfo's text; -1 when
 * MemAvailable is missing (kernels before 3.14). */
int dt_mem_meminfo_available(const char *text, unsigned long long *bytes);

/* The value of `key` (a line "key value") in a memory.stat's text; -1
 * when missing. */
int dt_mem_stat_field(const char *text, const char *key,
                      unsigned long long *value);

/* The cgroup path of the memory controller in /proc/self/cgroup's text:
 * cgroup v2's "0::PATH" (*v2 = 1), else v1's "N:...memory...:PATH"
 * (*v2 = 0); -1 when neither. */
int dt_mem_cgroup_path(const char *text, char *path, size_t len, int *v2);

/* How many of the host's local_workers share this process's cgroup:
 * the processes of procs (its cgroup.procs) that run this program
 * (/proc/PID/exe), itself always counted; 1 .. local_workers. Workers in
 * cgroups of their own (YARN's containers, one pod each) do not share
 * its limit; one not started yet, or not readable, is not counted, which
 * can only make the check less strict. */
int dt_mem_cgroup_sharers(const char *procs, int local_workers);

/* Of the limits given (0: none), the one that leaves each of `workers`
 * the least, into out: host, shared by local_workers; as (RLIMIT_AS
 * room), this process's alone; cgroup (its room), shared by
 * cgroup_workers (dt_mem_cgroup_sharers). Texts for what go in the
 * *_what arguments. */
void dt_mem_budget_pick(unsigned long long host, const char *host_what,
                        unsigned long long as, const char *as_what,
                        unsigned long long cgroup, const char *cgroup_what,
                        int cgroup_workers, int local_workers,
                        dt_mem_budget_t *out);

/* This process's budget now, local_workers on this host (1 or more). */
void dt_mem_budget(int local_workers, dt_mem_budget_t *out);

#endif
