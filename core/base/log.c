/* log.c — the one logger: "dt: LEVEL: text" (tagged) on stderr.
 * A message is formatted into one buffer and written with one write(2) so
 * lines from several threads or processes never interleave mid-line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>

static dt_log_level_t current_level = DT_LOG_INFO;
static char current_tag[96];

void dt_log_set_level(dt_log_level_t level) { current_level = level; }
dt_log_level_t dt_log_get_level(void) { return current_level; }

void dt_log_set_tag(const char *tag)
{
    if (!tag)
        current_tag[0] = '\0';
    else
        snprintf(current_tag, sizeof current_tag, "%s ", tag);
}

void dt_vlog(dt_log_level_t level, const char *fmt, va_list ap)
{
    static const char *const names[] = {"error", "warning", "info", "debug",
                                        "trace"};
    if (level > current_level)
        return;
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "dt: %s%s: ", current_tag,
                     names[level]);
    if (n < 0)
        return;
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;
    buf[len++] = '\n';
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, buf + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}

void dt_log(dt_log_level_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dt_vlog(level, fmt, ap);
    va_end(ap);
}
