/* oom_counts.h — the kernel's counts of out-of-memory kills that tell
 * whether a worker's SIGKILL was the OOM killer's: its memory cgroup's
 * (sure, for workers in dtctl's cgroup), those of the cgroups above it
 * (a kill there, not in the worker's own: possibly the worker's, had it
 * moved to another cgroup) and this machine's (any process). */
#ifndef DT_CLI_OOM_COUNTS_H
#define DT_CLI_OOM_COUNTS_H

#include <stddef.h>

#define OOM_ABOVE_MAX 16 /* enclosing cgroups read, nearest first */

typedef struct oom_counts {
    long long host;        /* /proc/vmstat oom_kill; -1: unreadable      */
    long long cgroup;      /* the cgroup's oom_kill, with those below it
                              (v1 counts each cgroup's own: summed); -1:
                              none known                                 */
    char cgroup_file[512]; /* where that count was read ("" when none)    */
    int v1;                /* cgroup v1: cgroup sums the cgroups below    */
    int above_n;           /* cgroups above it read (not the root)       */
    long long above[OOM_ABOVE_MAX]; /* their counts, each with the cgroups
                                       below it; -1: unreadable          */
} oom_counts_t;

/* Every count now. The cgroup's only when in_my_cgroup (the local
 * launcher: its workers are dtctl's children, in dtctl's cgroup): read
 * from cgroup v2's memory.events (which counts the cgroups below too) or
 * v1's memory.oom_control (summed over the cgroups below: a worker that
 * moved into a cgroup of its own under dtctl's is counted there; each
 * file read once, the enclosing cgroups' sums built on it). A worker
 * that shares dtctl's cgroup shares its count too: still far closer than
 * the host's. dtctl in the hierarchy's root: no cgroup count (the root's
 * is every process's, as /proc/vmstat's). Test hooks: DT_TEST_OOM_VMSTAT and
 * DT_TEST_OOM_CGROUP_EVENTS name files read instead of /proc/vmstat and
 * the cgroup's file (then no cgroup above it is read). */
void oom_counts_read(oom_counts_t *c, int in_my_cgroup);

/* The same counts again, from the files `at_start` found. */
void oom_counts_again(const oom_counts_t *at_start, oom_counts_t *now);

/* The directory of the cgroup c->above[i] counts, into out. */
void oom_counts_above_dir(const oom_counts_t *c, int i, char *out,
                          size_t len);

#endif
