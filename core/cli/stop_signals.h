/* stop_signals.h — SIGINT, SIGTERM, SIGHUP and SIGUSR1 to dtctl become
 * requests to stop the job (a self-pipe: the handler only writes one
 * byte; SIGUSR1, like SIGTERM, reaches the workers as SIGTERM: a
 * preemption notice for dt's trainer), and SIGPIPE is ignored so a closed
 * output pipe cannot kill the supervisor. */
#ifndef DT_CLI_STOP_SIGNALS_H
#define DT_CLI_STOP_SIGNALS_H

#include <dt/status.h>

dt_status_t stop_signals_install(void);
/* The next signal received and not yet taken, or 0. Never blocks. */
int stop_signals_take(void);
/* Whether a stop signal has come since install (not consumed by take). */
int stop_signals_pending(void);
/* Put the previous handlers back and close the pipe. */
void stop_signals_restore(void);

#endif /* DT_CLI_STOP_SIGNALS_H */
