/* rsync_host.c — stage one host: prepare the destination (check that it
 * is safe to copy into: a directory of the user's own, apart from the
 * data set, empty or staged by dt before; lock it against other jobs;
 * create it, mark it "copy in progress", check it is writable and has
 * room), run rsync, then mark it complete and unlock it. The "in
 * progress" marker goes first and the "complete" one last, so an
 * interrupted copy (rsync killed, network gone, disk full) can never pass
 * for a complete data set, and the lock keeps a second job from copying
 * into it, or marking it, meanwhile. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dt/log.h>
#include <dt/hosts.h>
#include <dt/clock.h>
#include "rsync_storage.h"
#include "stg.h"

/* Checks dst before anything is written there, takes its lock, then
 * marks it "copy in progress". A verdict other than "ok" stops the host:
 *   root       dst is / (however spelled, links included);
 *   symlink    dst is a link: the copy, and delete = yes, would go where
 *              it points, which whoever made the link chose;
 *   notdir     dst is a file;
 *   owner      dst belongs to another user, who could plant links in it;
 *   groupwrite dst is writable by its group or others: the same;
 *   notours    dst holds files and no marker: not a copy dt made, and
 *              rsync would overwrite them (delete = yes: delete them);
 *   lockodd    a link or directory stands where the lock goes;
 *   locked     another job holds the lock (DT-HOLDER: its line;
 *              DT-HOLDER-OLD: not refreshed for RS_LOCK_TTL_MIN).
 * The lock is a file written whole, then linked to its name: ln fails
 * when the name exists, so of two jobs exactly one gets it. The
 * completion marker stays while the copy runs (the in-progress one
 * outranks it everywhere), so that a copy that fails before rsync touched
 * anything can leave a verified dst verified (end_script "keep"); one
 * found next to an in-progress marker is stale and goes. Markers are
 * never written through a link: the in-progress one goes to a fresh file
 * renamed over the old, a link in its place removed first. Run by
 * `sh -c` on the host (POSIX sh and utilities, and find -mmin). */
static const char prepare_script[] =
    "d=$1 job=$2 line=$3 m=\"$1/" STG_MARK_BUSY "\" lk=\"$1/" STG_LOCK "\"\n"
    "no() { echo \"DT-PREP $1\"; exit 0; }\n"
    "has() { [ -e \"$d/$1\" ] || [ -h \"$d/$1\" ]; }\n"
    "[ -e \"$d\" ] || [ -h \"$d\" ] || (umask 022 && mkdir -p -- \"$d\") || "
    "no nowrite\n"
    "[ -h \"$d\" ] && no symlink\n"
    "[ -d \"$d\" ] || no notdir\n"
    "[ \"$(cd -P -- \"$d\" && pwd -P)\" = / ] && no root\n"
    "l=$(ls -ldn -- \"$d\") || no nowrite\n"
    "echo \"DT-MODE ${l%% *}\"\n"
    "u=$(printf '%s\\n' \"$l\" | awk 'NR==1 {print $3}') me=$(id -u)\n"
    "echo \"DT-OWNER $u $me\"\n"
    "[ \"$u\" = \"$me\" ] || no owner\n"
    "case ${l%% *} in ?????w*|????????w*) no groupwrite;; esac\n"
    "if ! has " STG_MARK_DONE " && ! has " STG_MARK_BUSY "; then\n"
    "  f=$(ls -A -- \"$d\") || no nowrite\n"
    "  f=$(printf '%s\\n' \"$f\" | grep -v '^\\" STG_LOCK "')\n"
    "  [ -n \"$f\" ] && { echo \"DT-FOUND $(printf '%s\\n' \"$f\" | awk "
    "'NR <= 3 {printf(\"%s%s\", (NR > 1 ? \", \" : \"\"), $0)} "
    "END {if (NR > 3) printf \", ... (%d in all)\", NR}')\"; no notours; }\n"
    "fi\n"
    "{ [ -h \"$lk\" ] || [ -d \"$lk\" ]; } && no lockodd\n"
    "rm -f -- \"$lk.$$\" && printf '%s\\n' \"$line\" > \"$lk.$$\" || "
    "no nowrite\n"
    "if ! e=$(ln -- \"$lk.$$\" \"$lk\" 2>&1); then\n"
    "  rm -f -- \"$lk.$$\"\n"
    "  [ -e \"$lk\" ] || { echo \"$e\"; no nowrite; }\n"
    "  echo \"DT-HOLDER $(head -n 1 -- \"$lk\")\"\n"
    "  [ -n \"$(find \"$lk\" -prune -mmin +" RS_STR(RS_LOCK_TTL_MIN)
    " 2>/dev/null)\" ] && "
    "echo DT-HOLDER-OLD\n"
    "  no locked\n"
    "fi\n"
    "rm -f -- \"$lk.$$\"; echo 'DT-LOCK ours'\n"
    "if has " STG_MARK_DONE " && ! has " STG_MARK_BUSY "; then "
    "echo 'DT-WAS done'\n"
    "else rm -f -- \"$d/" STG_MARK_DONE "\" || no nowrite; fi\n"
    "rm -f -- \"$m.tmp\" && printf '%s\\n' \"$job\" > \"$m.tmp\" || no nowrite\n"
    "if [ -h \"$m\" ]; then rm -f -- \"$m\" || no nowrite; fi\n"
    "mv -f -- \"$m.tmp\" \"$m\" || no nowrite\n"
    "echo \"DT-AVAIL $(df -Pk -- \"$d\" 2>/dev/null | awk 'NR==2 {print $4}')\"\n"
    "echo \"DT-USED $(du -sk -- \"$d\" 2>/dev/null | awk '{print $1}')\"\n"
    "echo 'DT-PREP ok'\n";

