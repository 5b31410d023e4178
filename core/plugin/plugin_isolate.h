/* plugin_isolate.h — call into a plugin in a child process, so that a
 * plugin that crashes, exits or hangs there ends the child, not dtctl (a
 * third-party plugin's `available` op is run this way by the loader). */
#ifndef DT_PLUGIN_ISOLATE_H
#define DT_PLUGIN_ISOLATE_H

#include <stddef.h>
#include <dt/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How long a probe may take before it is called hung and killed. */
#define DT_PLUGIN_PROBE_TIMEOUT_S 10

/* The call made in the child: its return and text (out, NUL-terminated,
 * at most out_len bytes) come back to the caller. */
typedef int (*dt_isolated_fn_t)(void *arg, char *out, size_t out_len);

typedef struct dt_isolated {
    int returned; /* 1: fn returned; ret and out are its */
    int ret;
    int signo;    /* else, >0: the child was killed by this signal */
    int code;     /* else: it exited with this code without returning */
    int hung;     /* else, 1: it was killed after timeout_s */
    char op[32];  /* the op last named by dt_isolated_op in the child */
} dt_isolated_t;

/* Run fn(arg, out, out_len) in a forked child and wait at most timeout_s
 * seconds. Returns -1 when no child could be made (errno set) or
 * isolation is off (errno 0): the caller decides whether to call fn
 * itself. */
int dt_run_isolated(dt_isolated_fn_t fn, void *arg, int timeout_s,
                    char *out, size_t out_len, dt_isolated_t *res);

/* From now on in this process dt_run_isolated makes no child: a worker's
 * (dt_init), where a crash is said by its crash report instead. */
void dt_isolation_disable(void);

/* In the child: the plugin op about to be called (a fn that makes
 * several calls names each), for the parent's description of a crash. */
void dt_isolated_op(const char *op);

/* The end of an isolated call of plugin op `op` (or the one the child
 * named last) that did not return, in
 * words for the user: "crashed in available() (signal 11: Segmentation
 * fault): rebuild or remove PATH". */
void dt_isolated_describe(const dt_isolated_t *res, const char *op,
                          const char *path, int timeout_s, char *why,
                          size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* DT_PLUGIN_ISOLATE_H */
