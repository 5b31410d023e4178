/* oom_hint.c — a worker's SIGKILL explained (oom_hint.h). */
#include <stdio.h>
#include <string.h>

#include <dt/hosts.h>
#include <dt/log.h>
#include "oom_hint.h"

static const char *help =
    "a smaller model or [train] batch_size, fewer workers on a host "
    "(-n, or slots in the host list), or a host with more memory";

static const char *plural(long long n)
{
    return n == 1 ? "" : "es";
}

/* The worker's cgroup count is known: the OOM killer did it or not. */
static void by_cgroup(const char *who, const oom_counts_t *s,
                      const oom_counts_t *n)
{
    long long kills = n->cgroup - s->cgroup;
    if (kills > 0) {
        dt_error("the kernel's out-of-memory killer killed %lld process%s "
                 "in the memory cgroup of %s during the job (oom_kill "
                 "%lld -> %lld in %s): it most likely ran out of memory; %s",
                 kills, plural(kills), who, s->cgroup, n->cgroup,
                 s->cgroup_file, help);
        return;
    }
    if (s->host >= 0 && n->host > s->host)
        dt_info("an out-of-memory kill happened on this machine during the "
                "job (/proc/vmstat oom_kill %lld -> %lld), but not in the "
                "memory cgroup of %s (oom_kill stayed %lld in %s): not what "
                "killed it; dtctl did not send that SIGKILL either: "
                "someone or something (a scheduler, a watchdog) ran kill -9",
                s->host, n->host, who, s->cgroup, s->cgroup_file);
    else
        dt_info("dtctl did not send that SIGKILL, nor did the kernel's "
                "out-of-memory killer (oom_kill stayed %lld in %s, the "
                "memory cgroup of %s): someone or something (a scheduler, "
                "a watchdog) ran kill -9",
                s->cgroup, s->cgroup_file, who);
}

void oom_hint(const char *who, const char *host,
              const oom_counts_t *at_start)
{
    int here = dt_host_is_local(host);
    oom_counts_t now;
    oom_counts_again(at_start, &now);
    if (here && at_start->cgroup >= 0 && now.cgroup >= 0) {
        by_cgroup(who, at_start, &now);
    } else if (here && at_start->host >= 0 && now.host > at_start->host) {
        long long kills = now.host - at_start->host;
        dt_error("an out-of-memory kill happened on this machine during "
                 "the job: the kernel's out-of-memory killer killed %lld "
                 "process%s (/proc/vmstat oom_kill %lld -> %lld; whose, "
                 "dtctl cannot tell: it reads no memory cgroup of the "
                 "worker's): %s probably ran out of memory; %s",
                 kills, plural(kills), at_start->host, now.host, who, help);
    } else {
        dt_info("dtctl did not send that SIGKILL: the kernel's "
                "out-of-memory killer does (`dmesg | grep -i 'out of "
                "memory'` on %s says), or someone ran kill -9; if memory "
                "ran out: %s", host, help);
    }
}