/* The end of a host's staging, with the lock still ours (else "DT-END
 * lost" and the holder's line, and nothing touched):
 *   done  what an interrupted rsync left in its --delay-updates folders
 *         (.~tmp~, reused by the next copy only for files it sends again:
 *         one removed from the data set meanwhile stayed there for good)
 *         goes; the completion marker (a fresh file renamed over the old,
 *         never written through a link), then the in-progress one goes. As
 *         root, rsync -a gave dst the data set's owner: dst is made
 *         root's again, or the next stage would refuse it (where root
 *         cannot, e.g. a root-squashed NFS, that refusal says so; the
 *         copy itself is complete);
 *   keep  nothing was copied into a dst that was complete: the
 *         in-progress marker goes, the old completion marker stands;
 *   fail  the copy may have changed dst: the completion marker goes, the
 *         in-progress one stays.
 * Then the lock goes. */
static const char end_script[] =
    "d=$1 line=$2 m=\"$1/" STG_MARK_DONE "\" lk=\"$1/" STG_LOCK "\"\n"
    "h=$(head -n 1 -- \"$lk\" 2>/dev/null)\n"
    "[ \"$h\" = \"$line\" ] || { echo \"DT-END lost $h\"; exit 0; }\n"
    "case $3 in\n"
    "done) { find \"$d\" -name '.~tmp~' -type d -prune -exec rm -rf -- {} + "
    "2>/dev/null || :; } && rm -f -- \"$m.tmp\" && "
    "printf 'staged by job %s from %s\\n' \"$4\" \"$5\" > \"$m.tmp\" && "
    "{ [ ! -h \"$m\" ] || rm -f -- \"$m\"; } && mv -f -- \"$m.tmp\" \"$m\" && "
    "{ [ \"$(id -u)\" != 0 ] || chown -- 0 \"$d\" 2>/dev/null || :; } && "
    "rm -f -- \"$d/" STG_MARK_BUSY "\";;\n"
    "keep) [ ! -f \"$m\" ] || [ -h \"$m\" ] || "
    "rm -f -- \"$d/" STG_MARK_BUSY "\";;\n"
    "*) rm -f -- \"$m\";;\n"
    "esac || { rm -f -- \"$lk\"; exit 0; }\n"
    "rm -f -- \"$lk\" && echo 'DT-END ok'\n";

/* The path spelled out: the absolute path of its longest existing part
 * with links resolved, then the rest (which cannot hold a link) with "."
 * and ".." applied. malloc'd; NULL when nothing of it resolves. */
