/* rsync_host.c — stage one host: prepare the destination (create it,
 * mark it "copy in progress", check it is writable and has room), run
 * rsync, then mark it complete. The "in progress" marker goes first and
 * the "complete" one last, so an interrupted copy (rsync killed, network
 * gone, disk full) can never pass for a complete data set. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include <dt/hosts.h>
#include <dt/clock.h>
#include "rsync_storage.h"
#include "stg.h"

static const char prepare_script[] =
    "d=$1\n"
    "mkdir -p -- \"$d\" || { echo 'DT-PREP nowrite'; exit 0; }\n"
    "printf '%s\\n' \"$2\" > \"$d/" STG_MARK_BUSY "\" || "
    "{ echo 'DT-PREP nowrite'; exit 0; }\n"
    "rm -f -- \"$d/" STG_MARK_DONE "\" || { echo 'DT-PREP nowrite'; exit 0; }\n"
    "echo \"DT-AVAIL $(df -Pk -- \"$d\" 2>/dev/null | awk 'NR==2 {print $4}')\"\n"
    "echo \"DT-USED $(du -sk -- \"$d\" 2>/dev/null | awk '{print $1}')\"\n"
    "echo 'DT-PREP ok'\n";

/* Written last: the completion marker, then the in-progress one goes. */
static const char mark_script[] =
    "d=$1\n"
    "printf 'staged by job %s from %s\\n' \"$2\" \"$3\" > \"$d/" STG_MARK_DONE
    ".tmp\" && mv -f -- \"$d/" STG_MARK_DONE ".tmp\" \"$d/" STG_MARK_DONE "\" "
    "&& rm -f -- \"$d/" STG_MARK_BUSY "\" && echo 'DT-MARK ok'\n";

static dt_status_t prepare(stage_run_t *run, const dt_host_t *h,
                           const char *dst)
{
    const char *args[] = {dst, run->req->job_id ? run->req->job_id : "-",
                          NULL};
    char *out = NULL, v[64];
    int code = 0;
    DT_CHECK(stg_run(run->req, h, prepare_script, args, &out, &code));
    dt_status_t st = DT_OK;
    const char *verdict = stg_line_value(out, "DT-PREP", v, sizeof v);
    if (!verdict || strcmp(verdict, "ok") != 0) {
        char *line = stg_one_line(out);
        dt_error("storage rsync: host %s: cannot write the destination %s: "
                 "%s; make it writable there (a read-only or full file "
                 "system?) or choose another [storage.rsync] dst",
                 h->name, dst, line ? line : "");
        free(line);
        st = DT_ERR_IO;
        goto out;
    }
    char a[64], u[64];
    unsigned long long avail_kb = 0, used_kb = 0;
    if (stg_line_value(out, "DT-AVAIL", a, sizeof a) &&
        sscanf(a, "%llu", &avail_kb) == 1 &&
        stg_line_value(out, "DT-USED", u, sizeof u))
        sscanf(u, "%llu", &used_kb);
    else
        goto out; /* no df there: rsync reports a full disk itself */
    /* What is already there counts: an update only sends the difference. */
    unsigned long long have = (avail_kb + used_kb) * 1024ull;
    if (have < run->src_bytes) {
        char need[32], fr[32];
        dt_error("storage rsync: host %s: not enough space at %s: the data "
                 "set is %s, %s free there (counting what is already "
                 "there); free space or choose another [storage.rsync] dst",
                 h->name, dst,
                 stg_bytes_text(run->src_bytes, need, sizeof need),
                 stg_bytes_text(avail_kb * 1024ull, fr, sizeof fr));
        st = DT_ERR_IO;
    }
out:
    free(out);
    return st;
}

static dt_status_t mark_done(stage_run_t *run, const dt_host_t *h,
                             const char *dst)
{
    const char *args[] = {dst, run->req->job_id ? run->req->job_id : "-",
                          run->req->src, NULL};
    char *out = NULL;
    int code = 0;
    DT_CHECK(stg_run(run->req, h, mark_script, args, &out, &code));
    dt_status_t st = DT_OK;
    if (!strstr(out, "DT-MARK ok")) {
        char *line = stg_one_line(out);
        dt_error("storage rsync: host %s: the copy finished but %s/%s could "
                 "not be written: %s; the data set stays marked incomplete",
                 h->name, dst, STG_MARK_DONE, line ? line : "");
        free(line);
        st = DT_ERR_IO;
    }
    free(out);
    return st;
}

/* The words of rsync's report that say what went wrong, as advice. */
static const char *advice(const char *err)
{
    if (strstr(err, "No space left"))
        return "the destination is full: free space there or choose "
               "another [storage.rsync] dst";
    if (strstr(err, "Read-only file system"))
        return "the destination is read-only: choose a writable "
               "[storage.rsync] dst";
    if (strstr(err, "Host key verification failed") ||
        strstr(err, "REMOTE HOST IDENTIFICATION"))
        return "the host's key is not in known_hosts (or changed): add it "
               "([launcher.ssh] known_hosts)";
    if (strstr(err, "Permission denied"))
        return "ssh login or file permissions refused: check [launcher.ssh] "
               "user/identity and the destination's permissions";
    if (strstr(err, "command not found") || strstr(err, "rsync: not found"))
        return "rsync is not installed there: install it, or set "
               "[storage.rsync] rsync_path";
    return "see rsync's message";
}

static dt_status_t transfer(stage_run_t *run, const dt_host_t *h,
                            const char *dst, rs_stats_t *stats)
{
    rsync_storage_t *R = run->R;
    char *ssh_cmd = NULL, **argv = NULL;
    int local = dt_host_is_local(h->name);
    if (!local)
        DT_CHECK(rs_ssh_command(&R->ssh, h->port, &ssh_cmd));
    rs_args_t a = {
        .rsync = R->rsync,
        .ssh_cmd = ssh_cmd,
        .rsync_path = R->rsync_path,
        .src = run->req->src,
        .host = h->name,
        .dst = dst,
        .bwlimit = R->bwlimit,
        .timeout_s = R->timeout_s,
        .progress = run->progress,
        .delete_extra = R->delete_extra,
    };
    dt_status_t st = rs_argv(&a, &argv);
    free(ssh_cmd);
    if (st != DT_OK)
        return st;
    char desc[64], err[2048];
    st = rsync_run_proc(run, h->name, argv, stats, desc, sizeof desc, err,
                        sizeof err);
    if (st != DT_OK)
        dt_error("storage rsync: host %s: copying %s to %s failed (rsync "
                 "%s): %s — %s; the data set there stays marked incomplete",
                 h->name, run->req->src, dst, desc, err[0] ? err : "-",
                 advice(err));
    dt_strv_free(argv);
    return st;
}

dt_status_t rsync_one_host(void *arg, size_t i, const dt_host_t *h)
{
    stage_run_t *run = arg;
    char *dst = stg_expand_host(run->R->dst, h->name);
    if (!dst)
        return DT_ERR_NOMEM;
    double t0 = dt_clock_now();
    host_result_t *res = &run->res[i];
    dt_status_t st = prepare(run, h, dst);
    if (st == DT_OK)
        st = transfer(run, h, dst, &res->stats);
    if (st == DT_OK)
        st = mark_done(run, h, dst);
    res->seconds = dt_clock_now() - t0;
    res->done = st == DT_OK;
    free(dst);
    return st;
}
