/* rsync_storage.h — state shared by the rsync storage plugin's files. */
#ifndef DT_STORAGE_RSYNC_H
#define DT_STORAGE_RSYNC_H

#include <pthread.h>
#include <dt/plugin.h>
#include "rsync_cmd.h"

#define SECTION "storage.rsync"

/* [storage.rsync] and the ssh settings, resolved. */
typedef struct rsync_storage {
    char *dst;              /* may hold {host}                          */
    int max_parallel;
    bool delete_extra;
    char *bwlimit;
    long timeout_s;
    long long lock_wait_ms;  /* lock_wait: another job's lock on a dst   */
    unsigned long long progress_min;
    char *rsync, *rsync_path;
    rs_ssh_t ssh;
    char *ssh_user, *ssh_known_hosts; /* owned copies behind ssh.*      */
} rsync_storage_t;

/* One host's outcome, for the summary. */
typedef struct host_result {
    int done;
    rs_stats_t stats;
    double seconds;
} host_result_t;

/* One staging run. */
typedef struct stage_run {
    rsync_storage_t *R;
    const dt_stage_request_t *req;
    unsigned long long src_bytes, src_files;
    int progress;
    host_result_t *res;          /* one per host */
    pthread_mutex_t out_mu;      /* progress lines, whole */
    char self[256];              /* this machine's name (locks)        */
    unsigned long long self_start; /* dtctl's start time, clock ticks */
} stage_run_t;

/* A lock line: two host names and a few numbers. */
#define RS_LOCK_LINE_MAX 640

/* One host's staging: its dst and the lock taken there. */
typedef struct host_job {
    stage_run_t *run;
    const dt_host_t *h;
    const char *dst;             /* {host} expanded                    */
    char lock[RS_LOCK_LINE_MAX]; /* our lock line (STG_LOCK)           */
    int locked;                  /* we hold the lock on dst            */
    int was_done;                /* dst was complete when we locked it */
    long long refreshed_ms;      /* the lock's last refresh            */
} host_job_t;

/* 1 once dtctl was asked to stop (the request's stop_requested). */
int rsync_stopped(const stage_run_t *run);

/* rsync_host.c: prepare, copy, mark one host (a stg_host_fn). */
dt_status_t rsync_one_host(void *arg, size_t i, const dt_host_t *h);

/* rsync_lock.c: the lock on a dst (STG_LOCK), one line that names its
 * holder: "job ID pid PID start TICKS on MACHINE for HOST since EPOCH".
 * A holder is gone when it ran on this machine and its process is not
 * there (pid and start time), or, from elsewhere, when the lock was not
 * refreshed for RS_LOCK_TTL_MIN minutes (a holder refreshes it every
 * RS_LOCK_REFRESH_MS while it copies). */
#define RS_LOCK_TTL_MIN 10
#define RS_STR2(x) #x
#define RS_STR(x) RS_STR2(x) /* RS_STR(RS_LOCK_TTL_MIN): "10" */
#define RS_LOCK_REFRESH_MS 60000
/* Who we are (run->self, run->self_start), once per stage. */
void rs_lock_self(stage_run_t *run);
/* Our line for j's host into j->lock. */
void rs_lock_line(host_job_t *j);
/* Why the holder of line is gone (its process not running here, or, when
 * old, not refreshed for RS_LOCK_TTL_MIN), or NULL when it may be alive. */
const char *rs_lock_gone_why(const stage_run_t *run, const char *line,
                             int old);
/* "job ID (dtctl pid P on MACHINE, staging host H, since TIME)", or "an
 * unknown job (...)" with what the lock file holds. */
void rs_lock_describe(const char *line, char *buf, size_t len);
/* Remove the lock if it still holds line (a gone holder's). */
dt_status_t rs_lock_break(host_job_t *j, const char *line);
/* Touch our lock when RS_LOCK_REFRESH_MS passed since the last time. */
void rs_lock_refresh(host_job_t *j);

/* How one rsync ended. */
typedef struct rs_result {
    int started;                 /* the process ran                    */
    int code;                    /* exit status; -1 when killed        */
    int stopped;                 /* we killed it: dtctl was stopped    */
    char desc[64];               /* "exit N" / "killed by signal N"    */
    char err[2048];              /* the tail of its stderr, one line   */
} rs_result_t;

/* rsync_proc.c: run rsync (argv) for j's host in a process group of its
 * own that dies with dtctl, show progress when asked, fill stats, refresh
 * j's lock; ends it when dtctl is asked to stop. DT_OK only for exit 0. */
dt_status_t rsync_run_proc(host_job_t *j, char *const *argv,
                           rs_stats_t *stats, rs_result_t *r);

#endif /* DT_STORAGE_RSYNC_H */
