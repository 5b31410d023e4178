/* cpu_bind.h — [cluster] bind: pin each worker of a host to its share of
 * the CPUs it inherited (cpu_bind.c). Internal to libdt. */
#ifndef DT_CPU_BIND_H
#define DT_CPU_BIND_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>

#include <dt/config.h>
#include <dt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parse a kernel CPU list ("0-3,8\n") into *set; -1 when it is not one. */
int dt_cpu_list_parse(const char *text, cpu_set_t *set);

/* The CPUs this process may use at all: its cgroup's effective cpuset (v2
 * or v1), else the online CPUs; less isolcpus= ones. root prefixes /proc
 * and /sys: "" normally, a fake tree in the tests. */
void dt_cpu_allowed(const char *root, cpu_set_t *allowed);

/* core[c] (CPU_SETSIZE entries): the lowest SMT sibling of each CPU c of
 * given, from sysfs topology; c itself when unknown. */
void dt_cpu_cores(const char *root, const cpu_set_t *given, int *core);

/* The CPUs local rank local_rank of local_size should run on, given the
 * inherited mask, the CPUs the process may use (dt_cpu_allowed), the SMT
 * siblings (dt_cpu_cores; NULL: none) and the mode (auto, cores, none);
 * *changed = 0 when it should stay as it is. Pure: the tests check it for
 * any mask. */
dt_status_t dt_cpu_bind_plan(const cpu_set_t *given, const cpu_set_t *allowed,
                             const int *core, const char *mode, int local_rank,
                             int local_size, cpu_set_t *out, int *changed);

/* Apply [cluster] bind to the calling process. A bad mode is a config
 * error; a failed sched_setaffinity only a warning (the job still runs). */
dt_status_t dt_cpu_bind(const dt_config_t *cfg, int local_rank,
                        int local_size);

#ifdef __cplusplus
}
#endif
#endif /* DT_CPU_BIND_H */
