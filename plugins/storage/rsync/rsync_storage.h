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
} stage_run_t;

/* rsync_host.c: prepare, copy, mark one host (a stg_host_fn). */
dt_status_t rsync_one_host(void *arg, size_t i, const dt_host_t *h);

/* rsync_proc.c: run rsync (argv) for host, show progress when asked,
 * fill stats; *exit_desc gets "exit N" / "killed by signal N" and err the
 * tail of rsync's stderr. DT_OK only for exit 0. */
dt_status_t rsync_run_proc(stage_run_t *run, const char *host,
                           char *const *argv, rs_stats_t *stats,
                           char *exit_desc, size_t exit_len, char *err,
                           size_t err_len);

#endif /* DT_STORAGE_RSYNC_H */
