/* oom_hint.c — a worker's SIGKILL explained (oom_hint.h). */
#include <stdio.h>
#include <string.h>

#include <dt/hosts.h>
#include <dt/log.h>
#include "oom_hint.h"

long long oom_kills_now(void)
{
    FILE *f = fopen("/proc/vmstat", "r");
    char line[128];
    long long n = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "oom_kill %lld", &n) == 1)
            break;
    fclose(f);
    return n;
}

void oom_hint(const char *who, const char *host, long long kills_at_start)
{
    static const char *help =
        "a smaller model or [train] batch_size, fewer workers on a host "
        "(-n, or slots in the host list), or a host with more memory";
    long long now = dt_host_is_local(host) ? oom_kills_now() : -1;
    if (kills_at_start >= 0 && now > kills_at_start)
        dt_error("the kernel's out-of-memory killer killed %lld process%s "
                 "on this machine during the job (/proc/vmstat oom_kill "
                 "%lld -> %lld): %s most likely ran out of memory; %s",
                 now - kills_at_start, now - kills_at_start == 1 ? "" : "es",
                 kills_at_start, now, who, help);
    else
        dt_info("dtctl did not send that SIGKILL: the kernel's "
                "out-of-memory killer does (`dmesg | grep -i 'out of "
                "memory'` on %s says), or someone ran kill -9; if memory "
                "ran out: %s", host, help);
}
