/* stop_signals.h — SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2
 * to dtctl become requests to stop the job (a self-pipe: the handler only
 * writes one byte; they reach the workers as SIGTERM: a preemption notice
 * for dt's trainer), and SIGPIPE is ignored so a closed output pipe
 * cannot kill the supervisor. SIGTSTP (Ctrl-Z) comes through the pipe too
 * while the supervisor watches the job (stop_signals_forward_suspend): it
 * stops the workers with dtctl, or says that they keep running; otherwise
 * dtctl alone stops, as without a handler. */
#ifndef DT_CLI_STOP_SIGNALS_H
#define DT_CLI_STOP_SIGNALS_H

#include <dt/status.h>

dt_status_t stop_signals_install(void);
/* The next signal received and not yet taken, or 0. Never blocks. A
 * SIGTSTP is returned only while forwarding is on; one that came before
 * forwarding went off stops dtctl here. */
int stop_signals_take(void);
/* A SIGCONT came after the last SIGTSTP: that stop is over already. */
int stop_signals_continued_since_tstp(void);
/* on: SIGTSTP is the caller's to act on (stop the workers, then dtctl);
 * off: it stops dtctl alone. */
void stop_signals_forward_suspend(int on);
/* Whether a stop signal has come since install (not consumed by take). */
int stop_signals_pending(void);
/* Put the previous handlers back and close the pipe. */
void stop_signals_restore(void);

#endif /* DT_CLI_STOP_SIGNALS_H */
