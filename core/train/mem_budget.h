/* mem_budget.h — how much memory this worker may still take on its host:
 * the least of the host's available memory shared by the workers on it
 * (/proc/meminfo), the address space its RLIMIT_AS leaves (ulimit -v) and
 * what the tightest memory limit of its cgroup and the cgroup's ancestors
 * leaves (mem_cgroup.c). The trainer measures what the host's workers
 * share before any of them allocates its model, and compares its
 * estimate of a job's need with it before the large allocations
 * (train_memory_check.c). */
#ifndef DT_TRAIN_MEM_BUDGET_H
#define DT_TRAIN_MEM_BUDGET_H

#include <stddef.h>

/* A job is refused only above its budget by this fraction: MemAvailable
 * is the kernel's own estimate, and pages allocated are not all touched
 * (the workers' check, train_memory_check.c, and dtctl check's). */
#define DT_MEM_MARGIN 0.10

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

/* A small file's text (a /proc or /sys file: its size reads as 0 or a
 * page) into buf, cut at len - 1; -1 when it cannot be read. */
int dt_mem_read_text(const char *path, char *buf, size_t len);

/* SwapFree in bytes from /proc/meminfo's text; 0 when missing. */
unsigned long long dt_mem_meminfo_swap_free(const char *text);

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

/* One level of a cgroup's hierarchy as its files say (mem_cgroup.c):
 * its memory limit (0: none), the anonymous memory charged to it and its
 * descendants, the swap it allows them (ULLONG_MAX: no limit of its own)
 * and the swap they use. */
typedef struct dt_mem_cgroup_level {
    unsigned long long limit, anon, swap_limit, swap_used;
} dt_mem_cgroup_level_t;

/* What a level leaves: its limit less its anonymous memory, plus the
 * swap it still allows, as far as the host has swap free (as the host's
 * budget counts SwapFree); 0 when the level has no limit, else at least
 * 1. */
unsigned long long dt_mem_cgroup_level_room(const dt_mem_cgroup_level_t *l,
                                            unsigned long long host_swap_free);

/* The tightest memory limit over the cgroup at root + path and each of
 * its ancestors up to root (v2: memory.max, memory.swap.max; v1:
 * memory.limit_in_bytes, memory.memsw.*, while the parent's
 * use_hierarchy is 1): the room it leaves (dt_mem_cgroup_level_room),
 * *sharers the local workers under it (the processes of its whole subtree
 * running this program, 1 .. local_workers), what names it. The level
 * whose room gives each of its sharers the least wins. 0: no limit (or
 * nothing readable: never refused on a guess). */
unsigned long long dt_mem_cgroup_room(const char *root, const char *path,
                                      int v2,
                                      unsigned long long host_swap_free,
                                      int local_workers, int *sharers,
                                      char *what, size_t len);

/* What the host's workers share, measured before any of them allocates
 * its model (a worker measuring after a neighbour allocated would count
 * that neighbour's model twice): MemAvailable + SwapFree and the tightest
 * cgroup's room. measured 0: not measured. */
typedef struct dt_mem_shared {
    int measured;
    unsigned long long host, cgroup;
    int cgroup_workers;
    char cgroup_what[320];
} dt_mem_shared_t;

/* Measure what the host's local_workers (1 or more) share now. */
void dt_mem_measure_shared(int local_workers, dt_mem_shared_t *out);

/* This process's budget: the shared limits as measured (measured now when
 * shared is NULL or was not measured), and the address space its
 * RLIMIT_AS leaves now; local_workers on this host (1 or more). */
void dt_mem_budget(const dt_mem_shared_t *shared, int local_workers,
                   dt_mem_budget_t *out);

#endif