static char *resolve(const char *path)
{
    size_t cut = strlen(path);
    char *real = NULL;
    for (;;) {
        char *head = strndup(path, cut);
        if (!head)
            return NULL;
        real = realpath(*head ? head : path[0] == '/' ? "/" : ".", NULL);
        free(head);
        if (real || cut == 0)
            break;
        while (cut > 0 && path[cut - 1] != '/')
            cut--;
        while (cut > 0 && path[cut - 1] == '/')
            cut--;
    }
    if (!real)
        return NULL;
    size_t n = strlen(real);
    char *out = realloc(real, n + strlen(path + cut) + 2);
    if (!out) {
        free(real);
        return NULL;
    }
    for (const char *c = path + cut; *c;) {
        size_t l = strcspn(c, "/");
        if (l == 2 && c[0] == '.' && c[1] == '.') {
            while (n > 1 && out[n - 1] != '/')
                n--;
            if (n > 1)
                n--;
        } else if (l && !(l == 1 && c[0] == '.')) {
            if (out[n - 1] != '/')
                out[n++] = '/';
            memcpy(out + n, c, l);
            n += l;
        }
        out[n] = '\0';
        c += l + (c[l] == '/');
    }
    return out;
}

/* a is b or lies inside it. */
static int within(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (strcmp(b, "/") == 0)
        return 1;
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/* On this machine dst must lie apart from the data set: onto itself or
 * into itself the copy makes no sense, and a dst holding the data set
 * would have it deleted (delete = yes) or mixed with the copy. */
static dt_status_t check_apart(const stage_run_t *run, const dt_host_t *h,
                               const char *dst)
{
    const char *src = run->req->src;
    char *s = resolve(src), *d = resolve(dst);
    dt_status_t st = DT_OK;
    if (!s || !d) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    const char *how = strcmp(s, d) == 0 ? "is"
                      : within(d, s)    ? "lies inside"
                      : within(s, d)    ? "holds"
                                        : NULL;
    if (how) {
        int same = strcmp(dst, d) == 0;
        dt_error("storage rsync: host %s: the destination %s%s%s %s the "
                 "data set %s ([data] path, %s): the copy would overwrite or "
                 "delete the data set; choose a [storage.rsync] dst outside "
                 "[data] path and not above it",
                 h->name, dst, same ? "" : " = ", same ? "" : d, how, src, s);
        st = DT_ERR_CONFIG;
    }
out:
    free(s);
    free(d);
    return st;
}

/* The prepare script's refusal (verdict) as a message saying what to do. */
static void prep_error(const dt_host_t *h, const char *dst,
                       const char *verdict, const char *out)
{
    char a[64], b[256], uid[32] = "?", me[32] = "?";
    const char *mode = stg_line_value(out, "DT-MODE", a, sizeof a);
    if (stg_line_value(out, "DT-OWNER", b, sizeof b))
        sscanf(b, "%31s %31s", uid, me);
    if (strcmp(verdict, "root") == 0)
        dt_error("storage rsync: host %s: the destination %s is the root "
                 "directory /; staging there would overwrite (delete = yes: "
                 "delete) the host's files; set [storage.rsync] dst to a "
                 "directory of its own, e.g. /scratch/dt-data",
                 h->name, dst);
    else if (strcmp(verdict, "symlink") == 0)
        dt_error("storage rsync: host %s: the destination %s is a symbolic "
                 "link; dt copies (and deletes, delete = yes) only in a real "
                 "directory, not where a link points; set [storage.rsync] "
                 "dst to the directory itself",
                 h->name, dst);
    else if (strcmp(verdict, "notdir") == 0)
        dt_error("storage rsync: host %s: the destination %s exists and is "
                 "not a directory; remove it there or choose another "
                 "[storage.rsync] dst",
                 h->name, dst);
    else if (strcmp(verdict, "owner") == 0)
        dt_error("storage rsync: host %s: the destination %s belongs to uid "
                 "%s, not to you (uid %s); dt stages only into a directory "
                 "of your own (its owner could plant files or links there); "
                 "choose another [storage.rsync] dst",
                 h->name, dst, uid, me);
    else if (strcmp(verdict, "groupwrite") == 0)
        dt_error("storage rsync: host %s: the destination %s is writable by "
                 "its group or by others (%s); other users could plant "
                 "files or links there; run `chmod go-w %s` there or choose "
                 "another [storage.rsync] dst",
                 h->name, dst, mode ? mode : "?", dst);
    else if (strcmp(verdict, "lockodd") == 0)
        dt_error("storage rsync: host %s: %s/%s is a link or a directory, "
                 "not a lock dt wrote; remove it there and stage again",
                 h->name, dst, STG_LOCK);
    else if (strcmp(verdict, "notours") == 0)
        dt_error("storage rsync: host %s: the destination %s already holds "
                 "entries that dt did not stage (%s) and no %s or %s "
                 "marker; staging would overwrite them (delete = yes: "
                 "delete them); choose an empty or new [storage.rsync] dst, "
                 "or, if it is a copy of this data set, let dt take it over: "
                 "touch %s/%s there",
                 h->name, dst,
                 stg_line_value(out, "DT-FOUND", b, sizeof b) ? b : "",
                 STG_MARK_DONE, STG_MARK_BUSY, dst, STG_MARK_BUSY);
    else {
        char *line = stg_one_line(out);
        dt_error("storage rsync: host %s: cannot write the destination %s: "
                 "%s; make it writable there (a read-only or full file "
                 "system?) or choose another [storage.rsync] dst",
                 h->name, dst, line ? line : "");
        free(line);
    }
}

/* Room for the data set at dst (df's free space plus what is there:
 * an update only sends the difference). No df there: rsync reports a
 * full disk itself. */
static dt_status_t check_room(const host_job_t *j, const char *out)
{
    char a[64], u[64];
    unsigned long long avail_kb = 0, used_kb = 0;
    if (!stg_line_value(out, "DT-AVAIL", a, sizeof a) ||
        sscanf(a, "%llu", &avail_kb) != 1 ||
        !stg_line_value(out, "DT-USED", u, sizeof u))
        return DT_OK;
    sscanf(u, "%llu", &used_kb);
    unsigned long long have = (avail_kb + used_kb) * 1024ull;
    if (have >= j->run->src_bytes)
        return DT_OK;
    char need[32], fr[32];
    dt_error("storage rsync: host %s: not enough space at %s: the data set "
             "is %s, %s free there (counting what is already there); free "
             "space or choose another [storage.rsync] dst",
             j->h->name, j->dst,
             stg_bytes_text(j->run->src_bytes, need, sizeof need),
             stg_bytes_text(avail_kb * 1024ull, fr, sizeof fr));
    return DT_ERR_IO;
}

/* One try: checks, the lock, the markers, the room. When another job
 * holds the lock: DT_OK, *held, its line in holder (and *old: not
 * refreshed for RS_LOCK_TTL_MIN). */
static dt_status_t prepare(host_job_t *j, char *holder, size_t len,
                           int *held, int *old)
{
    const stage_run_t *run = j->run;
    const char *args[] = {j->dst, run->req->job_id ? run->req->job_id : "-",
                          j->lock, NULL};
    char *out = NULL, v[64];
    int code = 0;
    DT_CHECK(stg_run(run->req, j->h, prepare_script, args, &out, &code));
    j->locked = strstr(out, "DT-LOCK ours") != NULL;
    j->refreshed_ms = dt_clock_now_ms();
    j->was_done = strstr(out, "DT-WAS done") != NULL;
    dt_status_t st = DT_OK;
    const char *verdict = stg_line_value(out, "DT-PREP", v, sizeof v);
    *held = verdict && strcmp(verdict, "locked") == 0;
    if (*held) {
        if (!stg_line_value(out, "DT-HOLDER", holder, len))
            holder[0] = '\0'; /* an empty lock file */
        *old = strstr(out, "DT-HOLDER-OLD") != NULL;
    } else if (!verdict || strcmp(verdict, "ok") != 0) {
        prep_error(j->h, j->dst, verdict ? verdict : "", out);
        st = DT_ERR_IO;
    } else {
        st = check_room(j, out);
    }
    free(out);
    return st;
}

/* Sleeps ms, or less when dtctl is asked to stop (then 1). */
static int nap(const stage_run_t *run, long long ms)
{
    for (long long t = 0; t < ms; t += 100) {
        if (rsync_stopped(run))
            return 1;
        poll(NULL, 0, 100);
    }
    return rsync_stopped(run);
}

static void refuse_locked(const host_job_t *j, const char *who,
                          long long waited_ms)
{
    dt_error("storage rsync: host %s: %s is locked by another staging, "
             "%s; gave up after %.0f s ([storage.rsync] lock_wait); let "
             "that job finish and stage again, or raise lock_wait; if "
             "no dtctl stages there any more (one on another machine that "
             "died), remove %s/%s on %s (it also expires %d minutes after "
             "its last refresh)",
             j->h->name, j->dst, who, (double)waited_ms / 1000.0, j->dst,
             STG_LOCK, j->h->name, RS_LOCK_TTL_MIN);
}

/* prepare, waiting up to lock_wait while another job holds the lock;
 * a gone holder's lock is taken over (a few times at most: a lock that
 * keeps coming back is not gone). */
static dt_status_t prepare_locked(host_job_t *j)
{
    long long t0 = dt_clock_now_ms();
    int said = 0, breaks = 0;
    for (;;) {
        char holder[RS_LOCK_LINE_MAX], who[RS_LOCK_LINE_MAX + 128];
        int held = 0, old = 0;
        DT_CHECK(prepare(j, holder, sizeof holder, &held, &old));
        if (!held)
            return DT_OK;
        rs_lock_describe(holder, who, sizeof who);
        const char *gone = rs_lock_gone_why(j->run, holder, old);
        if (gone && breaks++ < 3) {
            dt_warn("storage rsync: host %s: taking over the lock on %s of "
                    "%s: %s", j->h->name, j->dst, who, gone);
            DT_CHECK(rs_lock_break(j, holder));
            continue;
        }
        long long waited = dt_clock_now_ms() - t0;
        if (waited >= j->run->R->lock_wait_ms) {
            refuse_locked(j, who, waited);
            return DT_ERR_TIMEOUT;
        }
        if (!said++)
            dt_info("storage rsync: host %s: %s is being staged by %s; "
                    "waiting up to %.0f s ([storage.rsync] lock_wait)",
                    j->h->name, j->dst, who,
                    (double)j->run->R->lock_wait_ms / 1000.0);
        if (nap(j->run, 2000))
            return DT_ERR_INTERRUPTED;
    }
}

/* The end of the host's staging (end_script: "done", "keep", "fail")
 * and the lock released. */
static dt_status_t finish(host_job_t *j, const char *how)
{
    const stage_run_t *run = j->run;
    const char *args[] = {j->dst, j->lock, how,
                          run->req->job_id ? run->req->job_id : "-",
                          run->req->src, NULL};
    char *out = NULL, lost[RS_LOCK_LINE_MAX];
    int code = 0;
    DT_CHECK(stg_run(run->req, j->h, end_script, args, &out, &code));
    int done = strcmp(how, "done") == 0;
    dt_status_t st = DT_OK;
    if (stg_line_value(out, "DT-END lost", lost, sizeof lost)) {
        char who[RS_LOCK_LINE_MAX + 128] = "it was removed or emptied";
        if (lost[0]) {
            memcpy(who, "now held by ", 13);
            rs_lock_describe(lost, who + 12, sizeof who - 12);
        }
        dt_error("storage rsync: host %s: the lock on %s stopped being "
                 "this job's while it staged there (%s); %s; stage again "
                 "once no other job stages there",
                 j->h->name, j->dst, who,
                 done ? "the copy is not marked complete"
                      : "its markers are left as they are");
        st = DT_ERR_IO;
    } else if (!strstr(out, "DT-END ok")) {
        char *line = stg_one_line(out);
        if (done)
            dt_error("storage rsync: host %s: the copy finished but %s/%s "
                     "could not be written: %s; the data set stays marked "
                     "incomplete",
                     j->h->name, j->dst, STG_MARK_DONE, line ? line : "");
        else
            dt_warn("storage rsync: host %s: could not update the markers "
                    "and the lock at %s: %s",
                    j->h->name, j->dst, line ? line : "");
        free(line);
        st = DT_ERR_IO;
    }
    j->locked = 0;
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

/* rsync ended before it could change dst: it never ran, refused its
 * options (1: syntax, 2: protocol, 4: unsupported, 5: start-up; 127: not
 * found) or never heard from the other side. */
static int untouched(const rs_result_t *r)
{
    int c = r->code;
    return !r->started || c == 1 || c == 2 || c == 4 || c == 5 ||
           c == 127 || strstr(r->err, "(0 bytes received so far)");
}

static dt_status_t transfer(host_job_t *j, rs_stats_t *stats, int *touched)
{
    stage_run_t *run = j->run;
    rsync_storage_t *R = run->R;
    char *ssh_cmd = NULL, **argv = NULL;
    *touched = 0;
    if (!dt_host_is_local(j->h->name))
        DT_CHECK(rs_ssh_command(&R->ssh, j->h->port, &ssh_cmd));
    rs_args_t a = {
        .rsync = R->rsync,
        .ssh_cmd = ssh_cmd,
        .rsync_path = R->rsync_path,
        .src = run->req->src,
        .host = j->h->name,
        .dst = j->dst,
        .bwlimit = R->bwlimit,
        .timeout_s = R->timeout_s,
        .progress = run->progress,
        .delete_extra = R->delete_extra,
    };
    dt_status_t st = rs_argv(&a, &argv);
    free(ssh_cmd);
    if (st != DT_OK)
        return st;
    rs_result_t *r = calloc(1, sizeof *r);
    if (!r) {
        dt_strv_free(argv);
        return DT_ERR_NOMEM;
    }
    st = rsync_run_proc(j, argv, stats, r);
    *touched = st == DT_OK || !untouched(r);
    if (r->stopped)
        dt_error("storage rsync: host %s: copying %s to %s stopped (dtctl "
                 "was asked to stop; rsync %s); the data set there %s; run "
                 "`dtctl stage` again to complete it",
                 j->h->name, run->req->src, j->dst, r->desc,
                 *touched ? "stays marked incomplete" : "is as it was");
    else if (st != DT_OK)
        dt_error("storage rsync: host %s: copying %s to %s failed (rsync "
                 "%s): %s — %s; the data set there %s",
                 j->h->name, run->req->src, j->dst, r->desc,
                 r->err[0] ? r->err : "-", advice(r->err),
                 *touched ? "stays marked incomplete"
                 : j->was_done ? "is as it was (still complete)"
                               : "is as it was");
    free(r);
    dt_strv_free(argv);
    return st;
}

/* Checks, lock, copy, end: the markers say what dst holds, and the lock
 * keeps other jobs out of dst from the first check to the last marker. */
static dt_status_t stage_host(host_job_t *j, rs_stats_t *stats)
{
    dt_status_t st = DT_OK;
    int touched = 0;
    if (dt_host_is_local(j->h->name))
        st = check_apart(j->run, j->h, j->dst);
    if (st == DT_OK)
        st = prepare_locked(j);
    if (st == DT_OK)
        st = transfer(j, stats, &touched);
    if (!j->locked)
        return st;
    const char *how = st == DT_OK                   ? "done"
                      : j->was_done && !touched     ? "keep"
                                                    : "fail";
    dt_status_t end = finish(j, how);
    return st == DT_OK ? end : st;
}

dt_status_t rsync_one_host(void *arg, size_t i, const dt_host_t *h)
{
    stage_run_t *run = arg;
    if (rsync_stopped(run))
        return DT_ERR_INTERRUPTED; /* not started: nothing changed there */
    char *dst = stg_expand_host(run->R->dst, h->name);
    if (!dst)
        return DT_ERR_NOMEM;
    /* "dir/" would let the checks see through a link named dir. */
    for (size_t n = strlen(dst); n > 1 && dst[n - 1] == '/'; n--)
        dst[n - 1] = '\0';
    host_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        free(dst);
        return DT_ERR_NOMEM;
    }
    *j = (host_job_t){.run = run, .h = h, .dst = dst};
    rs_lock_line(j);
    double t0 = dt_clock_now();
    host_result_t *res = &run->res[i];
    dt_status_t st = stage_host(j, &res->stats);
    res->seconds = dt_clock_now() - t0;
    res->done = st == DT_OK;
    free(j);
    free(dst);
    return st;
}
