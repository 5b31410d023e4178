/* oom_hint.h — what dtctl says when a worker dies of a SIGKILL it did not
 * send: on Linux that is most often the kernel's out-of-memory killer (a
 * model or batch too large for the host), which a bare "killed by signal
 * 9" does not tell. */
#ifndef DT_CLI_OOM_HINT_H
#define DT_CLI_OOM_HINT_H

/* The kernel's count of out-of-memory kills on this machine
 * (/proc/vmstat oom_kill), or -1 where it cannot be read. */
long long oom_kills_now(void);

/* After `who` (e.g. "rank 0 on localhost") on `host` was killed by a
 * SIGKILL that dtctl did not send: the out-of-memory killer named when
 * this machine's count grew since `kills_at_start` and the host is this
 * one; else where to look. */
void oom_hint(const char *who, const char *host, long long kills_at_start);

#endif
