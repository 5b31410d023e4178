/* rsync_lock.c — the lock one job holds on a host's dst (STG_LOCK) from
 * its first check to its last marker; rsync_host.c's scripts take and
 * release it. Here: the line that names a holder, whether a holder is
 * gone (then its lock is taken over: a dtctl killed mid-copy must not
 * block the destination for ever), and keeping our lock fresh while
 * rsync runs, so that jobs on other machines can tell a live holder from
 * a dead one by the lock's age. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/clock.h>
#include "rsync_storage.h"
#include "stg.h"

#define LINE_FMT "job %s pid %ld start %llu on %s for %s since %lld"

typedef struct holder {
    char job[64], on[256], host[256];
    long pid;
    unsigned long long start;
    long long since;
} holder_t;

/* Field 22 of /proc/PID/stat: when the process started (clock ticks
 * since boot), which tells it from a later process with its pid. */
static int proc_start(long pid, unsigned long long *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
    if (!p)
        return 0;
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p && sscanf(p + 1, "%llu", out) == 1;
}

void rs_lock_self(stage_run_t *run)
{
    if (gethostname(run->self, sizeof run->self) != 0 || !run->self[0])
        snprintf(run->self, sizeof run->self, "unknown");
    run->self[sizeof run->self - 1] = '\0';
    run->self[strcspn(run->self, " \t\n")] = '\0';
    if (!proc_start(getpid(), &run->self_start))
        run->self_start = 0;
}

void rs_lock_line(host_job_t *j)
{
    const stage_run_t *run = j->run;
    const char *job = run->req->job_id && *run->req->job_id
                          ? run->req->job_id
                          : "-";
    snprintf(j->lock, sizeof j->lock, LINE_FMT, job, (long)getpid(),
             run->self_start, run->self, j->h->name,
             (long long)time(NULL));
}

static int parse(const char *line, holder_t *o)
{
    return sscanf(line,
                  "job %63s pid %ld start %llu on %255s for %255s since %lld",
                  o->job, &o->pid, &o->start, o->on, o->host,
                  &o->since) == 6;
}

/* A process with that pid and start time runs here. Unreadable /proc
 * entries (hidepid), or a holder that could not read its own start time
 * (0), count as running when the pid exists. */
static int running_here(long pid, unsigned long long start)
{
    unsigned long long now;
    if (start && proc_start(pid, &now))
        return now == start;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

const char *rs_lock_gone_why(const stage_run_t *run, const char *line,
                             int old)
{
    holder_t o;
    static const char stale[] = "it was not refreshed for over "
                                RS_STR(RS_LOCK_TTL_MIN) " minutes (its dtctl "
                                "died?)";
    if (parse(line, &o) && strcmp(o.on, run->self) == 0 && o.pid > 0)
        return running_here(o.pid, o.start)
                   ? NULL
                   : "its dtctl is no longer running on this machine";
    return old ? stale : NULL;
}

void rs_lock_describe(const char *line, char *buf, size_t len)
{
    holder_t o;
    if (!*line) {
        snprintf(buf, len, "an unknown job (the lock file is empty)");
        return;
    }
    if (!parse(line, &o)) {
        snprintf(buf, len, "an unknown job (the lock file reads '%s')",
                 line);
        return;
    }
    char when[64] = "?";
    time_t t = (time_t)o.since;
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, len, "job %s (dtctl pid %ld on %s, staging host %s, since "
             "%s)", o.job, o.pid, o.on, o.host, when);
}

/* Moved aside, then compared: removed when it is still the gone holder's
 * line, put back when another job took it meanwhile. */
static const char break_script[] =
    "l=\"$1/" STG_LOCK "\"; b=\"$l.broken.$$\"\n"
    "mv -f -- \"$l\" \"$b\" 2>/dev/null || { echo 'DT-BREAK gone'; exit 0; }\n"
    "if [ \"$(head -n 1 -- \"$b\")\" = \"$2\" ]; then\n"
    "  rm -f -- \"$b\"; echo 'DT-BREAK ok'\n"
    "else ln -- \"$b\" \"$l\" 2>/dev/null; rm -f -- \"$b\"; "
    "echo 'DT-BREAK changed'; fi\n";

dt_status_t rs_lock_break(host_job_t *j, const char *line)
{
    const char *args[] = {j->dst, line, NULL};
    char *out = NULL;
    int code = 0;
    DT_CHECK(stg_run(j->run->req, j->h, break_script, args, &out, &code));
    dt_status_t st = DT_OK;
    if (!strstr(out, "DT-BREAK")) {
        char *one = stg_one_line(out);
        dt_error("storage rsync: host %s: cannot remove the stale lock %s/%s "
                 "there: %s; remove it by hand",
                 j->h->name, j->dst, STG_LOCK, one ? one : "");
        free(one);
        st = DT_ERR_IO;
    }
    free(out);
    return st;
}

static const char touch_script[] =
    "l=\"$1/" STG_LOCK "\"\n"
    "[ \"$(head -n 1 -- \"$l\" 2>/dev/null)\" = \"$2\" ] && "
    "touch -c -- \"$l\" && echo 'DT-TOUCH ok'\n";

void rs_lock_refresh(host_job_t *j)
{
    long long now = dt_clock_now_ms();
    if (!j->locked || now - j->refreshed_ms < RS_LOCK_REFRESH_MS)
        return;
    j->refreshed_ms = now;
    const char *args[] = {j->dst, j->lock, NULL};
    char *out = NULL;
    int code = 0;
    if (stg_run(j->run->req, j->h, touch_script, args, &out, &code) !=
            DT_OK ||
        !strstr(out, "DT-TOUCH ok"))
        dt_debug("storage rsync: host %s: could not refresh the lock on %s",
                 j->h->name, j->dst);
    free(out);
}
