/* dt/status.h — status codes shared by libdt, dtctl and every plugin.
 *
 * Functions return a dt_status_t; values come back through out-parameters.
 * DT_OK is zero and every error is negative, so `if (st < 0)` and
 * `if (st != DT_OK)` both work (DT_DECLINED, positive, stays between a
 * transport and the core). */
#ifndef DT_STATUS_H
#define DT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dt_status {
    DT_OK = 0,
    /* Not an error: a transport's native collective leaves this call (a
     * memory kind or job layout it does not handle) to the core's own
     * algorithms. Only native collectives return it; the core never passes
     * it on. */
    DT_DECLINED = 1,
    DT_ERR_INVALID = -1,      /* bad argument or malformed input            */
    DT_ERR_NOMEM = -2,        /* allocation failed                          */
    DT_ERR_IO = -3,           /* a system call or file operation failed     */
    DT_ERR_NOT_FOUND = -4,    /* no such file, key, plugin or host          */
    DT_ERR_UNSUPPORTED = -5,  /* the operation is not offered by this part  */
    DT_ERR_TIMEOUT = -6,      /* nothing happened within the time allowed   */
    DT_ERR_PEER = -7,         /* a peer (worker, host) closed or died       */
    DT_ERR_AUTH = -8,         /* authentication (job token, host key) failed */
    DT_ERR_CONFIG = -9,       /* configuration error (file:line reported)   */
    DT_ERR_PLUGIN = -10,      /* a plugin could not be loaded or is broken  */
    DT_ERR_INTERRUPTED = -11, /* stopped by a signal or a cancel request    */
    DT_ERR_WORKER = -12,      /* a worker process failed                    */
    DT_ERR_INTERNAL = -13,    /* a bug in dt: please report it              */
    DT_ERR_DIVERGED = -14,    /* training diverged ([train] on_divergence)  */
    DT_ERR_BAD_DATA = -15     /* a data file found but wrong (an image that
                               * does not decode): every reading meets it */
} dt_status_t;

/* A short, static, human-readable name for a status ("timeout"). */
const char *dt_status_str(dt_status_t st);

#ifdef __cplusplus
}
#endif
#endif /* DT_STATUS_H */
