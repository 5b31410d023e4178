/* stg.h — what the storage plugins (local, rsync, nfs, efs) share: running
 * a short script on a host, visiting hosts in parallel with a bounded
 * fan-out, the markers a staged data set carries, and reading a plugin's
 * keys. Built into each plugin as a convenience library (hidden symbols). */
#ifndef DT_STG_H
#define DT_STG_H

#include <stdbool.h>
#include <stddef.h>
#include <dt/plugin.h>

/* Written into a data set directory before a copy starts and removed once
 * it completed: while it is there the data set is incomplete (an
 * interrupted copy leaves it behind). Workers refuse such a directory
 * (dt_data_path in dt/staging.h checks the same name). */
#define STG_MARK_BUSY ".dt-staging"
/* Written last, after a complete copy: "staged by job ID from SRC". */
#define STG_MARK_DONE ".dt-staged"

/* The lock one staging job holds on a destination from its checks to its
 * completion marker (rsync_host.c): a file with one line naming the job,
 * its dtctl (pid, machine) and since when; other jobs wait or are
 * refused. */
#define STG_LOCK ".dt-lock"

/* Run `sh -c script dt-stage args...` on host h: through the launcher
 * (req->remote), or on this machine when there is no launcher and h is
 * this machine. *out (malloc'd, stdout+stderr) and *code are set on
 * DT_OK. args is NULL-terminated (may be NULL). Errors are logged with the
 * host. */
dt_status_t stg_run(const dt_stage_request_t *req, const dt_host_t *h,
                    const char *script, const char *const *args, char **out,
                    int *code);

/* Run `script` with args on this machine (the fallback of stg_run).
 * Bounded in time (60 s) and output (1 MiB). */
dt_status_t stg_run_local(const char *script, const char *const *args,
                          char **out, int *code);

/* Call fn(arg, i, host) for every host, at most max_parallel at a time
 * (threads). Every host is visited even when some fail; returns the first
 * error (fn logs its own, naming the host). */
typedef dt_status_t (*stg_host_fn)(void *arg, size_t i, const dt_host_t *h);
dt_status_t stg_for_each_host(const dt_hostlist_t *hosts, int max_parallel,
                              stg_host_fn fn, void *arg);

/* Is path in place on host h: there, readable, no copy in progress, and,
 * when need_done, marked complete (STG_MARK_DONE)? Errors are logged as
 * "WHO: host H: ..." with the path and what to do. */
dt_status_t stg_check_path(const dt_stage_request_t *req, const dt_host_t *h,
                           const char *who, const char *path, int need_done);

/* The value of a line "TAG value" in out (value up to the end of the line,
 * copied into buf), or NULL. */
const char *stg_line_value(const char *out, const char *tag, char *buf,
                           size_t len);
/* out without trailing newlines and with inner newlines as "; ": for one-
 * line error messages. malloc'd (NULL when out of memory). */
char *stg_one_line(const char *out);

/* Key getters for a plugin's section. Optional strings: unset or empty ->
 * *out = NULL. Copies are malloc'd. */
dt_status_t stg_opt_string(const dt_config_t *cfg, const char *section,
                           const char *key, char **out);
dt_status_t stg_get_parallel(const dt_config_t *cfg, const char *section,
                             int *out);
/* An absolute path without "{host}" problems: logs "[section] key = ..."
 * and returns DT_ERR_CONFIG when not absolute. */
dt_status_t stg_check_absolute(const char *section, const char *key,
                               const char *path);

/* "{host}" in pattern replaced by host (every occurrence). malloc'd. */
char *stg_expand_host(const char *pattern, const char *host);

/* "1.5 GiB" style text of n bytes into buf. */
const char *stg_bytes_text(unsigned long long n, char *buf, size_t len);

#endif /* DT_STG_H */
