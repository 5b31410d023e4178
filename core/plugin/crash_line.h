/* crash_line.h — the words of the line a worker writes when it crashes in
 * a plugin op (plugin_crash.c), which dtctl reads back from the rank's
 * output to name the plugin in its closing line (cli/crash_site.c). One
 * definition, so that writer and reader cannot drift apart:
 *
 *   dt: [1 host] error: crashed in optimizer plugin 'x', in its op step()
 *   (signal 11: Segmentation fault): the fault is the plugin's, ...
 *
 * (one line; "[1 host] " is the rank's log tag, absent without one). */
#ifndef DT_PLUGIN_CRASH_LINE_H
#define DT_PLUGIN_CRASH_LINE_H

#define DT_CRASH_LINE_START "dt: "
#define DT_CRASH_LINE_CRASHED "error: crashed in "
#define DT_CRASH_LINE_PLUGIN " plugin '"
#define DT_CRASH_LINE_OP "', in its op "
#define DT_CRASH_LINE_SIGNAL "() (signal "

#endif /* DT_PLUGIN_CRASH_LINE_H */
