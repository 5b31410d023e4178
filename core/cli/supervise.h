/* supervise.h — watch a launched job until every worker ended: forward
 * output, stop everything on the first failure or on a stop signal
 * (SIGTERM to all, or SIGINT for a Ctrl-C: see interrupts; SIGKILL after
 * kill_grace), and decide dtctl's exit code. Never waits without bound. */
#ifndef DT_CLI_SUPERVISE_H
#define DT_CLI_SUPERVISE_H

#include <dt/plugin.h>
#include "crash_site.h"
#include "oom_counts.h"
#include "output_lines.h"

/* After SIGKILL, give up on workers that still do not end after this. */
#define SUPERVISE_AFTER_KILL_MS 10000

/* How long dtctl waits, after a first failure, for the failure that
 * caused it: the culprit the workers named, or (with no record) a worker
 * killed by a signal. Worker exits arrive in any order: a survivor that
 * exits 1 on a closed connection can be reported before the rank killed
 * by SIGKILL. */
#define SUPERVISE_ROOT_WAIT_MS 2000
#define SUPERVISE_SIGNAL_WAIT_MS 500
/* dtctl's exit status when the root failure is a hung worker (alive but
 * silent for the transport's timeout), as timeout(1) says it. */
#define SUPERVISE_EXIT_HUNG 124

/* dtctl's exit status when the store refused a worker of another dt
 * protocol (hosts with different dt installs): EX_CONFIG of sysexits.h,
 * like the 65 and 75 dt uses. */
#define SUPERVISE_EXIT_OTHER_DT 78

/* A worker's exit status that says "preempted, resumable": it wrote its
 * checkpoint (dt-train, on SIGTERM or SIGUSR1) and can be resumed. */
#define SUPERVISE_EXIT_PREEMPTED 75

/* The workers' record of the rank that failed first (dt/store.h). */
typedef struct supervise_culprit {
    int rank, detector;
    char how[16];    /* "exited", "hung", "error" */
    char host[256];
} supervise_culprit_t;

/* What happened, for the restart decision (run_restart.c). */
typedef struct supervise_result {
    int stop_signo;      /* the first stop signal dtctl got (0: none)     */
    int npreempted;      /* workers that exited with SUPERVISE_EXIT_PREEMPTED */
    char cause[768];     /* the root failure, as decided (the culprit the
                            workers named, else a signalled rank, else the
                            first to fail): "rank 2 on h1 was killed by
                            signal 9 (Killed)", "rank 0 on h1 hung", "rank
                            1 on h1 was killed by signal 11 (Segmentation
                            fault) in optimizer plugin 'x', in its op
                            step()" */
    int root_rank;       /* the root failure's rank (-1: none decided)   */
    char root_host[256]; /* and its host, as the launcher named it       */
    int final;           /* a restart would fail the same way            */
} supervise_result_t;

typedef struct supervise_args {
    const dt_launcher_ops_t *ops;
    void *ctx;
    output_lines_t *lines;
    double kill_grace; /* seconds from the stop (SIGTERM, SIGINT) to SIGKILL */
    /* Optional: the workers' failure record; 1 when there is one. */
    int (*culprit)(void *arg, supervise_culprit_t *out);
    void *culprit_arg;
    /* Optional: nonzero once the store refused a worker of another dt
     * (it said who, and what to do): the job stops at once, exit status
     * SUPERVISE_EXIT_OTHER_DT, whatever the workers' ends say. */
    int (*refused)(void *arg);
    void *refused_arg;
    supervise_result_t *result; /* filled in when not NULL */
    /* The workers run dt's trainer: their exit 75 is always "preempted,
     * checkpoint written". Another program's 75 means that only after
     * dtctl passed on SIGTERM or SIGUSR1; else it is the program's own
     * code (EX_TEMPFAIL), a failure like any other. */
    int trainer;
    /* Rank 0 is interactive (stdin and stdout on a terminal): its prompt
     * shows before its line ends (output_lines_show_prompt). */
    int show_prompts;
    /* ops->signal passes SIGSTOP and SIGCONT on (local, ssh, mpi,
     * slurm): Ctrl-Z stops the workers with dtctl, fg continues them.
     * Else dtctl alone stops, the workers run on, and Ctrl-Z's message
     * says so, and why: no_suspend ("the sge launcher cannot stop them:
     * ..."). */
    int suspends;
    const char *no_suspend;
    /* The user's first SIGINT (Ctrl-C) reaches the workers as SIGINT, as
     * a terminal's would, not as SIGTERM: a Python program gets its
     * KeyboardInterrupt (torchrun does the same), and a handler that
     * saves a checkpoint runs. Set for a program (not dt's trainer, whose
     * SIGTERM is a preemption) whose launcher's ops->signal delivers
     * SIGINT to the workers' process groups as it is (local, ssh). A stop
     * dtctl began itself (a failure) stays SIGTERM. */
    int interrupts;
    /* The kernel's out-of-memory kill counts from before the launch
     * (oom_counts_read): a SIGKILL dtctl did not send is checked against
     * them (oom_hint.h); read later, a worker killed at once is missed. */
    oom_counts_t oom_at_start;
    /* Optional: the plugin op each rank said it crashed in (its output
     * read as it passed): a rank killed by that signal is said to have
     * died there ("... killed by signal 11 (Segmentation fault) in
     * optimizer plugin 'x', in its op step()"). */
    const crash_sites_t *crashes;
    /* Optional (dt's trainer): 1 once every rank has reached dt_finalize
     * (the job's store says so). A rank that exits 0 after that leaves
     * the others linger seconds ([cluster] timeout) to exit too; one
     * still running then (stuck in its teardown: a stopped process, a
     * transport's fini, a file system) is named and stopped, and the job
     * keeps its success: its training ended on every rank. */
    int (*finalized)(void *arg);
    void *finalized_arg;
    double linger;
    int np; /* the ranks launched: those named when the linger is over */
} supervise_args_t;

/* dtctl's exit code: 0 when every worker succeeded; else the root
 * failure's: the exit code (128+signal for a killed worker) of the rank
 * the workers named as failed first, else of the first worker killed by a
 * signal, else of the first to fail; SUPERVISE_EXIT_HUNG when the named
 * rank hung; 128+signal when dtctl itself was told to stop, 1 when the
 * launcher failed; 75 when a worker exited with 75 (preempted: see
 * supervise_args_t.trainer) before any failure. */
int supervise_job(const supervise_args_t *a);

/* [train] mode = async: ranks from `rank` on are parameter servers, and
 * the messages naming a rank say so (-1: none). */
void supervise_set_first_server(int rank);

#endif /* DT_CLI_SUPERVISE_H */
