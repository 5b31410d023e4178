/* launch.c — start every rank of the job on this machine. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/hosts.h>
#include "local.h"
#include "../common/spawn/spawn.h"

extern char **environ;

/* A descriptor that becomes readable when the process ends, so wait()
 * sleeps in poll() instead of ticking. -1 where the kernel has none. */
static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -1 : (int)fd;
#else
    (void)pid;
    return -1;
#endif
}

/* Every rank must be placed on this machine. */
static dt_status_t check_hosts(const dt_launch_spec_t *spec)
{
    for (int r = 0; r < spec->np; r++) {
        size_t h = spec->placement[r].host;
        if (h >= spec->hosts->n) {
            dt_error("local launcher: rank %d is placed on host #%zu, but "
                     "the host list has only %zu hosts (a bug in dt: "
                     "please report it)",
                     r, h, spec->hosts->n);
            return DT_ERR_INTERNAL;
        }
        const char *name = spec->hosts->hosts[h].name;
        if (!dt_host_is_local(name)) {
            dt_error("local launcher: rank %d is placed on host '%s', but "
                     "the local launcher starts workers on this machine "
                     "only; use --launcher=ssh (or mpi, slurm, ...) for "
                     "other hosts, or -H localhost:N",
                     r, name);
            return DT_ERR_INVALID;
        }
    }
    return DT_OK;
}

/* When dtctl dies (SIGKILL, the OOM killer) nobody stops the job, and the
 * parent-death signal reaches the worker only: its children, and a worker
 * that ignores SIGTERM, would run on. A guard per worker, inside its
 * process group, stops the whole group: SIGTERM, SIGKILL after
 * kill_grace. One per worker rather than one per job: a member keeps the
 * group's number from being reused, so the late SIGKILL cannot hit a
 * stranger's group; a guard is a forked dtctl that only waits (shared
 * pages, no descriptors). It ends with its group: local_kill_and_reap's
 * SIGKILL, reaped with the group's members. */
static void start_guard(const local_launcher_t *L, const local_worker_t *w)
{
    if (spawn_group_guard_start(w->pid, L->kill_grace) <= 0)
        dt_warn("rank %d (pid %d): cannot start its guard (%s): if dtctl "
                "is killed, the worker's own children may run on; stop "
                "them with kill -- -%d",
                w->rank, (int)w->pid, strerror(errno), (int)w->pid);
}

static dt_status_t start_rank(local_launcher_t *L, const dt_launch_spec_t *spec,
                              int rank)
{
    local_worker_t *w = &L->workers[rank];
    char **envp = NULL;
    dt_status_t st = env_merge(environ, spec->env,
                               spec->rank_env ? spec->rank_env[rank] : NULL,
                               &envp);
    if (st != DT_OK)
        return st;
    /* SIGTERM when dtctl dies, even by SIGKILL: a local job nobody
     * watches would run on (a `--` program forever). The kernel's
     * parent-death signal on the worker covers it from exec on; the
     * group guard (start_guard) then adds its children and the SIGKILL. */
    spawn_req_t req = {spec->argv, envp, spec->workdir, spec->output != NULL,
                       0, 0, SIGTERM,
                       rank == 0 && L->relay ? SPAWN_STDIN_PIPE
                                             : SPAWN_STDIN_NULL,
                       0};
    spawn_child_t child;
    char why[1024];
    st = spawn_start(&req, &child, why, sizeof why);
    free(envp);
    if (st != DT_OK) {
        dt_error("rank %d: %s", rank, why);
        return st;
    }
    w->pid = child.pid;
    w->fds[0] = child.out_fd;
    w->fds[1] = child.err_fd;
    w->in_fd = child.in_fd;
    w->pidfd = open_pidfd(child.pid);
    start_guard(L, w);
    dt_debug("local launcher: rank %d started as pid %d", rank, (int)w->pid);
    return DT_OK;
}

dt_status_t local_launch(void *ctx, const dt_launch_spec_t *spec)
{
    local_launcher_t *L = ctx;
    if (!L || !spec || spec->np < 1 || !spec->hosts || !spec->placement ||
        !spec->argv || !spec->argv[0]) {
        dt_error("local launcher: launch needs np >= 1, hosts, a placement "
                 "and a program (a bug in dt: please report it)");
        return DT_ERR_INVALID;
    }
    if (L->launched) {
        dt_error("local launcher: this instance already launched a job");
        return DT_ERR_INVALID;
    }
    dt_status_t st = check_hosts(spec);
    if (st != DT_OK)
        return st;
    L->workers = calloc((size_t)spec->np, sizeof *L->workers);
    if (!L->workers)
        return DT_ERR_NOMEM;
    L->n = spec->np;
    L->launched = 1;
    L->output = spec->output;
    L->output_arg = spec->output_arg;
    if (spec->forward_stdin) {
        if (!(L->relay = malloc(sizeof *L->relay)))
            st = DT_ERR_NOMEM;
        else
            stdin_relay_init(L->relay, STDIN_FILENO);
    }
    for (int r = 0; r < spec->np; r++) {
        local_worker_t *w = &L->workers[r];
        w->rank = r;
        w->pidfd = w->fds[0] = w->fds[1] = w->in_fd = -1;
        w->host = strdup(spec->hosts->hosts[spec->placement[r].host].name);
        if (!w->host)
            st = DT_ERR_NOMEM;
    }
    for (int r = 0; r < spec->np && st == DT_OK; r++)
        st = start_rank(L, spec, r);
    if (st != DT_OK) {
        local_kill_and_reap(L); /* those already started */
        for (int r = 0; r < L->n; r++)
            L->workers[r].reported = 1; /* the caller learns from st */
    }
    return st;
}
