/* plugin_crash.h — which plugin op a thread is in, so that a worker that
 * crashes there (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) says so: "dt:
 * [1 host] error: crashed in optimizer plugin 'x', in its op step()
 * (signal 11: ...)". dtctl reads that line back from the rank's stderr and
 * names the plugin and op in its closing line too (cli/crash_site.c; the
 * line's words: crash_line.h), not only "killed by signal 11".
 * Only calls into plugins are marked: two thread-local stores around the
 * call, no syscall, cheap enough for every message a transport sends
 * (coll/transport_call.h) and every optimizer step (train/opt_call.h). */
#ifndef DT_PLUGIN_CRASH_H
#define DT_PLUGIN_CRASH_H

#include <dt/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dt_plugin_call {
    const dt_plugin_t *plugin;
    const char *op; /* a string literal: "create", "step", "init" */
} dt_plugin_call_t;

/* This thread's plugin call in flight (plugin NULL: none). Hidden:
 * libdt's own (never exported), so its accesses on the per-message paths
 * stay within the library. */
extern __thread dt_plugin_call_t dt_plugin_call_now
    __attribute__((visibility("hidden")));

/* Mark the call of p's op (a literal) about to be made; returns the mark
 * it replaces, for dt_plugin_call_end (a plugin calling dt that calls a
 * plugin nests). */
static inline dt_plugin_call_t dt_plugin_call_begin(const dt_plugin_t *p,
                                                    const char *op)
{
    dt_plugin_call_t was = dt_plugin_call_now;
    dt_plugin_call_now.plugin = p;
    dt_plugin_call_now.op = op;
    return was;
}

static inline void dt_plugin_call_end(dt_plugin_call_t was)
{
    dt_plugin_call_now = was;
}

/* Install the fault handlers that name the plugin op in flight (then die
 * of the same signal, as before), for each fault signal whose handling is
 * still the default: a program using libdt that handles them itself keeps
 * its own. The message goes to stderr, prefixed by who ("rank 3"). Once
 * per process; later calls do nothing. */
void dt_plugin_crash_report_install(const char *who);

#ifdef __cplusplus
}
#endif
#endif /* DT_PLUGIN_CRASH_H */
