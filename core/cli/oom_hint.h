/* oom_hint.h — what dtctl says when a worker dies of a SIGKILL it did not
 * send: on Linux that is most often the kernel's out-of-memory killer (a
 * model or batch too large for the host), which a bare "killed by signal
 * 9" does not tell. How sure it is depends on the count it could read:
 * the worker's memory cgroup's (the OOM killer did kill in it), those
 * holding it and this machine's (a kill there: possibly the worker's, had
 * it moved to another cgroup; none on this machine: not the OOM killer),
 * else this machine's alone (some process was killed, maybe another's). */
#ifndef DT_CLI_OOM_HINT_H
#define DT_CLI_OOM_HINT_H

#include "oom_counts.h"

/* After `who` (e.g. "rank 0 on localhost") on `host` was killed by a
 * SIGKILL that dtctl did not send: compares the counts now with
 * `at_start` (oom_counts_read when the job started). The host's count is
 * used only when `host` is this machine. */
void oom_hint(const char *who, const char *host,
              const oom_counts_t *at_start);

#endif
