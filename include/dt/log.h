/* dt/log.h — one logger for dtctl, libdt and plugins.
 *
 * Messages go to stderr as "dt: LEVEL: text" (with "[rank host]" in workers
 * once dt knows its rank). Never log a secret: the job token and key
 * material stay out of every message at every level. */
#ifndef DT_LOG_H
#define DT_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dt_log_level {
    DT_LOG_ERROR = 0,
    DT_LOG_WARN = 1,
    DT_LOG_INFO = 2,   /* default for dtctl */
    DT_LOG_DEBUG = 3,  /* -v */
    DT_LOG_TRACE = 4   /* -vv */
} dt_log_level_t;

void dt_log_set_level(dt_log_level_t level);
dt_log_level_t dt_log_get_level(void);
/* Tag every later message with this prefix (e.g. "[3 node2]"); NULL clears. */
void dt_log_set_tag(const char *tag);
/* A program drawing on the terminal's current line (dtctl's progress
 * bars) gets a say before each message: the hook returns bytes to write
 * before it, in the same write (at most 32: "\r\033[K" erases the line),
 * or NULL. Called on whatever thread logs; NULL removes it. */
void dt_log_set_prefix_hook(const char *(*hook)(void));

void dt_log(dt_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dt_vlog(dt_log_level_t level, const char *fmt, va_list ap);

#define dt_error(...) dt_log(DT_LOG_ERROR, __VA_ARGS__)
#define dt_warn(...)  dt_log(DT_LOG_WARN, __VA_ARGS__)
#define dt_info(...)  dt_log(DT_LOG_INFO, __VA_ARGS__)
#define dt_debug(...) dt_log(DT_LOG_DEBUG, __VA_ARGS__)
#define dt_trace(...) dt_log(DT_LOG_TRACE, __VA_ARGS__)

/* Evaluate a call returning dt_status_t; on error log where and return it. */
#define DT_CHECK(expr)                                                        \
    do {                                                                      \
        dt_status_t dt_check_st_ = (expr);                                    \
        if (dt_check_st_ != DT_OK) {                                          \
            dt_debug("%s:%d: %s failed: %s", __FILE__, __LINE__, #expr,       \
                     dt_status_str(dt_check_st_));                            \
            return dt_check_st_;                                              \
        }                                                                     \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif /* DT_LOG_H */
