/* preempt.h — SIGTERM and SIGUSR1 to a trainer worker ask for a
 * checkpoint and a resumable exit instead of an immediate death (what
 * Slurm's --signal, SGE's -notify, a spot-instance notice or dtctl
 * forwarding its own SIGTERM send).
 *
 * The handler only records the request; the training loop carries it in
 * the per-step vote (train_guard.c), so every rank sees it at the same
 * step, writes the checkpoint and exits with DT_TRAIN_EXIT_PREEMPTED
 * (dt/train.h: 75, EX_TEMPFAIL of sysexits.h, "try again later"). A rank
 * that cannot reach the vote (a peer died or hangs, so the collective never
 * completes) must not linger: the request arms a watchdog of `grace`
 * milliseconds, after which the worker dies by the signal it got, as it
 * did before preemption existed. The vote's agreement disarms it. */
#ifndef DT_TRAIN_PREEMPT_H
#define DT_TRAIN_PREEMPT_H

#include <stdbool.h>

/* Install the handlers (SA_RESTART), replacing the default action. */
void dt_preempt_install(void);
/* Back to the previous actions; the watchdog is disarmed. */
void dt_preempt_restore(void);
/* The signal that asked for preemption, 0 when none did. */
int dt_preempt_requested(void);
/* Every rank agreed: disarm the watchdog (writing may take longer). */
void dt_preempt_agreed(void);
/* How long a request may wait for the vote before the worker dies. */
void dt_preempt_set_grace_ms(long ms);
/* on: this rank does its own long work between votes (an evaluation, a
 * checkpoint write), which no grace measured on steps covers: a request
 * meanwhile waits without the watchdog (a first evaluation of 10 s after
 * 2 s of grace killed the worker, no checkpoint). off: a pending request
 * gets its grace from now. (A peer that dies meanwhile is still found by
 * the transports' timeouts.) */
void dt_preempt_busy(bool on);

#endif /* DT_TRAIN_PREEMPT_H */
