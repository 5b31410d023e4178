/* plugin_crash.c — the fault handler that names the plugin op in flight
 * (plugin_crash.h). It runs after memory may be corrupt: only
 * async-signal-safe work (copies into a stack buffer, one write(2)), then
 * the default action, so the process still dies of its signal. */
#define _GNU_SOURCE
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash_line.h"
#include "plugin_crash.h"
#include "plugin_loader.h"

__thread dt_plugin_call_t dt_plugin_call_now
    __attribute__((visibility("hidden")));

static const struct {
    int signo;
    const char *name; /* strsignal's words, which is not signal-safe */
} faults[] = {
    {SIGSEGV, "Segmentation fault"}, {SIGBUS, "Bus error"},
    {SIGFPE, "Floating point exception"}, {SIGILL, "Illegal instruction"},
    {SIGABRT, "Aborted"},
};
#define NFAULTS (sizeof faults / sizeof *faults)

static char who_tag[96];
/* The kind names, copied at install: dt_kind_name is not ours to trust
 * inside a handler. */
static char kind_names[DT_KIND_COUNT][16];

/* Append s to buf (at *at, room len), cut to fit. */
static void put(char *buf, size_t len, size_t *at, const char *s)
{
    while (s && *s && *at + 1 < len)
        buf[(*at)++] = *s++;
}

static void put_int(char *buf, size_t len, size_t *at, int v)
{
    char d[16];
    int n = 0;
    unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    do
        d[n++] = (char)('0' + u % 10);
    while ((u /= 10) && n < (int)sizeof d);
    if (v < 0)
        put(buf, len, at, "-");
    while (n > 0 && *at + 1 < len)
        buf[(*at)++] = d[--n];
}

static void on_fault(int signo)
{
    dt_plugin_call_t c = dt_plugin_call_now;
    if (c.plugin) {
        char msg[1024];
        size_t at = 0;
        const char *signame = "?";
        for (size_t i = 0; i < NFAULTS; i++)
            if (faults[i].signo == signo)
                signame = faults[i].name;
        unsigned kind = (unsigned)c.plugin->kind;
        const char *path = dt_plugin_path_of(c.plugin);
        put(msg, sizeof msg, &at, DT_CRASH_LINE_START);
        put(msg, sizeof msg, &at, who_tag);
        put(msg, sizeof msg, &at, DT_CRASH_LINE_CRASHED);
        put(msg, sizeof msg, &at, kind < DT_KIND_COUNT ? kind_names[kind] : "");
        put(msg, sizeof msg, &at, DT_CRASH_LINE_PLUGIN);
        put(msg, sizeof msg, &at, c.plugin->name);
        put(msg, sizeof msg, &at, DT_CRASH_LINE_OP);
        put(msg, sizeof msg, &at, c.op);
        put(msg, sizeof msg, &at, DT_CRASH_LINE_SIGNAL);
        put_int(msg, sizeof msg, &at, signo);
        put(msg, sizeof msg, &at, ": ");
        put(msg, sizeof msg, &at, signame);
        put(msg, sizeof msg, &at, "): the fault is the plugin's, not dt's; "
                                  "rebuild or remove ");
        put(msg, sizeof msg, &at, path ? path : "the plugin");
        put(msg, sizeof msg, &at, "\n");
        msg[at] = '\0';
        ssize_t w = write(STDERR_FILENO, msg, at);
        (void)w;
    }
    /* SA_RESETHAND made the action the default again: a fault the
     * hardware raised comes again on return; one sent (kill, abort) is
     * raised here. Either way the process ends by signo. */
    raise(signo);
}

void dt_plugin_crash_report_install(const char *who)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    if (who && *who)
        snprintf(who_tag, sizeof who_tag, "%s ", who);
    for (int k = 0; k < DT_KIND_COUNT; k++)
        snprintf(kind_names[k], sizeof kind_names[k], "%s",
                 dt_kind_name((dt_kind_t)k));
    /* A stack of its own: a plugin that overflows its stack still gets
     * its line (on the installing thread), unless the program has one. */
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt}, had;
    if (sigaltstack(NULL, &had) == 0 && (had.ss_flags & SS_DISABLE))
        sigaltstack(&ss, NULL);
    for (size_t i = 0; i < NFAULTS; i++) {
        struct sigaction old, sa;
        if (sigaction(faults[i].signo, NULL, &old) != 0 ||
            (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue; /* the program's own handling (a sanitizer's): kept */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fault;
        sa.sa_flags = SA_RESETHAND | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(faults[i].signo, &sa, NULL);
    }
}
