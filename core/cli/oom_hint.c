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

/* v1 counts are summed over the cgroups below (oom_counts.c). */
static const char *below(const oom_counts_t *c)
{
    return c->v1 ? " and the cgroups below it" : "";
}

/* No kill in the worker's cgroup, but in one that holds it (a worker that
 * moved to another cgroup there is counted there, not in its first): 1
 * when said. */
static int by_cgroup_above(const char *who, const oom_counts_t *s,
                           const oom_counts_t *n)
{
    for (int i = 0; i < s->above_n && i < n->above_n; i++) {
        if (s->above[i] < 0 || n->above[i] <= s->above[i])
            continue;
        long long kills = n->above[i] - s->above[i];
        char dir[sizeof s->cgroup_file];
        oom_counts_above_dir(s, i, dir, sizeof dir);
        dt_error("possibly the kernel's out-of-memory killer: it killed "
                 "%lld process%s during the job in the memory cgroup %s "
                 "(oom_kill %lld -> %lld, with the cgroups below it), which "
                 "holds that of %s, though none in that one (oom_kill "
                 "stayed %lld in %s%s): it was %s if the worker had moved "
                 "to another cgroup in %s (`dmesg | grep -i 'killed "
                 "process'` on this machine names the process); if memory "
                 "ran out: %s",
                 kills, plural(kills), dir, s->above[i], n->above[i], who,
                 s->cgroup, s->cgroup_file, below(s), who, dir, help);
        return 1;
    }
    return 0;
}

/* The worker's cgroup count is known: the OOM killer did it, possibly
 * did it (a kill above that cgroup, or elsewhere on this machine: the
 * worker may have moved), or did not (no kill on this machine at all). */
static void by_cgroup(const char *who, const oom_counts_t *s,
                      const oom_counts_t *n)
{
    long long kills = n->cgroup - s->cgroup;
    if (kills > 0) {
        dt_error("the kernel's out-of-memory killer killed %lld process%s "
                 "in the memory cgroup of %s during the job (oom_kill "
                 "%lld -> %lld in %s%s): it most likely ran out of memory; "
                 "%s",
                 kills, plural(kills), who, s->cgroup, n->cgroup,
                 s->cgroup_file, below(s), help);
        return;
    }
    if (by_cgroup_above(who, s, n))
        return;
    if (s->host >= 0 && n->host > s->host)
        dt_warn("possibly the kernel's out-of-memory killer: an "
                "out-of-memory kill happened on this machine during the job "
                "(/proc/vmstat oom_kill %lld -> %lld), though not in the "
                "memory cgroup of %s (oom_kill stayed %lld in %s%s) nor in "
                "those holding it: it was %s only if the worker had moved "
                "to another cgroup (`dmesg | grep -i 'killed process'` names "
                "the process); else someone or something (a scheduler, a "
                "watchdog) ran kill -9",
                s->host, n->host, who, s->cgroup, s->cgroup_file, below(s),
                who);
    else if (s->host < 0 || n->host < 0)
        dt_info("dtctl did not send that SIGKILL, and the kernel's "
                "out-of-memory killer killed nothing in the memory cgroup "
                "of %s (oom_kill stayed %lld in %s%s); this machine's count "
                "is unreadable: possibly the out-of-memory killer, had the "
                "worker moved to another cgroup (`dmesg | grep -i 'killed "
                "process'` says), or someone or something (a scheduler, a "
                "watchdog) ran kill -9",
                who, s->cgroup, s->cgroup_file, below(s));
    else
        dt_info("dtctl did not send that SIGKILL, nor did the kernel's "
                "out-of-memory killer (oom_kill stayed %lld in %s, the "
                "memory cgroup of %s, and %lld on this machine): someone or "
                "something (a scheduler, a watchdog) ran kill -9",
                s->cgroup, s->cgroup_file, who, n->host);
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
