/* child.h — what a forked child does before exec, shared by spawn.c,
 * ../jobdir/proc.c and plugins/storage/rsync/rsync_proc.c. Header-only
 * (static inline): plugins link both libraries, which must not define the
 * same symbols. Async-signal-safe calls only (dtctl has threads). */
#ifndef DT_LAUNCHER_SPAWN_CHILD_H
#define DT_LAUNCHER_SPAWN_CHILD_H

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Default handling for every signal and an empty mask: ignored signals
 * and blocked masks would survive exec. */
static inline void spawn_child_reset_signals(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        sigaction(s, &dfl, NULL); /* fails harmlessly for KILL, STOP */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* signo (0: none) reaches the child when dtctl dies, even by SIGKILL, so
 * a scheduler client (qsub -sync y) stops its job instead of running on
 * unwatched. The kernel sends it when the *thread* that forked ends, and
 * again at each further parent (dtctl's other threads, as they exit):
 * for clients that take a repeated signal as the first (qsub, qdel, qrsh;
 * ../jobdir/proc.c). mpirun does not: spawn_start sends its death signal
 * once, through a guard (guard.c). `parent` is getpid() before fork: if
 * dtctl died before prctl, nobody would send the signal, so the child
 * sends it to itself. Call after spawn_child_reset_signals. */
static inline void spawn_child_die_with_parent(int signo, pid_t parent)
{
    if (signo <= 0)
        return;
    prctl(PR_SET_PDEATHSIG, signo, 0, 0, 0);
    if (getppid() != parent)
        raise(signo);
}

#endif /* DT_LAUNCHER_SPAWN_CHILD_H */
