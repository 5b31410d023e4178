/* jobdir.h — helpers shared by the launchers that hand a job to a
 * scheduler (sge, yarn) and learn about its workers through a private job
 * directory that the submit host and the execution hosts both see:
 *
 *   DIR/hosts       "RANK HOST" lines, written once the ranks are placed
 *   DIR/out.R       stdout of rank R, appended as the worker writes
 *   DIR/err.R       stderr of rank R
 *   DIR/exit.R      the exit code of rank R (written last, by rename)
 *
 * dtctl tails these files (the scheduler owns the processes), so output
 * is forwarded per rank and each exit is reported once, with its host.
 * Also here: a tiny string builder with POSIX shell quoting, child
 * processes in their own process group that end with dtctl, and the
 * settings these launchers read alike. */
#ifndef DT_LAUNCHER_JOBDIR_H
#define DT_LAUNCHER_JOBDIR_H

#include <stddef.h>
#include <sys/types.h>
#include <dt/plugin.h>
#include <dt/clock.h>
#include <dt/config.h>

/* ---- strings ------------------------------------------------------------ */
typedef struct strbuf {
    char *s;
    size_t len, cap;
    int oom; /* an append failed: the text is incomplete */
} strbuf_t;

void sb_add(strbuf_t *b, const char *text);
void sb_addn(strbuf_t *b, const char *text, size_t n);
void sb_addf(strbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* text as one POSIX shell word: '...' with ' written as '\'' */
void sb_quote(strbuf_t *b, const char *text);
/* DT_OK, or DT_ERR_NOMEM when any append failed. */
dt_status_t sb_status(const strbuf_t *b);
void sb_free(strbuf_t *b);

/* ---- settings (conf.c) ------------------------------------------------- */
/* [section] key, a duration, in milliseconds (at least 1); DT_ERR_CONFIG,
 * logged, outside 1ms..24h. */
dt_status_t jobdir_conf_ms(const dt_config_t *cfg, const char *section,
                           const char *key, int *ms);
/* The user's home directory ($HOME, else the passwd entry's), where the
 * default shared_dir goes; NULL when there is none. */
const char *jobdir_home(void);

/* ---- the job directory ---------------------------------------------------- */
/* Create PARENT (mode 0700 if missing) and PARENT/NAME (mode 0700, must
 * not exist), owned by us and not a symbolic link. *path is malloc'd. */
dt_status_t jobdir_create(const char *parent, const char *name, char **path);
/* Write DIR/NAME with `mode`; the file must not exist. */
dt_status_t jobdir_write(const char *dir, const char *name, const char *data,
                         size_t len, mode_t mode);
/* Remove DIR and everything in it (best effort, logged at debug). */
void jobdir_remove(const char *dir);

/* ---- watching the ranks --------------------------------------------------- */
typedef struct jobdir_rank {
    off_t off[2];     /* bytes of out.R / err.R already forwarded    */
    char *host;       /* from DIR/hosts; NULL until known            */
    int exited;       /* DIR/exit.R was read                         */
    int code;         /* its content                                  */
    long long exit_ns; /* when it was written (its mtime): the order the
                          ranks ended in, reported first to last      */
    int lost;         /* the job ended without an exit file           */
    int reported;
} jobdir_rank_t;

typedef struct jobdir_mon {
    char *dir;
    int np;
    jobdir_rank_t *ranks;
    int hosts_known;
    char *fallback_host; /* for ranks whose host never became known */
    dt_output_fn output;
    void *output_arg;
    char *buf;
    size_t buf_len;
} jobdir_mon_t;

dt_status_t jobdir_mon_init(jobdir_mon_t *m, const char *dir, int np,
                            const char *fallback_host, dt_output_fn output,
                            void *arg);
/* Read DIR/hosts once it exists (returns 1 on the call that found it,
 * without reading more), then forward new output of every rank and
 * notice new exit files. Cheap when nothing changed. */
int jobdir_mon_poll(jobdir_mon_t *m);
/* The job is over: forward what is left; ranks without an exit file were
 * killed by the scheduler (reported as SIGKILL). */
void jobdir_mon_finish(jobdir_mon_t *m);
/* 1: *ev is the next exit not yet reported, the earliest written first
 * (a poll that finds the failing rank's exit and those of the ranks then
 * stopped must name the failing one, not the lowest rank); 0: none now;
 * -1: all reported. */
int jobdir_mon_next(jobdir_mon_t *m, dt_worker_exit_t *ev);
/* Ranks the hosts file named; 0 until it appeared. */
int jobdir_mon_started(const jobdir_mon_t *m);
void jobdir_mon_free(jobdir_mon_t *m);

/* ---- child processes ------------------------------------------------------ */
typedef struct proc {
    pid_t pid;       /* also its process group; 0 when none            */
    int out_fd;      /* non-blocking read end of its stdout, or -1     */
    int err_fd;      /* ... of its stderr, or -1                       */
} proc_t;

/* Start argv (looked up on PATH) with envp (NULL: ours), stdin from
 * /dev/null, stdout/stderr into pipes, in a process group of its own (a
 * Ctrl-C at the terminal reaches dtctl, which decides); it gets SIGTERM
 * if dtctl dies (proc_run's children too). tty: stdout is a
 * pseudo-terminal instead, so a program that buffers its stdio output in
 * a pipe (qsub does) writes each line at once. */
dt_status_t proc_start(const char *const *argv, char *const *envp, int tty,
                       proc_t *p);
/* Read what a pipe holds now into *b (at most `max` bytes kept).
 * Returns 0 at EOF (the fd is closed and set to -1), 1 otherwise. */
int proc_read(int *fd, strbuf_t *b, size_t max);
/* waitpid: 1 and *status once it ended, 0 while it runs. */
int proc_reaped(proc_t *p, int *status, int block);
/* Run argv to the end (at most timeout_ms, then SIGKILL), stdout and
 * stderr together into *output (malloc'd). *code: exit code or 128+S. */
dt_status_t proc_run(const char *const *argv, char *const *envp,
                     int timeout_ms, char **output, int *code);
/* Our environment without DT_JOB_TOKEN (malloc'd array of pointers into
 * environ; free the array only). */
char **proc_env_without_token(void);
/* Milliseconds of CLOCK_MONOTONIC. */

#endif /* DT_LAUNCHER_JOBDIR_H */
