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

/* The CPUs local rank local_rank of local_size should run on, given the
 * inherited mask, the host's online CPU count and the mode (auto, cores,
 * none); *changed = 0 when it should stay as it is. Pure: the tests check
 * it for any mask. */
dt_status_t dt_cpu_bind_plan(const cpu_set_t *given, int online,
                             const char *mode, int local_rank, int local_size,
                             cpu_set_t *out, int *changed);

/* Apply [cluster] bind to the calling process. A bad mode is a config
 * error; a failed sched_setaffinity only a warning (the job still runs). */
dt_status_t dt_cpu_bind(const dt_config_t *cfg, int local_rank,
                        int local_size);

#ifdef __cplusplus
}
#endif
#endif /* DT_CPU_BIND_H */
