/* stop_signals.h — SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2
 * to dtctl become requests to stop the job (a self-pipe: the handler only
 * writes one byte; they reach the workers as SIGTERM: a preemption notice
 * for dt's trainer), and SIGPIPE is ignored so a closed output pipe
 * cannot kill the supervisor. SIGTSTP (Ctrl-Z) comes through the pipe too
 * while the workers are being started and the supervisor watches them
 * (stop_signals_tstp_mode): the supervisor stops the workers with dtctl,
 * or says that they keep running; otherwise (no worker runs) dtctl alone
 * stops, as without a handler. */
#ifndef DT_CLI_STOP_SIGNALS_H
#define DT_CLI_STOP_SIGNALS_H

#include <dt/status.h>

dt_status_t stop_signals_install(void);
/* What a SIGTSTP (Ctrl-Z) does. */
typedef enum {
    /* it stops dtctl alone, as without a handler: no worker runs yet
     * (staging, between restarts) or any more */
    STOP_TSTP_ALONE,
    /* it waits for the supervisor, which acts on it as soon as it starts:
     * the workers are being started (stopped alone, dtctl left them
     * running unwatched, and a long stop made the start miss its
     * deadline) */
    STOP_TSTP_KEEP,
    /* it is the caller's to act on (take returns it): stop the workers,
     * then dtctl */
    STOP_TSTP_FORWARD,
} stop_tstp_mode_t;

/* The next signal received and not yet taken, or 0. Never blocks. A
 * SIGTSTP is returned only in STOP_TSTP_FORWARD; one kept
 * (STOP_TSTP_KEEP) is returned once that mode is on; one that came before
 * the mode went to STOP_TSTP_ALONE stops dtctl here. */
int stop_signals_take(void);
/* A SIGCONT came after the last SIGTSTP: that stop is over already. */
int stop_signals_continued_since_tstp(void);
/* Set what a SIGTSTP does from now on (STOP_TSTP_ALONE at install).
 * Main thread only. */
void stop_signals_tstp_mode(stop_tstp_mode_t mode);
/* Whether a stop signal has come since install (not consumed by take). */
int stop_signals_pending(void);
/* Put the previous handlers back and close the pipe. */
void stop_signals_restore(void);

#endif /* DT_CLI_STOP_SIGNALS_H */
