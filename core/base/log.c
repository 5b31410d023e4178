/* log.c — the one logger: "dt: LEVEL: text" (tagged) on stderr.
 * A message is formatted into one buffer and written with one write(2) so
 * lines from several threads or processes never interleave mid-line. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>

static dt_log_level_t current_level = DT_LOG_INFO;
static char current_tag[96];

void dt_log_set_level(dt_log_level_t level) { current_level = level; }
dt_log_level_t dt_log_get_level(void) { return current_level; }

#define PREFIX_MAX 32
static const char *(*_Atomic prefix_hook)(void);

void dt_log_set_prefix_hook(const char *(*hook)(void))
{
    atomic_store(&prefix_hook, hook);
}

void dt_log_set_tag(const char *tag)
{
    if (!tag)
        current_tag[0] = '\0';
    else
        snprintf(current_tag, sizeof current_tag, "%s ", tag);
}

/* A message longer than the line keeps its start and its end, where the
 * reason and what to do are; the middle (a long path, as a rule) becomes
 * " [...] ", cut between UTF-8 characters. buf holds the prefix (at) and
 * the message's start; the message is formatted again, whole, from ap.
 * The line's length is returned; room when the message cannot be. */
static size_t elide_middle(char *buf, size_t at, size_t room,
                           const char *fmt, va_list ap)
{
    static const char mark[] = " [...] ";
    va_list copy;
    va_copy(copy, ap);
    int total = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    char *text = total > 0 ? malloc((size_t)total + 1) : NULL;
    if (!text || vsnprintf(text, (size_t)total + 1, fmt, ap) != total) {
        free(text);
        return room; /* the start only, as before */
    }
    size_t len = (size_t)total, space = room - at - (sizeof mark - 1);
    size_t head = space / 3, tail = len - (space - head);
    while (head > 0 && ((unsigned char)text[head] & 0xC0) == 0x80)
        head--; /* text[head] would start a continuation byte */
    while (tail < len && ((unsigned char)text[tail] & 0xC0) == 0x80)
        tail++;
    memcpy(buf + at + head, mark, sizeof mark - 1);
    memcpy(buf + at + head + sizeof mark - 1, text + tail, len - tail);
    free(text);
    return at + head + sizeof mark - 1 + len - tail;
}

void dt_vlog(dt_log_level_t level, const char *fmt, va_list ap)
{
    static const char *const names[] = {"error", "warning", "info", "debug",
                                        "trace"};
    if (level > current_level)
        return;
    char buf[4096];
    const char *(*hook)(void) = atomic_load(&prefix_hook);
    const char *pre = hook ? hook() : NULL;
    size_t at = pre ? strnlen(pre, PREFIX_MAX) : 0;
    memcpy(buf, pre ? pre : "", at);
    int n = snprintf(buf + at, sizeof buf - at, "dt: %s%s: ", current_tag,
                     names[level]);
    if (n < 0)
        return;
    n += (int)at;
    va_list again;
    va_copy(again, ap);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    size_t len = (size_t)n + (size_t)(m < 0 ? 0 : m);
    if (m >= 0 && len > sizeof buf - 2)
        len = elide_middle(buf, (size_t)n, sizeof buf - 2, fmt, again);
    va_end(again);
    if (m < 0)
        return;
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
