/* oom_counts.h — the kernel's counts of out-of-memory kills that tell
 * whether a worker's SIGKILL was the OOM killer's: its memory cgroup's
 * (sure, for workers in dtctl's cgroup) and this machine's (any process). */
#ifndef DT_CLI_OOM_COUNTS_H
#define DT_CLI_OOM_COUNTS_H

typedef struct oom_counts {
    long long host;        /* /proc/vmstat oom_kill; -1: unreadable      */
    long long cgroup;      /* the cgroup's oom_kill; -1: none known       */
    char cgroup_file[512]; /* where that count was read ("" when none)    */
} oom_counts_t;

/* Both counts now. The cgroup's only when in_my_cgroup (the local
 * launcher: its workers are dtctl's children, in dtctl's cgroup): read
 * from cgroup v2's memory.events or v1's memory.oom_control. A worker
 * that shares dtctl's cgroup shares its count too: still far closer than
 * the host's. Test hooks: DT_TEST_OOM_VMSTAT and DT_TEST_OOM_CGROUP_EVENTS
 * name files read instead of /proc/vmstat and the cgroup's file. */
void oom_counts_read(oom_counts_t *c, int in_my_cgroup);

/* The same counts again, from the files `at_start` found. */
void oom_counts_again(const oom_counts_t *at_start, oom_counts_t *now);

#endif
