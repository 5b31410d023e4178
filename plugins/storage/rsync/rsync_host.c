/* rsync_host.c — stage one host: prepare the destination (check that it
 * is safe to copy into: a directory of the user's own, apart from the
 * data set, empty or staged by dt before; create it, mark it "copy in
 * progress", check it is writable and has room), run rsync, then mark it
 * complete. The "in progress" marker goes first and the "complete" one
 * last, so an interrupted copy (rsync killed, network gone, disk full)
 * can never pass for a complete data set. */
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

/* Checks dst before anything is written there, then marks it "copy in
 * progress". A verdict other than "ok" stops the host:
 *   root       dst is / (however spelled, links included);
 *   symlink    dst is a link: the copy, and delete = yes, would go where
 *              it points, which whoever made the link chose;
 *   notdir     dst is a file;
 *   owner      dst belongs to another user, who could plant links in it;
 *   groupwrite dst is writable by its group or others: the same;
 *   notours    dst holds files and no marker: not a copy dt made, and
 *              rsync would overwrite them (delete = yes: delete them).
 * Markers are never written through a link: the in-progress one goes to
 * a fresh file renamed over the old, a link in its place removed first.
 * Run by `sh -c` on the host (POSIX sh and utilities only). */
static const char prepare_script[] =
    "d=$1 job=$2 m=\"$1/" STG_MARK_BUSY "\"\n"
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
    "  [ -n \"$f\" ] && { echo \"DT-FOUND $(printf '%s\\n' \"$f\" | awk "
    "'NR <= 3 {printf(\"%s%s\", (NR > 1 ? \", \" : \"\"), $0)} "
    "END {if (NR > 3) printf \", ... (%d in all)\", NR}')\"; no notours; }\n"
    "fi\n"
    "rm -f -- \"$m.tmp\" && printf '%s\\n' \"$job\" > \"$m.tmp\" || no nowrite\n"
    "if [ -h \"$m\" ]; then rm -f -- \"$m\" || no nowrite; fi\n"
    "mv -f -- \"$m.tmp\" \"$m\" || no nowrite\n"
    "rm -f -- \"$d/" STG_MARK_DONE "\" || no nowrite\n"
    "echo \"DT-AVAIL $(df -Pk -- \"$d\" 2>/dev/null | awk 'NR==2 {print $4}')\"\n"
    "echo \"DT-USED $(du -sk -- \"$d\" 2>/dev/null | awk '{print $1}')\"\n"
    "echo 'DT-PREP ok'\n";

/* Written last: the completion marker (a fresh file renamed over the old,
 * never written through a link), then the in-progress one goes. As root,
 * rsync -a gave dst the data set's owner: dst is made root's again, or
 * the next stage would refuse it (where root cannot, e.g. a root-squashed
 * NFS, that refusal says so; the copy itself is complete). */
static const char mark_script[] =
    "d=$1 m=\"$1/" STG_MARK_DONE "\"\n"
    "rm -f -- \"$m.tmp\" && "
    "printf 'staged by job %s from %s\\n' \"$2\" \"$3\" > \"$m.tmp\" && "
    "{ [ ! -h \"$m\" ] || rm -f -- \"$m\"; } && mv -f -- \"$m.tmp\" \"$m\" && "
    "{ [ \"$(id -u)\" != 0 ] || chown -- 0 \"$d\" 2>/dev/null || :; } && "
    "rm -f -- \"$d/" STG_MARK_BUSY "\" && echo 'DT-MARK ok'\n";

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
        prep_error(h, dst, verdict ? verdict : "", out);
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
    /* "dir/" would let the checks see through a link named dir. */
    for (size_t n = strlen(dst); n > 1 && dst[n - 1] == '/'; n--)
        dst[n - 1] = '\0';
    double t0 = dt_clock_now();
    host_result_t *res = &run->res[i];
    dt_status_t st = DT_OK;
    if (dt_host_is_local(h->name))
        st = check_apart(run, h, dst);
    if (st == DT_OK)
        st = prepare(run, h, dst);
    if (st == DT_OK)
        st = transfer(run, h, dst, &res->stats);
    if (st == DT_OK)
        st = mark_done(run, h, dst);
    res->seconds = dt_clock_now() - t0;
    res->done = st == DT_OK;
    free(dst);
    return st;
}
