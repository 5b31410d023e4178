/* frontend.h — run a scheduler's front-end process (mpirun, srun, salloc)
 * that starts every rank itself, and turn what it prints into the launcher
 * contract: per-rank output, one exit event per rank, and stop signals.
 *
 * Ranks are wrapped by a small sh prologue (prologue.h) that maps the
 * scheduler's variables to dt's and, when the worker ends, prints an exit
 * marker line "dt-exit:<nonce>:<status>:<host>" on its stderr. The
 * front-end tags every line with the rank that wrote it (mpirun
 * --tag-output, srun --label), so each marker names its rank. Markers are
 * taken out of the output; everything else reaches the output callback.
 * Lines the front-end prints itself (its own errors) go to rank -1 ("[job]")
 * and to an optional line hook that may add exit events it can parse. */
#ifndef DT_LAUNCHER_FRONTEND_H
#define DT_LAUNCHER_FRONTEND_H

#include <stddef.h>
#include <dt/plugin.h>

/* How the front-end tags worker lines. */
typedef enum frontend_tags {
    FRONTEND_TAGS_OMPI,  /* "[jobid,rank]<stdout>:" at any chunk start      */
    FRONTEND_TAGS_SLURM  /* "  rank: " at the start of each line (--label)  */
} frontend_tags_t;

typedef struct frontend frontend_t;

typedef struct frontend_args {
    const char *label;        /* "mpirun", "srun": names it in messages     */
    const char *const *argv;  /* the front-end command                      */
    char *const *envp;        /* its complete environment                   */
    const char *workdir;      /* NULL: dtctl's                              */
    int pass_stdin;           /* 1: it reads dtctl's stdin (and passes it to
                                 rank 0 itself: mpirun; srun --input=0)
                                 unless that is a terminal; 0: /dev/null   */
    frontend_tags_t tags;
    const char *nonce;        /* the exit marker's word (prologue_nonce)    */
    int np;
    dt_output_fn output;      /* NULL: worker output is dropped             */
    void *output_arg;
    /* Each untagged line the front-end printed (without '\n'); may call
     * frontend_add_exit. Returns 1 when the line was handled and is not
     * to be shown as job output. NULL: none. */
    int (*on_line)(void *arg, frontend_t *fe, int fd, const char *line);
    void *on_line_arg;
} frontend_args_t;

/* Start the front-end in its own process group. Errors are logged. */
dt_status_t frontend_start(const frontend_args_t *a, frontend_t **out);

/* The launcher's wait(): forward output, report each rank's exit once
 * (from its marker or a hook), then, once the front-end ended and nothing
 * is left to read, one event for the whole job (rank -1) when its status
 * tells more than the ranks did; finally DT_ERR_NOT_FOUND. */
dt_status_t frontend_wait(frontend_t *fe, int timeout_ms, dt_worker_exit_t *ev);

/* Queue an exit for a rank not yet reported (ignored otherwise). status is
 * a shell's $?: above 128 means killed by signal status-128. */
void frontend_add_exit(frontend_t *fe, int rank, const char *host, int status);

/* Signal the front-end process itself (it forwards to the ranks). */
void frontend_signal(frontend_t *fe, int signo);
/* A stop relayed by the ranks' prologues (prologue_script's
 * relay_stops): expect_acks before the front-end is signalled with
 * fe_signo; await_acks then reads the output until every rank still
 * running confirmed signo (SIGSTOP or SIGCONT), at most timeout_ms.
 * Returns how many did not (their ranks in missing, "0 3").
 * The last request (before any: SIGCONT, running) is the one that
 * counts: a rank that later confirms the other one (an older request
 * that reached it late: its shell was stopped or slow) is not confirmed,
 * and the front-end gets fe_signo again, whenever dtctl reads the output
 * (await_acks, frontend_wait). */
void frontend_expect_acks(frontend_t *fe, int signo, int fe_signo);
int frontend_await_acks(frontend_t *fe, int timeout_ms, char *missing,
                        size_t len);
/* How many ranks were reported with a non-zero status so far. */
int frontend_failures(const frontend_t *fe);
/* 1 while the front-end has not been reaped. */
int frontend_running(const frontend_t *fe);
/* SIGKILL the front-end's process group, reap it and its orphans, read
 * what is left of its output. */
void frontend_kill_and_reap(frontend_t *fe);
void frontend_free(frontend_t *fe);

#endif /* DT_LAUNCHER_FRONTEND_H */
