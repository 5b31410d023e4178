/* guard.c — a front-end's parent-death signal, delivered once.
 *
 * PR_SET_PDEATHSIG on the front-end itself is not enough: the kernel
 * sends the signal each time the child passes to another parent, and
 * while a killed dtctl's threads exit one by one the child passes from
 * thread to thread before it reaches init, so it can get SIGTERM twice.
 * mpirun takes a second SIGTERM as "abort at once" and leaves its ranks
 * running. So a small guard process (forked, no exec) takes the
 * parent-death signals instead: only once its parent *process* is gone
 * (getppid() changed; a thread of dtctl that ends changes nothing) does it
 * send the front-end one signal, through a pidfd where the kernel has them
 * (no pid reuse), and exit. Async-signal-safe calls only in the guard
 * (dtctl has threads). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"

/* Only fd `keep` stays open: a guard holding dtctl's sockets and pipes
 * would keep their peers from seeing them close. */
static void close_all_but(int keep, long maxfd)
{
#ifdef SYS_close_range
    if ((keep <= 0 || syscall(SYS_close_range, 0U, (unsigned)keep - 1, 0) ==
                          0) &&
        syscall(SYS_close_range, (unsigned)(keep < 0 ? 0 : keep + 1), ~0U,
                0) == 0)
        return;
#endif
    for (long fd = 0; fd < maxfd; fd++)
        if (fd != keep)
            close((int)fd);
}

static void guard_main(pid_t parent, pid_t child, int pidfd, int signo,
                       long maxfd)
{
    prctl(PR_SET_NAME, "dt-guard", 0, 0, 0);
    setpgid(0, 0); /* a Ctrl-C at the terminal is for dtctl, not for us */
    close_all_but(pidfd, maxfd);
    /* every signal is blocked (spawn_start forks with all blocked) */
    sigset_t death;
    sigemptyset(&death);
    sigaddset(&death, SIGTERM);
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    siginfo_t si;
    while (getppid() == parent) /* else dtctl died, perhaps before prctl */
        sigwaitinfo(&death, &si);
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0) {
        syscall(SYS_pidfd_send_signal, pidfd, signo, NULL, 0);
        _exit(0);
    }
#endif
    kill(child, signo);
    _exit(0);
}

/* The descriptors a guard closes (all it inherited), bounded. */
static long guard_max_fd(void)
{
    long maxfd = sysconf(_SC_OPEN_MAX);
    return maxfd < 0 || maxfd > 1 << 20 ? 1 << 20 : maxfd;
}

pid_t spawn_guard_start(pid_t child, int signo)
{
    long maxfd = guard_max_fd();
    int pidfd = -1;
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, child, 0);
#endif
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t self = getpid();
    pid_t guard = fork();
    if (guard == 0)
        guard_main(self, child, pidfd, signo, maxfd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pidfd >= 0)
        close(pidfd);
    return guard > 0 ? guard : 0;
}

/* The group guard: wait as guard_main does, then stop the whole group.
 * It is a member itself, so the group's number stays ours until the
 * SIGKILL (which ends the guard too): neither signal can reach a stranger
 * that took a freed number. Its own SIGTERM stays blocked. */
static void group_guard_main(pid_t parent, pid_t pgid, double grace,
                             long maxfd)
{
    prctl(PR_SET_NAME, "dt-guard", 0, 0, 0);
    setpgid(0, pgid); /* spawn_group_guard_start does it too: either wins */
    close_all_but(-1, maxfd);
    sigset_t death;
    sigemptyset(&death);
    sigaddset(&death, SIGTERM);
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    siginfo_t si;
    while (getppid() == parent)
        sigwaitinfo(&death, &si); /* a SIGTERM for the group is not ours */
    kill(-pgid, SIGTERM);
    struct timespec ts = {(time_t)grace,
                          (long)((grace - (double)(time_t)grace) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    kill(-pgid, SIGKILL);
    _exit(0);
}

pid_t spawn_group_guard_start(pid_t pgid, double grace)
{
    long maxfd = guard_max_fd();
    if (grace < 0)
        grace = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t self = getpid();
    pid_t guard = fork();
    if (guard == 0)
        group_guard_main(self, pgid, grace, maxfd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (guard < 0)
        return 0;
    /* Here too, before anyone reaps the leader: while it is unreaped the
     * group exists, so joining cannot fail but for a bug. */
    if (setpgid(guard, pgid) != 0 && getpgid(guard) != pgid) {
        spawn_guard_stop(&guard);
        return 0;
    }
    return guard;
}

void spawn_guard_stop(pid_t *guard)
{
    if (*guard <= 0)
        return;
    kill(*guard, SIGKILL);
    while (waitpid(*guard, NULL, 0) < 0 && errno == EINTR)
        ;
    *guard = 0;
}
