/* stg_check.c — is a data set path in place on a host: there, readable,
 * and (for copies) complete? One small script per host; the verdict comes
 * back as a tagged line so that shell noise cannot be mistaken for it. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "stg.h"

static const char check_script[] =
    "p=$1\n"
    "if [ ! -e \"$p\" ]; then\n"
    /* the path, or a folder above it, a link to nothing there: a file
     * system not mounted on that host, as a rule */
    "  q=$p\n"
    "  while [ -n \"$q\" ] && [ \"$q\" != / ] && [ \"$q\" != . ]; do\n"
    "    if [ -L \"$q\" ] && [ ! -e \"$q\" ]; then\n"
    "      t=$(readlink -- \"$q\" 2>/dev/null)\n"
    "      [ -z \"$t\" ] || printf 'DT-STAGE-LINK %s\\nDT-STAGE-TO %s\\n' "
    "\"$q\" \"$t\"\n"
    "      break\n"
    "    fi\n"
    "    q=$(dirname -- \"$q\")\n"
    "  done\n"
    "  echo 'DT-STAGE missing'; exit 0\n"
    "fi\n"
    "if [ ! -r \"$p\" ]; then echo 'DT-STAGE unreadable'; exit 0; fi\n"
    "if [ -d \"$p\" ]; then\n"
    "  [ -x \"$p\" ] || { echo 'DT-STAGE unreadable'; exit 0; }\n"
    "  [ -e \"$p/" STG_MARK_BUSY "\" ] && { echo 'DT-STAGE incomplete'; "
    "exit 0; }\n"
    "  [ \"$2\" = done ] && [ ! -e \"$p/" STG_MARK_DONE "\" ] && "
    "{ echo 'DT-STAGE unmarked'; exit 0; }\n"
    "elif [ \"$2\" = done ]; then echo 'DT-STAGE notdir'; exit 0; fi\n"
    "echo 'DT-STAGE ok'\n";

dt_status_t stg_check_path(const dt_stage_request_t *req, const dt_host_t *h,
                           const char *who, const char *path, int need_done)
{
    const char *args[] = {path, need_done ? "done" : "any", NULL};
    char *out = NULL, v[64], link[4096], to[4096];
    int code = 0;
    dt_status_t st = stg_run(req, h, check_script, args, &out, &code);
    if (st != DT_OK)
        return st;
    const char *verdict = stg_line_value(out, "DT-STAGE", v, sizeof v);
    st = DT_ERR_NOT_FOUND;
    if (!verdict) {
        char *line = stg_one_line(out);
        dt_error("%s: host %s: checking %s failed (exit %d): %s", who,
                 h->name, path, code, line ? line : "");
        free(line);
        st = DT_ERR_IO;
    } else if (strcmp(verdict, "ok") == 0) {
        dt_debug("%s: host %s: %s is in place", who, h->name, path);
        st = DT_OK;
    } else if (strcmp(verdict, "missing") == 0 &&
               stg_line_value(out, "DT-STAGE-LINK", link, sizeof link) &&
               stg_line_value(out, "DT-STAGE-TO", to, sizeof to)) {
        /* a link to storage not mounted (yet) on that host, typically */
        if (strcmp(link, path) == 0)
            dt_error("%s: host %s: the data set path %s is a symbolic link "
                     "to %s, which does not exist there (its file system "
                     "not mounted?); mount it, or point the link at the "
                     "data set", who, h->name, path, to);
        else
            dt_error("%s: host %s: the data set path %s does not exist "
                     "there: %s is a symbolic link to %s, which does not "
                     "exist (its file system not mounted?); mount it, or "
                     "point the link at the data set", who, h->name, path,
                     link, to);
    } else if (strcmp(verdict, "missing") == 0) {
        dt_error("%s: host %s: the data set path %s does not exist there; "
                 "put the data set at that path on every host, or choose "
                 "another storage plugin (rsync copies it)",
                 who, h->name, path);
    } else if (strcmp(verdict, "unreadable") == 0) {
        dt_error("%s: host %s: the data set path %s is not readable there "
                 "(permissions); fix them for the user the workers run as",
                 who, h->name, path);
    } else if (strcmp(verdict, "incomplete") == 0) {
        dt_error("%s: host %s: the data set at %s is incomplete (%s is there: "
                 "a copy was interrupted); run `dtctl stage JOB.ini` again",
                 who, h->name, path, STG_MARK_BUSY);
    } else if (strcmp(verdict, "unmarked") == 0) {
        dt_error("%s: host %s: the data set at %s was never completely "
                 "copied (no %s marker: an interrupted or never-finished "
                 "copy); run `dtctl stage JOB.ini`",
                 who, h->name, path, STG_MARK_DONE);
    } else {
        dt_error("%s: host %s: %s is not a directory; a staged data set is a "
                 "directory", who, h->name, path);
    }
    free(out);
    return st;
}
